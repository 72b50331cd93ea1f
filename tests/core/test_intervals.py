"""Intervals that hold: the half-credit interval's exact coverage, monotonicity and width; intervals over pairs
that share an item, checked against statsmodels' cluster-robust errors and by simulation with known truth."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import special, stats

from conftest import ROOT
from swapjudge.core.policy import win_rate_of_counts, win_rate_over_pairs
from swapjudge.core.stats import cluster_design, clustered_binomial_p, mean_interval, proportion_interval, wilson
from swapjudge.core.swap import consistency
from swapjudge.probes.length import length_probe, length_slope
from swapjudge.probes.logit import fit_logit
from swapjudge.reading.pairs import Outcome

sys.path.insert(0, str(ROOT / "bench"))
from interval_coverage import coverage_table


def test_half_credit_exact_coverage_on_the_grid():
    cells = coverage_table()
    cov = np.array([c.coverage for c in cells])
    assert len(cells) == 249  # every feasible (n, rate, split share) of n = 10, 30, 100
    assert cov.min() >= 0.92
    assert 0.94 <= cov.mean() <= 0.96
    # at n = 10 and a true rate of 0.05 with no splits plain Wilson covers 0.914: the small-count repair lifts it
    assert next(c.coverage for c in cells if (c.n, c.rate, c.split_share) == (10, 0.05, 0.0)) >= 0.92


def test_half_credit_is_monotone_in_wins_and_never_zero_width():
    for n in (1, 2, 5, 10, 25):
        bounds = {}
        for w in range(n + 1):
            for s in range(n + 1 - w):
                r = win_rate_of_counts("a", "b", w, n - w - s, s).half_credit
                assert r.high - r.low > 0, (w, s, n)
                bounds[w, s] = (r.low, r.high)
        for (w, s), (low, high) in bounds.items():
            better = [(w + 1, s - 1)] if s else []  # a split becomes a win
            better += [(w, s + 1)] if w + s < n else []  # a loss becomes a split
            for key in better:
                assert bounds[key][0] >= low - 1e-12 and bounds[key][1] >= high - 1e-12, ((w, s), key, n)
    # the cases: 20 tie/tie pairs, and 8 wins + 2 splits against 10 wins of 10
    ties = win_rate_of_counts("a", "b", 0, 0, 20).half_credit
    assert ties.low < 0.47 and ties.high > 0.53
    assert (win_rate_of_counts("a", "b", 8, 0, 2).half_credit.low
            < win_rate_of_counts("a", "b", 10, 0, 0).half_credit.low)


def test_half_credit_without_splits_is_wilson_away_from_small_counts():
    for k, n in ((40, 100), (7, 20), (15, 30)):
        r = win_rate_of_counts("a", "b", k, n - k, 0).half_credit
        w = wilson(k, n)
        assert (r.low, r.high) == pytest.approx((w.low, w.high), rel=1e-12)


def _statsmodels_cluster_and_hc1(y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    x = np.ones((y.size, 1))
    clustered = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0] ** 2
    return clustered, sm.OLS(y, x).fit(cov_type="HC1").bse[0] ** 2


def test_design_effect_is_statsmodels_cluster_over_hc1_variance():
    rng = np.random.default_rng(2)
    items = np.repeat(np.arange(40), 6)
    y = np.where(rng.random(240) < special.expit(rng.normal(0, 1.5, 40)[items]), 1.0, 0.0)
    y[rng.random(240) < 0.2] = 0.5
    clustered, hc1 = _statsmodels_cluster_and_hc1(y, items)
    design = cluster_design(y, items)
    assert design.clusters == 40 and design.units == "items"
    assert design.design_effect == pytest.approx(clustered / hc1, rel=1e-10)
    assert design.design_effect > 1.5
    # singleton clusters: exactly 1, and the consistency interval is the plain Wilson interval
    assert cluster_design(y, np.arange(240)).design_effect == 1.0
    flags = y == 1.0
    c = consistency(int(flags.sum()), 240, flags=flags, items=np.arange(240))
    w = wilson(int(flags.sum()), 240)
    assert (c.low, c.high) == (w.low, w.high) and c.method == "wilson"
    clustered_c = consistency(int(flags.sum()), 240, flags=flags, items=items)
    assert clustered_c.method == "wilson_clustered" and clustered_c.to_dict()["clusters"] == 40
    assert clustered_c.high - clustered_c.low > w.high - w.low


def _mtbench_consistency(rng: np.random.Generator, items: int = 80, systems: int = 30) -> tuple[np.ndarray, ...]:
    """80 questions x 30 systems against one baseline: each question has its own consistency probability."""
    item = np.repeat(np.arange(items), systems)
    p = special.expit(rng.normal(1.4, 1.2, items))[item]
    return rng.random(item.size) < p, item


def test_consistency_interval_covers_on_mtbench_shaped_data():
    rng = np.random.default_rng(7)
    truth = float(np.mean(special.expit(np.random.default_rng(0).normal(1.4, 1.2, 2_000_000))))
    covered = naive = 0
    sims = 600
    for _ in range(sims):
        flags, item = _mtbench_consistency(rng)
        c = proportion_interval(flags, 0.95, item)
        covered += c.low <= truth <= c.high
        w = wilson(int(flags.sum()), flags.size)
        naive += w.low <= truth <= w.high
    assert 0.93 <= covered / sims <= 0.97
    assert naive / sims < 0.80  # pairs counted as independent: far too narrow


def test_win_rate_intervals_cover_when_rounds_repeat_items():
    """Three rounds of the same 60 items: each item has its own (win, split, loss) probabilities."""
    rng = np.random.default_rng(11)
    alpha = np.array([1.2, 0.6, 0.8])  # Dirichlet: true half credit = (1.2 + 0.3) / 2.6
    truth_half, truth_exclude = (1.2 + 0.3) / 2.6, None
    hits = {"half": 0, "no_credit": 0, "per_call": 0, "naive": 0}
    sims = 600
    for _ in range(sims):
        probs = rng.dirichlet(alpha, size=60)
        item = np.tile(np.arange(60), 3)
        u = rng.random(item.size)
        cum = np.cumsum(probs[item], axis=1)
        code = (u[:, None] > cum[:, :2]).sum(axis=1)  # 0 win, 1 split, 2 loss
        result = np.array([1.0, 0.5, 0.0])[code]
        # per call: each pair's two calls (a consistent win 1 and 1, a split here 1/2 and 1/2), on the same item
        rate = win_rate_over_pairs("a", "b", result, items=item,
                                   per_call=(np.concatenate([result, result]), np.concatenate([item, item])))
        hits["half"] += rate.half_credit.low <= truth_half <= rate.half_credit.high
        hits["no_credit"] += rate.no_credit.low <= 1.2 / 2.6 <= rate.no_credit.high
        hits["per_call"] += rate.per_call.low <= truth_half <= rate.per_call.high
        flat = win_rate_of_counts("a", "b", int((code == 0).sum()), int((code == 2).sum()), int((code == 1).sum()))
        hits["naive"] += flat.half_credit.low <= truth_half <= flat.half_credit.high
    assert truth_exclude is None
    for key in ("half", "no_credit", "per_call"):
        assert 0.93 <= hits[key] / sims <= 0.97, (key, hits[key] / sims)
    assert hits["naive"] / sims < 0.90
    assert rate.half_credit.to_dict()["independent"] == "items" and rate.half_credit.to_dict()["clusters"] == 60


def test_mean_interval_reports_what_it_treated_as_independent():
    m = mean_interval(np.array([1.0, 0.5, 0.5, 0.0, 1.0]))
    d = m.to_dict()
    assert d["method"] == "wilson_effective_n" and d["independent"] == "pairs" and d["clusters"] == 5
    assert d["effective_n"] > 5  # splits vary less than wins and losses
    assert mean_interval(np.array([])).value is None


def test_cluster_robust_logit_matches_statsmodels_glm():
    rng = np.random.default_rng(1)
    items = np.repeat(np.arange(40), 10)
    d = rng.normal(size=40)[items] * 2 + rng.normal(size=items.size)
    y = (rng.random(items.size) < special.expit(0.3 * d + rng.normal(size=40)[items])).astype(float)
    y[rng.random(items.size) < 0.2] = 0.5
    fit = fit_logit(d[:, None], y, items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sm.GLM(y, d[:, None], family=sm.families.Binomial()).fit(cov_type="cluster",
                                                                        cov_kwds={"groups": items})
    assert fit is not None and fit.clusters == 40
    assert fit.coef[0] == pytest.approx(ref.params[0], rel=1e-6)
    assert fit.se[0] == pytest.approx(ref.bse[0], rel=1e-6)


def _mtbench_null_file(rng: np.random.Generator, items: int = 80, systems: int = 30) -> tuple[np.ndarray, ...]:
    """No length effect: the baseline's answer length and strength are shared by the 30 pairs of a question."""
    item = np.repeat(np.arange(items), systems)
    system = np.tile(np.arange(systems), items)
    sign = rng.choice([-1.0, 1.0], size=systems)[system]  # whether the system or the baseline is x
    d = sign * (rng.normal(0, 100, item.size) - rng.normal(0, 150, items)[item])
    p = special.expit(rng.normal(0, 0.5, systems)[system] - rng.normal(0, 1.5, items)[item])
    score = np.where(rng.random(item.size) < 0.25, 0.5, (rng.random(item.size) < p).astype(float))
    return np.where(sign > 0, score, 1 - score), d, item


def test_length_tests_hold_their_level_on_mtbench_shaped_files():
    rng = np.random.default_rng(0)
    files = 400
    slope_rejected = longer_rejected = 0
    naive_slope = naive_longer = 0
    for k in range(files):
        score, d, item = _mtbench_null_file(rng)
        outcome = np.select([score == 1, score == 0], [Outcome.X_WINS, Outcome.Y_WINS], Outcome.TIE).astype(np.int8)
        r = length_probe(outcome, 1000 + d / 2, 1000 - d / 2, items=item)
        slope_rejected += r.slope.p_value < 0.05
        longer_rejected += r.prefer_longer_p_value < 0.05
        if k < 50:  # pairs treated as independent, as before
            naive_slope += length_slope(score, d).p_value < 0.05
            naive_longer += length_probe(outcome, 1000 + d / 2, 1000 - d / 2).prefer_longer_p_value < 0.05
    assert 0.03 <= slope_rejected / files <= 0.08
    assert 0.03 <= longer_rejected / files <= 0.08
    assert naive_slope / 50 > 0.2 and naive_longer / 50 > 0.2  # the old tests reject far too often
    d = r.to_dict()
    assert d["slope"]["independent"] == "items" and d["slope"]["clusters"] == 80
    assert d["prefer_longer"]["independent"] == "items" and d["prefer_longer"]["design_effect"] > 1


def test_clustered_binomial_p_is_the_exact_test_for_independent_pairs_and_a_t_test_otherwise():
    flags = np.array([1.0] * 30 + [0.0] * 20)
    alone = cluster_design(flags, np.arange(50))
    assert clustered_binomial_p(30, 50, alone) == pytest.approx(stats.binomtest(30, 50).pvalue, rel=1e-12)
    shared = cluster_design(flags, np.repeat(np.arange(10), 5))
    t = (0.6 - 0.5) / np.sqrt(0.25 * shared.design_effect / 50)
    assert clustered_binomial_p(30, 50, shared) == pytest.approx(2 * stats.t.sf(abs(t), 9), rel=1e-12)


def test_real_mtbench_consistency_interval_is_over_its_80_questions():
    """gpt-4-0613 on MT-Bench (Shi et al.): 2,400 pairs, 30 systems on each of 80 questions."""
    from conftest import shi2024_records
    from swapjudge.core.analysis import analyze_records
    from swapjudge.reading.records import records_from_dicts

    rows = shi2024_records("MTBench", "gpt-4-0613")
    [result] = analyze_records(records_from_dicts(rows))
    c = result.consistency
    assert c.consistent == 1957 and c.pairs == 2400
    d = c.to_dict()
    assert d["method"] == "wilson_clustered" and d["independent"] == "items" and d["clusters"] == 80
    # the reference: statsmodels' cluster-robust over HC1 variance of the per-pair consistent flag
    by_pair: dict[tuple, list] = {}
    for r in rows:
        by_pair.setdefault((r["item"], *sorted((r["first"], r["second"]))), []).append(r)
    flags, items = [], []
    for (item, _, _), calls in by_pair.items():
        if len(calls) == 2 and all(x["verdict"] for x in calls):
            named = [x["verdict"] if x["verdict"] == "tie" else x[x["verdict"]] for x in calls]
            flags.append(float(named[0] == named[1]))
            items.append(item)
    y = np.array(flags)
    clustered, hc1 = _statsmodels_cluster_and_hc1(y, np.unique(items, return_inverse=True)[1])
    n_eff = y.size * hc1 / clustered  # Wilson's score interval on the effective sample size, written out
    z = stats.norm.ppf(0.975)
    p = y.mean()
    center = (p + z**2 / (2 * n_eff)) / (1 + z**2 / n_eff)
    half = z / (1 + z**2 / n_eff) * np.sqrt(p * (1 - p) / n_eff + z**2 / (4 * n_eff**2))
    assert (c.low, c.high) == pytest.approx((center - half, center + half), rel=1e-9)
    assert d["design_effect"] == pytest.approx(clustered / hc1, rel=1e-9) and d["design_effect"] > 2
    assert any("share 80 items" in note for note in result.notes)
