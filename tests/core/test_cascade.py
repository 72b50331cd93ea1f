"""The cascade's fixed-sequence calibration (core.cascade) against an independent implementation on scipy's exact
binomial test, and simulations with known truth: the guarantee's coverage, and what the swap buys."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from swapjudge.core.cascade import (
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    UNSETTLED,
    agreement_flags,
    calibrate_cascade,
    clopper_pearson_upper,
    fixed_sequence,
    min_settled,
    route,
)
from swapjudge.core.confidence import VERDICT_TIE, VERDICT_X, VERDICT_Y, confidence_of_verdicts
from swapjudge.reading.codes import FIRST, SECOND


def _upper(k: int, n: int, delta: float) -> float:
    return binomtest(k, n, alternative="less").proportion_ci(confidence_level=1 - delta, method="exact").high


def _reference_threshold(confidence, agree, alpha, delta):
    """Fixed-sequence testing written out: candidates strictest first; those too small to pass with no
    disagreement at all are no part of the sequence; stop at the first bound above alpha."""
    need = next(n for n in range(1, 10_000) if _upper(0, n, delta) <= alpha)
    chosen = None
    for lam in sorted(set(confidence[~np.isnan(confidence)].tolist()), reverse=True):
        settled = ~np.isnan(confidence) & (confidence >= lam)
        n = int(settled.sum())
        if n < need:
            continue
        if _upper(int((~agree[settled]).sum()), n, delta) > alpha:
            break
        chosen = lam
    return chosen


def test_clopper_pearson_matches_scipy():
    for k, n in [(0, 5), (3, 40), (10, 10), (17, 230)]:
        assert clopper_pearson_upper(k, n, 0.1) == pytest.approx(_upper(k, n, 0.1), abs=1e-9)
    assert min_settled(0.1, 0.1) == 22  # 1 - 0.1 ** (1 / 22) < 0.1 < 1 - 0.1 ** (1 / 21)


@pytest.mark.parametrize("seed", range(12))
def test_thresholds_match_independent_fixed_sequence(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 400))
    confidence = np.round(rng.uniform(0.5, 1.0, n), int(rng.integers(1, 4)))  # rounding makes ties
    confidence[rng.random(n) < 0.1] = np.nan  # flips: never settled
    agree = rng.random(n) < confidence - rng.uniform(0.0, 0.15)
    alpha, delta = float(rng.choice([0.1, 0.15, 0.2, 0.3])), float(rng.choice([0.05, 0.1, 0.2]))
    got = fixed_sequence(confidence, agree, alpha=alpha, delta=delta)
    assert got.threshold == _reference_threshold(confidence, agree, alpha, delta)
    if got.threshold is not None:
        settled = ~np.isnan(confidence) & (confidence >= got.threshold)
        assert got.settled == settled.sum() and got.disagreements == (~agree[settled]).sum()
        assert got.bound == pytest.approx(_upper(got.disagreements, got.settled, delta)) and got.bound <= alpha


def test_agreement_and_routing():
    verdict = np.array([VERDICT_X, VERDICT_Y, VERDICT_TIE, VERDICT_X, -1])
    label = np.array([LABEL_X, LABEL_X, LABEL_TIE, LABEL_TIE, LABEL_X])
    assert agreement_flags(verdict, label).tolist() == [True, False, True, False, False]
    cheap = np.array([0.9, 0.6, np.nan, 0.8])
    strong = np.array([0.5, 0.95, 0.99, np.nan])
    assert route([cheap, strong], [0.8, 0.9]).tolist() == [0, 1, 1, 0]
    assert route([cheap, strong], [None, 0.9]).tolist() == [UNSETTLED, 1, 1, UNSETTLED]


def test_a_judge_that_settles_nothing_passes_everything_on():
    rng = np.random.default_rng(3)
    n = 300
    label = np.full(n, LABEL_X)
    cheap = rng.uniform(0.5, 1, n)
    cheap_verdict = np.where(rng.random(n) < 0.5, VERDICT_X, VERDICT_Y)  # a coin: no threshold passes
    strong = rng.uniform(0.5, 1, n)
    strong_verdict = np.where(rng.random(n) < 0.97, VERDICT_X, VERDICT_Y)
    cals = calibrate_cascade([cheap, strong], [cheap_verdict, strong_verdict], label, judges=["c", "s"],
                             alpha=0.1, delta=0.1)
    assert cals[0].threshold is None and cals[0].settled == 0
    assert cals[1].reached == n  # every calibration pair reached the strong judge
    assert cals[1].threshold == fixed_sequence(strong, strong_verdict == VERDICT_X, alpha=0.1, delta=0.1).threshold


def _population(rng, n, *, blind=(0.0, 0.0)):
    """Pairs with a known better answer (x when quality > 0) and two judges, cheap and noisy then strong, that
    see the quality with noise, each call's P(slot 1) a logistic of what it sees. On a share `blind` of the pairs
    a judge reads the slot, not the answers: both calls name slot 1 with a confident probability (position
    bias that one order cannot see). Returns each judge's positional verdicts and probabilities in both orders,
    and the labels."""
    quality = rng.normal(0, 1.0, n)
    label = np.where(quality > 0, LABEL_X, LABEL_Y)
    judges = []
    for (noise, scale), share in zip(((1.0, 2.0), (0.35, 3.0)), blind, strict=True):
        seen = quality + rng.normal(0, noise, n)
        p_xf = 1 / (1 + np.exp(-(scale * seen + rng.normal(0, 0.3, n))))  # x in slot 1
        p_yf = 1 / (1 + np.exp(-(-scale * seen + rng.normal(0, 0.3, n))))  # y in slot 1
        slot_read = rng.random(n) < share
        p_xf = np.where(slot_read, rng.uniform(0.8, 0.99, n), p_xf)
        p_yf = np.where(slot_read, rng.uniform(0.8, 0.99, n), p_yf)
        vx = np.where(p_xf >= 0.5, FIRST, SECOND)
        vy = np.where(p_yf >= 0.5, FIRST, SECOND)
        judges.append((vx, vy, p_xf, p_yf))
    return judges, label


def _confidences(judges, *, swap=True):
    out = []
    for vx, vy, p_xf, p_yf in judges:
        if swap:
            c = confidence_of_verdicts(vx, vy, p_first_xf=p_xf, p_second_xf=1 - p_xf, p_first_yf=p_yf,
                                       p_second_yf=1 - p_yf)
        else:  # one order only, the x-first call: probability-only confidence
            c = confidence_of_verdicts(vx, vy, calls_yf=np.zeros(vx.size), p_first_xf=p_xf, p_second_xf=1 - p_xf)
        out.append(c)
    return out


def _coverage_study(alpha, *, splits, delta=0.1, n_cal=600, n_test=3000, seed=0, blind=(0.0, 0.0), swap=True):
    rng = np.random.default_rng(seed)
    held, coverage, agreement = 0, [], []
    for _ in range(splits):
        judges, label = _population(rng, n_cal + n_test, blind=blind)
        confs = _confidences(judges, swap=swap)
        cal, test = slice(0, n_cal), slice(n_cal, None)
        cals = calibrate_cascade([c.confidence[cal] for c in confs], [c.verdict[cal] for c in confs], label[cal],
                                 judges=["cheap", "strong"], alpha=alpha, delta=delta)
        tier = route([c.confidence[test] for c in confs], [c.threshold for c in cals])
        settled = tier != UNSETTLED
        verdict = np.full(tier.size, -1)
        for index, c in enumerate(confs):
            verdict[tier == index] = c.verdict[test][tier == index]
        agree = agreement_flags(verdict, label[test])[settled]
        realized = agree.mean() if settled.any() else 1.0
        held += realized >= 1 - alpha
        coverage.append(settled.mean())
        agreement.append(realized)
    return held / splits, float(np.mean(coverage)), float(np.mean(agreement))


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.10, 0.15, 0.20])
def test_guarantee_holds_over_1000_splits(alpha):
    share, coverage, agreement = _coverage_study(alpha, splits=1000, seed=int(alpha * 100))
    mc = 3 * np.sqrt(0.1 * 0.9 / 1000)  # three Monte Carlo standard errors at the nominal 0.9
    print(f"alpha={alpha}: agreement >= 1 - alpha in {share:.3f} of 1000 splits; "
          f"mean coverage {coverage:.3f}, mean realized agreement {agreement:.3f}")
    assert share >= 0.9 - mc
    assert coverage > 0.3  # the cascade settles a real share, so the guarantee is not vacuous


def test_guarantee_holds_quick():
    share, coverage, _ = _coverage_study(0.15, splits=60, seed=5)
    assert share >= 0.8 and coverage > 0.3


def test_the_swap_earns_its_cost():
    """Judges that read the slot on some pairs (a quarter for the cheap one, a tenth for the strong one): with
    flips unsettled (both orders) the same alpha settles more pairs than with one order's probability alone."""
    blind = (0.25, 0.10)
    with_swap = _coverage_study(0.10, splits=40, seed=11, blind=blind, swap=True)
    one_order = _coverage_study(0.10, splits=40, seed=11, blind=blind, swap=False)
    print(f"alpha=0.10, slot read on 25% / 10% of pairs: coverage {with_swap[1]:.3f} with the swap (flips "
          f"unsettled) vs {one_order[1]:.3f} from one order's probability; realized agreement {with_swap[2]:.3f} "
          f"vs {one_order[2]:.3f}; guarantee held in {with_swap[0]:.2f} vs {one_order[0]:.2f} of 40 splits")
    assert with_swap[1] > one_order[1] + 0.1
    assert with_swap[0] >= 0.8 and one_order[0] >= 0.8


def test_coverage_risk_curve_by_brute_force():
    rng = np.random.default_rng(21)
    for n, digits in ((80, 2), (2000, 6)):
        confidence = np.round(rng.uniform(0.5, 1.0, n), digits)
        confidence[rng.random(n) < 0.1] = np.nan
        agree = rng.random(n) < confidence
        cal = fixed_sequence(confidence, agree, alpha=0.15, delta=0.1)
        distinct = sorted(set(confidence[~np.isnan(confidence)].tolist()), reverse=True)
        assert len(cal.curve) == min(len(distinct), 101)
        assert cal.curve[0][0] == distinct[0] and cal.curve[-1][0] == distinct[-1]
        for lam, settled, wrong in cal.curve:
            mask = ~np.isnan(confidence) & (confidence >= lam)
            assert settled == mask.sum() and wrong == (~agree[mask]).sum()
        point = cal.to_dict()["curve"][-1]
        assert point["coverage"] == pytest.approx((~np.isnan(confidence)).sum() / n)


def test_clustered_bound_matches_a_pass_per_candidate():
    """Pairs sharing items: the running design effect equals core.stats.cluster_design on each prefix, and the
    threshold equals the one a loop over candidates (cluster_design, then the Beta quantile) picks."""
    from swapjudge.core.cascade import prefix_design_effects
    from swapjudge.core.stats import cluster_design

    rng = np.random.default_rng(8)
    for _ in range(20):
        n = int(rng.integers(2, 300))
        flags = (rng.random(n) < rng.uniform(0, 0.5)).astype(int)
        items = rng.integers(0, int(rng.integers(1, n + 1)), n).astype(str)
        ends = np.unique(rng.integers(1, n + 1, 10))
        want = [cluster_design(flags[:e].astype(float), items[:e]).design_effect for e in ends]
        assert prefix_design_effects(flags, items, ends) == pytest.approx(want, rel=1e-12)
    n = 600
    confidence = np.round(rng.uniform(0.5, 1.0, n), 2)
    items = rng.integers(0, 60, n)
    agree = rng.random(n) < confidence - 0.1 * (items % 3 == 0)  # some items harder: correlated errors
    got = fixed_sequence(confidence, agree, alpha=0.2, delta=0.1, clusters=items)
    chosen = None
    for lam in sorted(set(confidence.tolist()), reverse=True):
        settled = confidence >= lam
        m = int(settled.sum())
        if m < min_settled(0.2, 0.1):
            continue
        wrong = ~agree[settled]
        d = cluster_design(wrong.astype(float), items[settled]).design_effect
        if clopper_pearson_upper(wrong.sum() / d, m / d, 0.1) > 0.2:
            break
        chosen = lam
    assert got.threshold == chosen and got.independent == "items (effective sample)"
