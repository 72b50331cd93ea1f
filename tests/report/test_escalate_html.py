"""`swapjudge escalate --html`: each judge's coverage-risk curve drawn, its points tabled, checked against a brute
force over the first judge's pairs."""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import write_jsonl
from swapjudge.cli import app


def _records(n: int, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, n)
    rows = []
    for judge, noise in (("cheap", 1.0), ("strong", 0.3)):
        seen = quality + rng.normal(0, noise, n)
        for i in range(n):
            for first, second, sign in (("a", "b", 1), ("b", "a", -1)):
                p = round(1 / (1 + math.exp(-2 * sign * seen[i])), 2)
                rows.append({"judge": judge, "item": f"q{i}", "first": first, "second": second,
                             "verdict": "first" if p >= 0.5 else "second", "p_first": p, "p_second": 1 - p,
                             "label": "a" if quality[i] > 0 else "b"})
    return rows


@pytest.mark.slow  # matplotlib draws two SVG figures with glyphs as paths: about 12 s on a shared machine
def test_the_page_shows_each_judges_curve_with_its_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    rows = _records(300)
    path = write_jsonl(tmp_path / "sim.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["escalate", str(path), "--judge", "cheap", "--judge", "strong", "--alpha", "0.1",
                                    "--html", "cascade.html"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    page = (tmp_path / "cascade.html").read_text()
    sections = page.split("<section>")[1:]
    assert [re.search(r"<h2>(.*?)</h2>", s).group(1) for s in sections] == ["cheap", "strong"]  # type: ignore[union-attr]
    for s in sections:
        svg = base64.b64decode(re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', s).group(1))  # type: ignore[union-attr]
        assert svg.startswith(b"<?xml") and b"<svg" in svg

    # brute force for the first judge (every pair reaches it): at each distinct confidence, the consistent pairs
    # at or above it and the share of them whose verdict is not the label
    calls: dict[str, dict[str, tuple[str, float, str]]] = {}
    for r in rows:
        if r["judge"] == "cheap":
            named = r["first"] if r["verdict"] == "first" else r["second"]
            calls.setdefault(r["item"], {})[r["first"]] = (named, r["p_first"] / (r["p_first"] + r["p_second"]),
                                                           r["label"])
    conf, wrong = [], []
    for two in calls.values():
        (n1, share_a_first, label), (n2, share_b_first, _) = two["a"], two["b"]
        if n1 != n2:
            continue  # a flip: never settled
        p_a = 0.5 * (share_a_first + (1.0 - share_b_first))  # P(a wins), averaged over the two orders
        conf.append(p_a if n1 == "a" else 1.0 - p_a)
        wrong.append(n1 != label)
    conf_a, wrong_a = np.array(conf), np.array(wrong)
    table = re.findall(r"<tr><td class=\"n\">([^<]+)</td><td class=\"n\">([^<]+)</td><td class=\"n\">([^<]+)</td>"
                       r"<td class=\"n\">([^<]+)</td></tr>", sections[0])
    distinct = np.unique(conf_a)
    assert len(table) == min(101, distinct.size)
    for i, (_lam, settled, coverage, risk) in enumerate(table[:20]):
        chosen = conf_a >= distinct[::-1][int(i)]
        assert int(settled.replace(",", "")) == chosen.sum()
        assert float(coverage.rstrip("%")) == pytest.approx(100 * chosen.sum() / len(calls), abs=0.051)
        assert float(risk.rstrip("%")) == pytest.approx(100 * wrong_a[chosen].mean(), abs=0.051)
