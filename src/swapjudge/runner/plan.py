"""The plan of a run: which calls, in which order, with which prompt. Pure: configuration and pairs in,
planned calls out; no store, no judge, no clock."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from swapjudge.config import LoadedConfig
from swapjudge.errors import InputError
from swapjudge.judges.base import (
    JudgeRequest,
)
from swapjudge.judges.prompts import boundary_code, render_request
from swapjudge.reading.pairs_file import PairsFile

CHARS_PER_TOKEN = 4.0  # rough estimate for planning; real counts come from the API's usage

@dataclass(frozen=True)
class PlannedCall:
    item: str
    first: str
    second: str
    order_index: int  # 0: the coin's order; 1: the swap
    label: str | None
    request: JudgeRequest
    identical: bool
    round: int = 0

    @property
    def key(self) -> tuple[int, str, str, str]:
        return (self.round, self.item, self.first, self.second)


# Awaited after each call the runner makes (see run_async).

@dataclass(frozen=True)
class CallPlan:
    calls: tuple[PlannedCall, ...]
    seed: str
    pairs: int
    systems: tuple[str, ...]
    skipped_missing: int  # (item, pair) combinations skipped because an answer is missing
    structured: bool
    # Content hash of the judged pairs (task and both answers of each), independent of file layout and order.
    pair_set_hash: str = ""


def coin_seed(pairs_digest: str, user_seed: str) -> str:
    """The run's coin seed, derived from the inputs (pairs file bytes and the configured seed)."""
    return hashlib.sha256(f"{pairs_digest}|{user_seed}".encode()).hexdigest()[:16]


def coin_first(seed: str, item: str, x: str, y: str) -> str:
    """Which of x < y sits in slot 1 in the pair's first call: a seeded coin per (item, pair)."""
    lo, hi = sorted((x, y))
    bit = hashlib.sha256(f"{seed}|{item}|{lo}|{hi}".encode()).digest()[0] & 1
    return lo if bit == 0 else hi


def release_pairs(releases: Sequence[str], baseline: str) -> list[tuple[str, str]]:
    """(older, newer) for each release against the previous one, then against the pinned baseline (a pair
    already in the first chain is judged once)."""
    out = list(itertools.pairwise(releases))
    seen = {frozenset(p) for p in out}
    for r in releases:
        if r != baseline and frozenset((baseline, r)) not in seen:
            out.append((baseline, r))
            seen.add(frozenset((baseline, r)))
    return out


def system_pairs(loaded: LoadedConfig, pairs: PairsFile) -> list[tuple[str, str]]:
    cfg = loaded.config.pairs
    available = pairs.systems
    if cfg.plan == "two":
        assert cfg.a is not None and cfg.b is not None
        return [(cfg.a, cfg.b)]
    if cfg.plan == "releases":
        assert cfg.releases is not None and cfg.baseline is not None
        named = [*cfg.releases, *([] if cfg.baseline in cfg.releases else [cfg.baseline])]
        unknown = [s for s in named if s not in available]
        if unknown:
            raise InputError(f"release(s) not in any answer: {', '.join(unknown)}", path=str(pairs.path),
                             field="answers")
        return release_pairs(cfg.releases, cfg.baseline)
    systems = cfg.systems or available
    unknown = [s for s in systems if s not in available]
    if unknown:
        raise InputError(
            f"configured system(s) not in any answer: {', '.join(unknown)}",
            path=str(pairs.path),
            field="answers",
        )
    if cfg.plan == "baseline":
        assert cfg.baseline is not None
        if cfg.baseline not in available:
            raise InputError(f"baseline {cfg.baseline!r} is not in any answer", path=str(pairs.path), field="answers")
        return [(cfg.baseline, s) for s in systems if s != cfg.baseline]
    return list(itertools.combinations(sorted(systems), 2))


def build_plan(loaded: LoadedConfig, pairs: PairsFile, *, structured: bool) -> CallPlan:
    cfg = loaded.config
    seed = coin_seed(pairs.digest, cfg.seed)
    combos = system_pairs(loaded, pairs)
    calls: list[PlannedCall] = []
    skipped = 0
    n_pairs = 0
    pair_keys: list[tuple[str, ...]] = []
    for it in pairs.items:
        for x, y in combos:
            if x not in it.answers or y not in it.answers:
                if cfg.pairs.plan == "two":
                    missing = x if x not in it.answers else y
                    raise InputError(
                        f"has no answer from system {missing!r}",
                        path=str(pairs.path),
                        line=it.line,
                        field=f"answers.{missing}",
                    )
                skipped += 1
                continue
            n_pairs += 1
            lo, hi = sorted((x, y))
            pair_keys.append((it.item, lo, hi, _sha(it.prompt), _sha(it.answers[lo]), _sha(it.answers[hi])))
            first = coin_first(seed, it.item, x, y)
            second = y if first == x else x
            orders = [(first, second), (second, first)] if cfg.orders == "both" else [(first, second)]
            identical = it.answers[x] == it.answers[y]
            # the code word depends on the set of answers, not their order: derive it once for both orders
            code = boundary_code(it.prompt, it.answers[x], it.answers[y])
            for idx, (s1, s2) in enumerate(orders):
                request = render_request(
                    task=it.prompt,
                    first=it.answers[s1],
                    second=it.answers[s2],
                    rubric=loaded.rubric_text,
                    allow_tie=cfg.allow_tie,
                    chain_of_thought=cfg.chain_of_thought,
                    structured=structured,
                    metadata={"item": it.item, "first": s1, "second": s2, "round": 0},
                    code=code,
                    graded=cfg.judge.verdict_scale == "graded",
                )
                calls.append(
                    PlannedCall(
                        item=it.item,
                        first=s1,
                        second=s2,
                        order_index=idx,
                        label=it.label,
                        request=request,
                        identical=identical and not cfg.judge_identical,
                    )
                )
    return CallPlan(
        calls=tuple(calls),
        seed=seed,
        pairs=n_pairs,
        systems=tuple(sorted({s for c in combos for s in c})),
        skipped_missing=skipped,
        structured=structured,
        pair_set_hash=_sha("\n".join("\t".join(k) for k in sorted(pair_keys))),
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()

def estimated_tokens(request: JudgeRequest, output: int) -> float:
    """Tokens a call spends, for the rate limiter: the prompt by characters plus `output` reply tokens."""
    return (len(request.system) + len(request.user)) / CHARS_PER_TOKEN + output


def expected_output_tokens(request: JudgeRequest) -> int:
    """Reply tokens a call is planned at: a reasoning, a JSON verdict, or a bare word."""
    if request.chain_of_thought:
        return 250
    return 30 if request.structured else 4
