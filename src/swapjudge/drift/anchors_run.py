"""Anchored scoring through a judge moved to `swapjudge.runner.scoring` (it calls the judge); the statistics stay
in `swapjudge.drift.anchors`."""

from swapjudge.runner.scoring import (  # moved: swapjudge.runner.scoring
    AnchorsConfig as AnchorsConfig,
)
from swapjudge.runner.scoring import (
    AnchorsRun as AnchorsRun,
)
from swapjudge.runner.scoring import (
    Scored as Scored,
)
from swapjudge.runner.scoring import (
    ScoreItem as ScoreItem,
)
from swapjudge.runner.scoring import (
    load_anchors_config as load_anchors_config,
)
from swapjudge.runner.scoring import (
    run_anchors as run_anchors,
)
from swapjudge.runner.scoring import (
    score_items as score_items,
)
