"""The live identical-answer probe moved to `swapjudge.runner.identical_probe` (it calls the judge)."""

from swapjudge.runner.identical_probe import (  # moved: swapjudge.runner.identical_probe
    IdenticalProbeSession as IdenticalProbeSession,
)
from swapjudge.runner.identical_probe import (
    SelfCall as SelfCall,
)
from swapjudge.runner.identical_probe import (
    plan_self_pairs as plan_self_pairs,
)
from swapjudge.runner.identical_probe import (
    run_identical as run_identical,
)
from swapjudge.runner.identical_probe import (
    run_identical_async as run_identical_async,
)
