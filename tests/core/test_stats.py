"""The interval and test functions equal scipy.stats' own (they use the standard library or scipy.special to keep
command start-up fast)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from swapjudge.core.stats import binomial_p, mean_interval, normal_quantile, wilson
from swapjudge.probes.logit import fit_logit

CASES = [(k, n) for n in (*range(1, 60), 99, 100, 443, 2400, 20000) for k in range(0, n + 1, max(1, n // 60))]


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_equals_scipy_binomtest(confidence: float) -> None:
    for k, n in CASES:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
        got = wilson(k, n, confidence)
        assert (got.low, got.high) == pytest.approx((ci.low, ci.high), rel=1e-13, abs=1e-15), (k, n)
    assert wilson(0, 0).rate is None


def test_exact_binomial_p_equals_scipy_binomtest() -> None:
    for k, n in CASES:
        assert binomial_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300), (k, n)
    # the MT-Bench gpt-4 flip split (198 toward slot 1, 245 toward slot 2) and the always-slot-1 judge
    assert binomial_p(198, 443) == pytest.approx(0.0287, abs=5e-5)
    assert binomial_p(0, 10) == pytest.approx(2 / 1024) and binomial_p(5, 10) == 1.0 and binomial_p(0, 0) is None


def test_exact_binomial_p_equals_scipy_binomtest_beyond_the_exact_term_limit() -> None:
    # above 20,000 trials the largest term comes from log-gamma; the tail still matches scipy's exact test
    for n in (20_001, 54_321, 1_000_000):
        sd = n ** 0.5 / 2
        for k in (n // 2 - int(6 * sd), n // 2 - int(3 * sd), n // 2 - int(sd), n // 2 - 1, n // 2 + int(2 * sd)):
            assert binomial_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300), (k, n)
    assert binomial_p(0, 10_000) == 0.0 == stats.binomtest(0, 10_000, 0.5).pvalue  # below the smallest float


def test_normal_quantile_equals_scipy_norm_ppf() -> None:
    for confidence in (*np.linspace(0.001, 0.999, 999), 0.9999, 0.999999):
        expected = stats.norm.ppf(0.5 + confidence / 2)
        assert normal_quantile(float(confidence)) == pytest.approx(expected, rel=1e-14), confidence


def test_effective_n_interval_and_normal_quantile_equal_scipy() -> None:
    rng = np.random.default_rng(3)
    for n in (8, 30, 300):
        scores = rng.choice([0.0, 0.5, 1.0], size=n)
        scores[0] = 0.5
        m = mean_interval(scores, 0.9)
        # Wilson on the effective n from scipy's own binomtest, scaled to n_eff trials (integer n_eff: exact)
        k = round(m.value * m.effective_n, 9)
        if float(k).is_integer() and float(m.effective_n).is_integer():
            ci = stats.binomtest(int(k), int(m.effective_n)).proportion_ci(0.9, method="wilson")
            assert (m.low, m.high) == pytest.approx((ci.low, ci.high), rel=1e-9)
        assert m.low < m.value < m.high and m.n == n
    assert normal_quantile(0.95) == pytest.approx(stats.norm.ppf(0.975), rel=1e-15)


def test_logit_p_value_equals_the_normal_tail() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=200)
    y = (rng.random(200) < 1 / (1 + np.exp(-0.8 * x))).astype(float)
    fit = fit_logit(np.column_stack([np.ones_like(x), x]), y)
    assert fit is not None
    z = fit.coef[1] / fit.se[1]
    assert fit.p_value(1) == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
