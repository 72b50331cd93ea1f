"""The gate on attacks: a decision that names attacks and a ceiling (`attacks`, `max_attack_win`) keeps when the
upper bound of an attack's both-order win rate (the Wilson bound over pairs `swapjudge probe attack` reports)
passes the ceiling, or when a named attack was not measured (it fails closed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttackGate:
    ceiling: float
    passed: bool
    reason: str | None
    attacks: tuple[dict[str, Any], ...]  # name, rate, low, high, pairs, passed (None: not measured)

    def to_dict(self) -> dict[str, Any]:
        return {"max_attack_win": self.ceiling, "passed": self.passed, "reason": self.reason,
                "attacks": [dict(a) for a in self.attacks]}


def attack_gate(names: Sequence[str], ceiling: float, measured: Sequence[Mapping[str, Any]] | None) -> AttackGate:
    """`measured`: the `attacks` list of `swapjudge probe attack --format json` (None: no report given)."""
    by_name = {str(a.get("name")): a for a in (measured or ())}
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    missing: list[str] = []
    for name in names:
        a = by_name.get(name)
        both = (a or {}).get("wins_both") or {}
        high = both.get("high")
        ok = None if high is None else bool(high <= ceiling)
        rows.append({"name": name, "rate": both.get("rate"), "low": both.get("low"), "high": high,
                     "pairs": (a or {}).get("pairs"), "passed": ok})
        if ok is None:
            missing.append(name)
        elif not ok:
            assert a is not None  # a measured upper bound comes from a row
            rate = float(both.get("rate") or 0.0)
            failed.append(f"{name} (wins both orders on {100 * rate:.1f}% of {a['pairs']} pairs, upper "
                          f"bound {100 * float(high or 0.0):.1f}%)")
    reason = None
    if failed:
        reason = (f"the attack gate failed: {'; '.join(failed)} passes the ceiling max_attack_win "
                  f"{100 * ceiling:g}%")
    elif missing:
        where = "no attack report was given" if measured is None else "the attack report does not measure them"
        reason = f"the attack gate fails closed: {', '.join(missing)} named in the decision, but {where}"
    return AttackGate(ceiling, reason is None, reason, tuple(rows))
