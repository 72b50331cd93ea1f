"""Write tests/durations.json from a pytest JUnit XML report: each test file's summed seconds.

`make test` hands whole files to its workers (pytest-xdist `--dist loadfile`, so a module's shared fixture is
built once) and tests/conftest.py starts the heaviest files first, so that no long file starts last and leaves
one core idle. Refresh the weights after a change that moves a file's time by much:

    .venv/bin/pytest -n auto --junitxml=/tmp/suite.xml && python bench/test_durations.py /tmp/suite.xml
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def file_seconds(report: Path) -> dict[str, float]:
    """Seconds per test file (tests/x/test_y.py), summed over its test cases, heaviest first."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        module = case.get("classname", "")
        # classname is the dotted module, with a class appended for tests in a class
        parts = [p for p in module.split(".") if not p[:1].isupper()]
        seconds["/".join(parts) + ".py"] += float(case.get("time") or 0.0)
    return {name: round(s, 1) for name, s in seconds.most_common()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="pytest --junitxml output of a whole run")
    args = parser.parse_args()
    weights = file_seconds(args.report)
    OUT.write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")
    print(f"{len(weights)} files, {sum(weights.values()):.0f} s in all -> {OUT}")


if __name__ == "__main__":
    main()
