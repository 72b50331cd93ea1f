"""Every offline command's document on the repository's examples, byte for byte as it was before the move.

The goldens (tests/golden/documents/) were taken at commit 05989d0 with tests/golden/make_golden.py, which also
runs them here on the current code. Only the work directory's path and clock times (see make_golden.VARYING) are
replaced before the comparison; the exit code is compared too.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_golden", ROOT / "tests" / "golden" / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)

# about 40 command starts (a few seconds each on a loaded 2-core machine): minutes in all
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def current(tmp_path_factory) -> dict[str, tuple[int, str, str]]:
    if not (make_golden.SHARED / "shi2024").is_dir():
        pytest.fail(f"real test data missing: {make_golden.SHARED} "
                    "(the project expects ../shared/data beside its root)")
    return make_golden.run_all(ROOT / "src", tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize(("name", "code"), [(name, code) for name, _, code in make_golden.CASES])
def test_document_is_unchanged(current, name: str, code: int) -> None:
    rc, stdout, stderr = current[name]
    assert rc == code, f"{name}: exit {rc}, expected {code}; stderr: {stderr[-600:]}"
    golden = (make_golden.GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        assert same_document(json.loads(stdout), json.loads(golden)), \
            f"{name} differs from its golden document (regenerate only for an intended change)"
    else:
        assert stdout == golden, f"{name} differs from its golden document (regenerate only for an intended change)"


def same_document(got: Any, want: Any, path: str = "$") -> bool:
    """The same keys in the same order, the same strings, and numbers equal to the last bits a library's build may
    move (1e-10, relative or absolute: numpy and scipy releases sum in other orders,
    and a solver's residual near zero moves with them); anything else fails, naming the path."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        return all(same_document(got[k], want[k], f"{path}.{k}") for k in want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        return all(same_document(g, w, f"{path}[{i}]") for i, (g, w) in enumerate(zip(got, want, strict=True)))
    if isinstance(want, float) and isinstance(got, float):
        assert math.isclose(got, want, rel_tol=1e-10, abs_tol=1e-10), f"{path}: {got!r} != {want!r}"
        return True
    assert type(got) is type(want) and got == want, f"{path}: {got!r} != {want!r}"
    return True


def test_same_document_tolerates_the_last_bits_only() -> None:
    assert same_document({"a": [1, 2.4356312865303957, "x"]}, {"a": [1, 2.435631286530395, "x"]})
    with pytest.raises(AssertionError, match=r"\$\.a\[1\]"):
        same_document({"a": [1, 2.4356313, "x"]}, {"a": [1, 2.435631286530395, "x"]})
    with pytest.raises(AssertionError, match="keys"):
        same_document({"b": 1, "a": 1}, {"a": 1, "b": 1})
    with pytest.raises(AssertionError):
        same_document({"a": 1}, {"a": 1.0})
