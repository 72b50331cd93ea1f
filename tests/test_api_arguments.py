"""Every public function checks every argument at its entry: a value of the wrong type or out of range is one
`ArgumentError` naming the Python argument, never a TypeError or ValueError from deep inside, and never taken
silently (10.5 pairs, True pairs, -1 bootstrap rounds). The test walks `swapjudge.__all__` and each function's
signature, so a new function or argument without its check fails here."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import swapjudge as sj
from conftest import pair
from swapjudge.errors import ArgumentError

ROWS = [r for i in range(12) for r in pair(f"q{i}", "first", "second" if i % 4 else "first")]
MISSING = "no-such-file.yaml"  # a path of the right type: the checks come before anything is read
# valid values for each public function's required arguments
BASE: dict[str, dict[str, Any]] = {
    "analyze": {"source": ROWS},
    "load_records": {"source": ROWS},
    "rank": {"source": ROWS},
    "calculate": {"pairs": 10, "consistent": 8},
    "run": {"config": MISSING},
    "dry_run": {"config": MISSING},
    "decide": {"records": ROWS, "decision": MISSING},
    "plan": {"decision": MISSING, "expect": 0.6, "splits": 0.1},
    "card": {"config": MISSING},
}


class Alien:
    """A value no argument of the API takes."""


def _functions() -> dict[str, Any]:
    return {name: getattr(sj, name) for name in sj.__all__
            if inspect.isfunction(getattr(sj, name)) and not name.startswith("_")}


def _every_argument() -> list[tuple[str, str]]:
    return [(name, arg) for name, fn in _functions().items() for arg in inspect.signature(fn).parameters]


def test_every_public_function_is_covered() -> None:
    assert set(_functions()) == set(BASE)


def _refused(name: str, **arguments: Any) -> ArgumentError:
    with pytest.raises(ArgumentError) as info:
        _functions()[name](**{**BASE[name], **arguments})
    return info.value


@pytest.mark.parametrize(("name", "argument"), _every_argument())
def test_a_value_of_no_accepted_type_is_refused_naming_the_argument(name: str, argument: str) -> None:
    err = _refused(name, **{argument: Alien()})
    assert err.arguments == (argument,)
    assert str(err).startswith(f"{argument} must be ") and str(err).endswith("got Alien"), str(err)


WRONG_VALUES = [
    # the examples
    ("analyze", "min_consistency", "high", "min_consistency must be a number between 0 and 1, got 'high'"),
    ("analyze", "tie_policy", "bogus",
     "tie_policy must be one of half_credit, exclude, no_credit, separate or None, got 'bogus'"),
    ("rank", "bootstrap", "x", "bootstrap must be an integer, got 'x'"),
    ("rank", "bootstrap", -1, "bootstrap must be 0 or more, got -1"),
    ("run", "config", None,
     "config must be a run configuration: a YAML file's path, a mapping of its keys, or a LoadedConfig, got None"),
    ("calculate", "pairs", 10.5, "pairs must be an integer, got 10.5"),
    ("calculate", "pairs", True, "pairs must be an integer, got True"),
    ("calculate", "consistent", True, "consistent must be an integer, got True"),
    # the same kinds of mistake on the other arguments
    ("analyze", "source", None, "source must be a path (str or pathlib.Path), a list of dicts, a RecordSet, or a "
                                "pandas or polars DataFrame, got None"),
    ("analyze", "confidence", 1.0, "confidence must be a number strictly between 0 and 1, got 1.0"),
    ("analyze", "confidence", float("nan"), "confidence must be a number strictly between 0 and 1, got nan"),
    ("analyze", "a", 3, "a must be a name (a string) or None, got 3"),
    ("analyze", "allow_unpaired", 1, "allow_unpaired must be True or False, got 1"),
    ("load_records", "extras", "no", "extras must be True or False, got 'no'"),
    ("rank", "seed", -1, "seed must be 0 or more, got -1"),
    ("rank", "seed", 1.5, "seed must be an integer, got 1.5"),
    ("rank", "model", "elo", "model must be one of rao-kupper, davidson, bt-half, got 'elo'"),
    ("rank", "outcome", "votes", "outcome must be one of swap, calls, graded, got 'votes'"),
    ("rank", "interval", "normal", "interval must be one of percentile, bca, got 'normal'"),
    ("rank", "min_consistency", 1.5, "min_consistency must be a number between 0 and 1, got 1.5"),
    ("calculate", "to_first", 1.0, "to_first must be an integer or None, got 1.0"),
    ("calculate", "margin", "0.1", "margin must be a number or None, got '0.1'"),
    ("calculate", "confidence", "95%", "confidence must be a number, got '95%'"),
    ("run", "config", 5, "config must be a run configuration: a YAML file's path, a mapping of its keys, or a "
                         "LoadedConfig, got 5"),
    ("run", "store", 5, "store must be a run store's path or None, got 5"),
    ("run", "progress", "yes", "progress must be True or False, got 'yes'"),
    ("dry_run", "config", "", "config must be a run configuration: a YAML file's path, a mapping of its keys, or a "
                              "LoadedConfig, got ''"),
    ("decide", "allow_missing", 2.0, "allow_missing must be an integer, got 2.0"),
    ("decide", "run", 0, "run must be 1 or more, got 0"),
    ("plan", "simulations", "many", "simulations must be an integer, got 'many'"),
    ("plan", "expect", 1.2, "expect must be a number between 0 and 1 or None, got 1.2"),
    ("card", "suite", None, "suite must be a suite's name (default, quick) or a pairs file's path, got None"),
    ("card", "references", "yes", "references must be True or False, got 'yes'"),
]


@pytest.mark.parametrize(("name", "argument", "value", "message"), WRONG_VALUES,
                         ids=[f"{n}-{a}-{v!r}" for n, a, v, _ in WRONG_VALUES])
def test_a_wrong_value_is_one_clear_error(name: str, argument: str, value: Any, message: str) -> None:
    err = _refused(name, **{argument: value})
    assert (str(err), err.arguments) == (message, (argument,))


def test_checked_values_still_work(tmp_path: Path) -> None:
    import numpy as np
    import polars as pl

    # numpy integers and floats are numbers; enum members and their values are both choices
    calc = sj.calculate(np.int64(10), np.int32(8), confidence=np.float64(0.9))
    assert calc.consistency.consistent == 8 and calc.consistency.pairs == 10
    from swapjudge.core.choices import TiePolicy

    by_value = sj.analyze(ROWS, tie_policy="exclude", min_consistency=0)
    by_member = sj.analyze(pl.DataFrame(ROWS), tie_policy=TiePolicy.exclude, min_consistency=np.float64(0))
    assert by_value.to_dict() == by_member.to_dict()
    assert len(sj.rank(ROWS, bootstrap=0, min_consistency=0).rows) == 2
    path = tmp_path / "r.jsonl"
    path.write_text("".join(__import__("json").dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert len(sj.load_records(str(path))) == len(sj.load_records(path)) == len(ROWS)


def test_the_cli_names_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(__import__("json").dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    from swapjudge.cli import app

    done = CliRunner().invoke(app, ["rank", str(path), "--seed", "-1", "--min-consistency", "0"])
    assert done.exit_code == 2 and done.stderr.strip() == "error: --seed must be 0 or more, got -1", done.stderr
