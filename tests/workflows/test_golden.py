"""Every offline command's document on the repository's examples, byte for byte as it was before the move.

The goldens (tests/golden/documents/) were taken at commit 05989d0 with tests/golden/make_golden.py, which also
runs them here on the current code. Only the work directory's path and clock times (see make_golden.VARYING) are
replaced before the comparison; the exit code is compared too.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
    assert stdout == golden, f"{name} differs from its golden document (regenerate only for an intended change)"
