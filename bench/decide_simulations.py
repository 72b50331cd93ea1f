"""The simulation figures of docs/decide.md: seeded studies with known truth for `swapjudge decide`.

- at the bar (the candidate exactly as good as the bar), how often the fixed design, read once at 400 items,
  ships (2,000 studies);
- checked after every 20 items up to 400 (1,000 streams), how often the fixed-sample interval and the confidence
  sequence ship;
- at the planned items and the expected rates, the power (2,000 studies or streams, a seed the plan never saw).
    python bench/decide_simulations.py [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from swapjudge.decision.power import (
    expected_design,
    simulated_power_fixed,
    simulated_power_sequential,
)
from swapjudge.decision.simulate import fixed_false_ship, monitoring_false_ship, null_design
from swapjudge.workflows.decide import plan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    seed = parser.parse_args().seed
    print("false-ship rate at the bar (alpha 0.05, half credit, 30% splits), mean ± Monte Carlo standard error")
    for bar in (0.5, 0.47):
        fixed = fixed_false_ship(null_design(bar, 0.3), 400, bar, 0.05, studies=2000, seed=seed)
        print(f"  bar {bar:.2f}: fixed design read once at 400 items: {fixed.value:.2%} ± {fixed.se:.2%} "
              "(2,000 studies)")
        peeked, seq = monitoring_false_ship(null_design(bar, 0.3), bar, 0.05, every=20, horizon=400, streams=1000,
                                            seed=seed)
        print(f"  bar {bar:.2f}, checked after every 20 items up to 400 (1,000 streams): fixed-sample interval "
              f"{peeked.value:.1%} ± {peeked.se:.1%}, confidence sequence {seq.value:.1%} ± {seq.se:.1%}")
    print("power at the planned items (target 80%), re-simulated with a seed the plan never saw")
    for rate, splits, monitoring in ((0.58, 0.3, "fixed"), (0.58, 0.3, "sequential"), (0.55, 0.2, "fixed"),
                                     (0.55, 0.2, "sequential")):
        result = plan({"candidate": "v2", "incumbent": "v1", "monitoring": monitoring}, expect=rate, splits=splits,
                      seed=seed)
        assert result.items is not None
        design = expected_design(rate, splits, "half_credit")
        again = (simulated_power_sequential(design, result.items, 0.5, 0.05, streams=2000, seed=seed + 99)
                 if monitoring == "sequential"
                 else simulated_power_fixed(design, result.items, 0.5, 0.05, studies=2000, seed=seed + 99))
        print(f"  win rate {rate:.0%}, {splits:.0%} splits, {monitoring}: {result.items:,} items; simulated power "
              f"{result.simulated_power:.1%} (plan's check), {again:.1%} (fresh seed)")


if __name__ == "__main__":
    main()
