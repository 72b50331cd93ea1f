"""The shared contract check, run through the installed CLI (also run by `make test` directly)."""

import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_shared_contract_holds():
    contract = ROOT.parent / "shared" / "checks" / "contract.py"
    assert contract.exists(), f"contract check missing: {contract}"
    cli = Path(sys.executable).parent / "swapjudge"
    out = subprocess.run([sys.executable, str(contract), str(cli)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "contract holds" in out.stdout
