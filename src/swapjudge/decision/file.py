"""The decision file: the question, the bar and the design, written (and committed) before any data exists.

A YAML mapping of exactly these keys (any other key is an error naming it, as is a key given twice):

    candidate: v2              # the system that ships or not
    incumbent: v1              # the system it must match or beat
    hypothesis: superior       # superior: win rate > 50%; non_inferior: win rate > 50% - margin
    margin: 0.0                # non_inferior: how much worse still ships (0.03 = 3 points of win rate)
    tie_policy: half_credit    # what a split pair is worth: half_credit | exclude | no_credit | separate
    min_consistency: 0.70      # the judge's swap-consistency gate; below it the candidate does not ship
    alpha: 0.05                # the false-ship rate: P(ship) at the bar
    power: 0.80                # P(ship) at the expected rates with the planned items (`swapjudge plan`)
    items: 400                 # the planned number of items (null: a fixed design reads what it is given, once)
    monitoring: fixed          # fixed: one look at `items`; sequential: look after every item, anytime-valid
    judge: null                # which judge's calls, when the records hold several
    human:                     # optional: people's labels decide (the judge's scores only narrow the interval)
      labels: human.jsonl      #   people's records, or a review store, with `pi` where a design drew them
      design: uniform          #   uniform | active: how the labelled items were drawn

The file's hash is over its validated content (every key, defaults filled in), so reformatting or a comment does
not change it and any change to what was registered does.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.errors import SwapjudgeError
from swapjudge.yamlfile import read_yaml, where

Hypothesis = Literal["superior", "non_inferior"]
Monitoring = Literal["fixed", "sequential"]


class DecisionFileError(SwapjudgeError):
    """A decision file that does not validate: one line naming the file and the key (exit 2)."""


class HumanLabels(BaseModel):
    """People's labels the decision rests on: their file (or review store) and the design that drew them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: str = Field(min_length=1)
    design: Literal["uniform", "active"] = "uniform"


class DecisionFile(BaseModel):
    """The pre-registered decision. `bar` is the win rate the candidate's bound must clear."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    candidate: str = Field(min_length=1)
    incumbent: str = Field(min_length=1)
    hypothesis: Hypothesis = "superior"
    margin: float = Field(default=0.0, ge=0.0, lt=0.5)
    tie_policy: TiePolicy = TiePolicy.half_credit
    min_consistency: float = Field(default=DEFAULT_MIN_CONSISTENCY, ge=0.0, le=1.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    power: float = Field(default=0.80, gt=0.0, lt=1.0)
    items: int | None = Field(default=None, ge=1)
    monitoring: Monitoring = "fixed"
    judge: str | None = None
    human: HumanLabels | None = None
    # attacks the judge must resist (`swapjudge probe attack`): the decision keeps when the upper bound of an
    # attack's both-order win rate passes `max_attack_win`, or when a named attack was not measured
    attacks: tuple[str, ...] | None = None
    max_attack_win: float | None = Field(default=None, gt=0.0, lt=1.0)

    @model_validator(mode="after")
    def _consistent(self) -> DecisionFile:
        if self.human is not None and self.monitoring == "sequential" and self.human.design != "uniform":
            raise ValueError("human: monitoring: sequential needs design: uniform (the anytime-valid sequence "
                             "for 1/pi-weighted labels is not built)")
        if self.candidate == self.incumbent:
            raise ValueError("incumbent: must differ from the candidate")
        if self.hypothesis == "superior" and self.margin != 0:
            raise ValueError("margin: applies to hypothesis non_inferior only (superior's bar is 50%)")
        if (self.attacks is None) != (self.max_attack_win is None):
            raise ValueError("attacks: name the attacks and their ceiling `max_attack_win` together")
        if self.power <= self.alpha:
            raise ValueError(f"power: {self.power} must be above alpha ({self.alpha})")
        return self

    @property
    def bar(self) -> float:
        """The win rate the bound is compared with: 0.5, or 0.5 - margin for non-inferiority."""
        return 0.5 - self.margin if self.hypothesis == "non_inferior" else 0.5

    @property
    def content_hash(self) -> str:
        """sha256 of the validated content: what was registered, whatever the file's layout."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json")
        for key in _OPTIONAL_KEYS:  # absent when not given: a file without them keeps the hash it always had
            if out.get(key) is None:
                out.pop(key, None)
        return out


_OPTIONAL_KEYS = ("human", "attacks", "max_attack_win")


KEYS = tuple(DecisionFile.model_fields)


def _closest(word: str) -> str:
    match = difflib.get_close_matches(word, KEYS, n=1, cutoff=0.6)
    return f"; did you mean `{match[0]}`?" if match else ""


def parse_decision(data: Any, *, source: str = "decision") -> DecisionFile:
    """Validate a mapping of the decision file's keys; an error names the source and the first bad key."""
    if not isinstance(data, Mapping):
        raise DecisionFileError(f"{source}: a decision file is a mapping of keys ({', '.join(KEYS)})")
    try:
        return DecisionFile.model_validate(dict(data))
    except ValidationError as err:
        first = err.errors()[0]
        loc = [str(p) for p in first["loc"]]
        key = loc[0] if loc else None
        msg = str(first["msg"]).removeprefix("Value error, ")
        if key is None and ": " in msg:  # a check across keys names its key first
            key, msg = msg.split(": ", 1)
        if first["type"] == "extra_forbidden" and key is not None:
            msg = "not a key of a decision file" + _closest(key)
        elif first["type"] == "missing":
            msg = "missing (every decision names its candidate and incumbent)"
        named = f"key `{key}`: " if key else ""
        raise DecisionFileError(f"{where(source, data, [key] if key else [])}: {named}{msg}") from None


def read_decision(path: str | Path) -> DecisionFile:
    """A decision file from YAML; errors name the file, the line (YAML) or the key."""
    source = Path(path)
    data = read_yaml(source, what="the decision file", error=DecisionFileError)
    if data is None:
        raise DecisionFileError(f"{source}: the decision file is empty")
    return parse_decision(data, source=str(source))


def load_decision(decision: str | Path | Mapping[str, Any] | DecisionFile) -> tuple[DecisionFile, str | None]:
    """The decision and the path it came from (None for a mapping or a model)."""
    if isinstance(decision, DecisionFile):
        return decision, None
    if isinstance(decision, Mapping):
        return parse_decision(decision, source="decision"), None
    if isinstance(decision, str | Path):
        return read_decision(decision), str(decision)
    raise DecisionFileError(f"decision: expected a path or a mapping of the decision file's keys, got "
                            f"{type(decision).__name__}")
