"""docs/python.md and the README's Python section are run as written: every ```python block, in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def run_blocks(path: Path) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "__doc__"}
    for number, block in enumerate(python_blocks(path), start=1):
        exec(compile(block, f"{path.name} block {number}", "exec"), namespace)
    return namespace


def test_python_md_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    ns = run_blocks(ROOT / "docs" / "python.md")
    assert len(python_blocks(ROOT / "docs" / "python.md")) >= 8
    result = ns["result"]
    gpt4 = ns["gpt4"]
    # examples/README.md: 1,957 of 2,400 pairs consistent, 198 splits toward slot 1 and 245 toward slot 2
    assert gpt4.outcomes.consistent == 1957 and gpt4.consistency.pairs == 2400  # type: ignore[attr-defined]
    assert (gpt4.flip_direction.first, gpt4.flip_direction.second) == (198, 245)  # type: ignore[attr-defined]
    assert result.to_frame()["consistency.rate"][0] == pytest.approx(1957 / 2400)  # type: ignore[attr-defined]
    duel = ns["duel"][0]  # type: ignore[index]
    assert duel.outcomes.total == 80 and duel.consistency.rate == pytest.approx(0.85)
    assert ns["strict"].passed is False and "gate FAILED" in ns["strict"]._repr_html_()  # type: ignore[attr-defined]
    assert ns["ranking"].rows[0].system == "gpt-4"  # type: ignore[attr-defined]
    done = ns["done"]
    assert done.stats["made"] == 20 and done.analyses[0].consistency.rate == 1.0  # type: ignore[attr-defined]
    assert done.analyses[0].accuracy.to_dict()["both"] == 1.0  # type: ignore[attr-defined]
    assert ns["estimate"].calls_to_make == 20  # type: ignore[attr-defined]


def test_readme_python_section_uses_top_level_names_and_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    [block] = python_blocks(ROOT / "README.md")
    imports = re.findall(r"^\s*(?:from|import) (\S+)", block, flags=re.M)
    assert imports and all(name == "swapjudge" for name in imports), imports
    ns = run_blocks(ROOT / "README.md")
    assert ns["result"][0].outcomes.consistent == 1957  # type: ignore[index]
