import json
import subprocess
import sys

import pytest

from swapjudge.core.analysis import calculate
from swapjudge.errors import SwapjudgeError


def test_calculator_matches_worked_example():
    result = calculate(120, 96, to_first=17, to_second=7)
    c, f = result.consistency, result.flip_direction
    assert c.rate == pytest.approx(0.80)
    assert c.low == pytest.approx(0.7196, abs=5e-4)
    assert c.high == pytest.approx(0.8618, abs=5e-4)
    assert c.band == "moderate"
    assert f is not None
    assert f.first_share == pytest.approx(17 / 24)
    assert f.low == pytest.approx(0.5083, abs=5e-4)
    assert f.high == pytest.approx(0.8509, abs=5e-4)
    assert f.p_value == pytest.approx(0.0639, abs=5e-4)


@pytest.mark.parametrize(("rate_pairs", "band"), [((90, 100), "low"), ((89, 100), "moderate"),
                                                  ((75, 100), "moderate"), ((74, 100), "high")])
def test_band_edges(rate_pairs, band):
    k, n = rate_pairs
    assert calculate(n, k).consistency.band == band


def test_decision_help_compares_flip_upper_bound_with_margin():
    # flip rate upper bound ~28%: a 40-point margin cannot be order; a 10-point one could be
    assert calculate(120, 96, margin=0.40).decision.order_could_decide is False
    assert calculate(120, 96, margin=0.10).decision.order_could_decide is True


@pytest.mark.parametrize("kwargs", [dict(pairs=10, consistent=11), dict(pairs=0, consistent=0),
                                    dict(pairs=10, consistent=5, to_first=4, to_second=3),
                                    dict(pairs=10, consistent=5, to_first=2)])
def test_impossible_counts_are_user_errors(kwargs):
    with pytest.raises(SwapjudgeError):
        calculate(**kwargs)


def test_cli_calc_json_and_error_exit(tmp_path):
    cli = [sys.executable, "-m", "swapjudge"]
    out = subprocess.run([*cli, "calc", "--pairs", "120", "--consistent", "96", "--to-first", "17", "--to-second",
                          "7", "--format", "json"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["consistency"]["band"] == "moderate"
    assert data["flip_direction"]["first"] == 17
    bad = subprocess.run([*cli, "calc", "--pairs", "10", "--consistent", "11"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "--consistent must be between 0 and --pairs (10)" in bad.stderr
