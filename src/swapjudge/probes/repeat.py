"""Repeat stability: does the judge agree with itself when the same call (same pair, same order) is repeated?

This is separate from swap-consistency. A flip can be sampling noise (the judge would have changed its mind
anyway) or position preference (it changes its mind because the order changed). Repeating each call in the
same order measures the noise alone: if repeats agree far more often than the two orders do, the flips are
driven by the order, not by chance.

Records carry `round`; a call is (item, first, second) and its verdict in each round. Measured per judge over
calls that have a usable verdict in every round:
- unanimous: the share of calls with the same verdict in all rounds;
- pairwise agreement: the share of agreeing round pairs per call, averaged (Fleiss' P-bar);
- Fleiss' kappa over first/second/tie with the rounds as raters (agreement beyond what the verdict shares
  would give by chance);
- per round, swap-consistency; over rounds, the share of pairs whose order-cancelled outcome is the same in
  every round.
The two calls of a pair are not independent, so every interval is over pairs: a percentile bootstrap that
resamples pairs with all their calls (seeded, so the figures are reproducible).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.policy import Rate
from swapjudge.core.stats import Proportion, wilson
from swapjudge.core.swap import Consistency, consistency_of_pairs
from swapjudge.reading.pairs import MISSING, Outcome, build_pairs, verdict_codes

CATEGORIES = 3  # first, second, tie
BOOTSTRAP = 2000


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa from a subjects x categories table of rating counts, every row summing to the same
    number of raters (>= 2); None when undefined (no subjects, or every rating in one category)."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    raters = counts.sum(axis=1)
    m = raters[0]
    if m < 2 or np.any(raters != m):
        raise ValueError("every subject needs the same number (>= 2) of ratings")
    p_bar = float(np.mean((np.sum(counts**2, axis=1) - m) / (m * (m - 1))))
    shares = counts.sum(axis=0) / counts.sum()
    p_e = float(np.sum(shares**2))
    if p_e == 1:
        return None
    return (p_bar - p_e) / (1 - p_e)


@dataclass(frozen=True)
class RoundConsistency:
    round: int
    consistency: Consistency

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, **self.consistency.to_dict()}


@dataclass(frozen=True)
class RepeatStability:
    judge: str | None
    rounds: tuple[int, ...]
    calls: int  # distinct calls (item, first, second)
    calls_complete: int  # with a usable verdict in every round
    pairs_complete: int  # pairs contributing at least one complete call
    unanimous_calls: int
    unanimous: Rate
    pairwise_agreement: Rate
    fleiss_kappa: Rate
    per_round: tuple[RoundConsistency, ...]
    outcome_stable: Proportion  # pairs complete in every round whose outcome is the same in all rounds
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge, "rounds": list(self.rounds), "calls": self.calls,
            "calls_complete": self.calls_complete, "pairs_complete": self.pairs_complete,
            "unanimous": {"calls": self.unanimous_calls, **self.unanimous.to_dict()},
            "pairwise_agreement": self.pairwise_agreement.to_dict(),
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "swap_consistency_per_round": [r.to_dict() for r in self.per_round],
            "outcome_stable": self.outcome_stable.to_dict(),
            "confidence": self.confidence,
        }


def call_matrix(frame: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray, list[int]]:
    """One row per call (item, first, second) of pair calls, one column per round of verdict codes (MISSING
    where absent). Returns the keys (with the pair key x, y), the codes and the rounds."""
    calls = frame.filter(pl.col("first") != pl.col("second")).with_columns(
        verdict_codes(pl.col("verdict")).alias("_code"))
    rounds = sorted(calls.get_column("round").unique().to_list())
    wide = calls.pivot(on="round", index=["item", "first", "second"], values="_code", aggregate_function="first")
    names = [str(r) for r in rounds]
    codes = wide.select([pl.col(n).fill_null(MISSING) for n in names]).to_numpy().astype(np.int64)
    keys = wide.select("item", "first", "second").with_columns(
        pl.min_horizontal("first", "second").alias("x"), pl.max_horizontal("first", "second").alias("y"))
    return keys, codes, rounds


def _percentile(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return None, None
    tail = (1 - confidence) / 2
    return float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))


def _bootstrap(per_pair: dict[str, np.ndarray], m: int, confidence: float,
               seed: int) -> dict[str, tuple[float | None, float | None]]:
    """Percentile intervals of unanimity, pairwise agreement and Fleiss' kappa, resampling pairs (each with
    all its complete calls), so the two orders of a pair are never counted as independent."""
    n = per_pair["calls"].size
    if n < 2:
        return {"unanimous": (None, None), "agreement": (None, None), "kappa": (None, None)}
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=BOOTSTRAP).astype(float)
    calls = weights @ per_pair["calls"]
    p_bar = (weights @ per_pair["sq"] - calls * m) / (calls * m * (m - 1))
    shares = (weights @ per_pair["counts"]) / (calls * m)[:, None]
    p_e = np.sum(shares**2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = (p_bar - p_e) / (1 - p_e)
    return {"unanimous": _percentile(weights @ per_pair["unanimous"] / calls, confidence),
            "agreement": _percentile(p_bar, confidence), "kappa": _percentile(kappas, confidence)}


def repeat_stability(frame: pl.DataFrame, *, judge: str | None = None, confidence: float = 0.95,
                     seed: int = 0) -> RepeatStability | None:
    """Repeat stability of one judge's records (the frame holds that judge only); None with fewer than two
    rounds."""
    keys, codes, rounds = call_matrix(frame)
    if len(rounds) < 2:
        return None
    m = len(rounds)
    complete = np.all(codes != MISSING, axis=1)
    done = codes[complete]
    counts = np.stack([np.sum(done == c, axis=1) for c in range(CATEGORIES)], axis=1)
    unanimous_call = counts.max(axis=1) == m if done.size else np.zeros(0, dtype=bool)
    agreement_call = ((counts**2).sum(axis=1) - m) / (m * (m - 1)) if done.size else np.zeros(0)

    # group the complete calls by pair, so every interval is over pairs
    pair_keys = keys.filter(pl.Series(complete)).select("item", "x", "y")
    pair_index = pair_keys.with_columns(pl.struct("item", "x", "y").rank("dense").alias("_p")).get_column("_p")
    idx = pair_index.to_numpy().astype(np.int64) - 1 if done.size else np.zeros(0, dtype=np.int64)
    n_pairs = int(idx.max()) + 1 if idx.size else 0

    def by_pair(values: np.ndarray) -> np.ndarray:
        return np.bincount(idx, weights=values.astype(float), minlength=n_pairs)

    per_pair = {"calls": by_pair(np.ones(idx.size)), "unanimous": by_pair(unanimous_call),
                "sq": by_pair((counts**2).sum(axis=1)),
                "counts": np.stack([by_pair(counts[:, c]) for c in range(CATEGORIES)], axis=1)}
    boot = _bootstrap(per_pair, m, confidence, seed)
    kappa = fleiss_kappa(counts) if done.size else None
    agree = float(agreement_call.mean()) if done.size else None
    share = float(unanimous_call.mean()) if done.size else None

    pairs = build_pairs(frame)
    per_round = []
    outcome_by_round = {}
    for r in rounds:
        part = pairs.frame.filter(pl.col("round") == r)
        per_round.append(RoundConsistency(r, consistency_of_pairs(part.get_column("outcome").to_numpy(),
                                                                  part.get_column("item").cast(pl.String).to_numpy(),
                                                                  confidence)))
        outcome_by_round[r] = part.select("item", "x", "y", pl.col("outcome").alias(f"o{r}"))
    joined = outcome_by_round[rounds[0]]
    for r in rounds[1:]:
        joined = joined.join(outcome_by_round[r], on=["item", "x", "y"], how="inner")
    outcomes = joined.select([f"o{r}" for r in rounds]).to_numpy()
    usable = np.all(outcomes != Outcome.INCOMPLETE, axis=1) if outcomes.size else np.zeros(0, dtype=bool)
    stable = np.all(outcomes == outcomes[:, :1], axis=1)[usable] if outcomes.size else np.zeros(0, dtype=bool)

    return RepeatStability(
        judge=judge, rounds=tuple(int(r) for r in rounds), calls=int(codes.shape[0]),
        calls_complete=int(complete.sum()), pairs_complete=n_pairs,
        unanimous_calls=int(unanimous_call.sum()),
        unanimous=Rate(share, *boot["unanimous"]),
        pairwise_agreement=Rate(agree, *boot["agreement"]),
        fleiss_kappa=Rate(kappa, *(boot["kappa"] if kappa is not None else (None, None))),
        per_round=tuple(per_round),
        outcome_stable=wilson(int(stable.sum()), int(stable.size), confidence),
        confidence=confidence,
    )
