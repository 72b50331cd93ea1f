"""`swapjudge report --engine streaming` against the report of records read whole: the same analyses, segments,
rankings, review queue and provenance from the same JSON Lines and Parquet files (seeded shapes, the example
records, real published verdicts); the queue capped at what the HTML shows with its counts over every pair;
the human-corrected win rates from the compared pairs' calls alone; the sections that need the rows left out with
a sentence; the same rendered figures; one-line errors."""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import ROOT, shi2024_records, write_jsonl, write_parquet
from record_shapes import SHAPES
from swapjudge.cli import app
from swapjudge.workflows.report import report
from swapjudge.workflows.streamed_report import LEFT_OUT_LENGTH, LEFT_OUT_PANEL


def _document(inputs: Any, limit: int | None = None) -> dict[str, Any]:
    """What a report shows, as plain values (the queue's first `limit` rows, and its counts over all of them)."""
    queue = inputs.queue if limit is None else inputs.queue.head(limit)
    return {
        "analyses": [a.to_dict() for a in inputs.analyses],
        "segmented": None if inputs.segmented is None else inputs.segmented.to_dict(),
        "rankings": [(r.judge, r.outcome, r.ranking.to_dict()) for r in inputs.rankings],
        "queue": queue.to_dicts(), "queue_schema": dict(queue.schema), "queue_total": inputs.queue_total,
        "queue_by_outcome": inputs.queue_by_outcome,
        "provenance": {k: v for k, v in inputs.source.provenance.items()},
        "settings": {k: v for k, v in inputs.settings.items() if k != "engine"},
    }


def _both(path: Path, limit: int = 1000, **options: Any) -> tuple[Any, Any]:
    """The in-memory and the streamed report of one file, checked equal in everything the streamed one shows."""
    memory = report(path, engine="memory", **options)
    streamed = report(path, engine="streaming", queue_limit=limit, **options)
    assert memory.settings["engine"] == "memory" and streamed.settings["engine"] == "streaming"
    assert _document(streamed) == _document(memory, limit), f"{path.suffix} {options}"
    assert streamed.lengths == () and streamed.calibrations == () and streamed.panel is None
    return memory, streamed


def _files(tmp_path: Path, rows: list[dict[str, Any]]) -> list[Path]:
    return [write_jsonl(tmp_path / "records.jsonl", rows), write_parquet(tmp_path / "records.parquet", rows)]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_reports_the_same_from_counts(tmp_path: Path, shape: str) -> None:
    unpaired = shape in ("unpaired", "reshown")
    for path in _files(tmp_path, SHAPES[shape]()):
        memory, streamed = _both(path, min_consistency=0, allow_unpaired=unpaired)
        judges = len(memory.analyses)
        assert streamed.left_out == ((LEFT_OUT_PANEL.format(n=judges),) if judges > 1 else ())


def test_several_judges_segments_rankings_and_a_capped_queue(tmp_path: Path) -> None:
    rows = SHAPES["mixed"]()
    for path in _files(tmp_path, rows):
        memory, streamed = _both(path, limit=7, min_consistency=0, segment="category", rank_rounds=50,
                                 rank_seed=3)
        assert len(memory.analyses) == 2 and len(memory.rankings) == 2  # four systems: both judges ranked
        assert {s.value for s in memory.segmented.segments} == {"math", "code", "writing"}  # type: ignore[union-attr]
        assert memory.queue.height > 7 and streamed.queue.height == 7
        assert streamed.queue_total == memory.queue.height
        # the queue's rows are in file order: the order of their pairs' first calls
        first_seen = {}
        for index, r in enumerate(rows):
            key = (r["judge"], r["round"], str(r["item"]), *sorted((r["first"], r["second"])))
            first_seen.setdefault(key, index)
        keys = [(q["judge"], q["round"], q["item"], q["x"], q["y"]) for q in streamed.queue.to_dicts()]
        assert [first_seen[k] for k in keys] == sorted(first_seen[k] for k in keys)


@pytest.mark.parametrize("options", [{"judge": "j2"}, {"a": "alpha", "b": "gamma", "tie_policy": "exclude"},
                                     {"confidence": 0.9, "min_consistency": 0.6, "segment": "category"},
                                     {"segment": "nope"}, {"segment": "verdict"}, {"judge": "nobody"}])
def test_choices_and_their_errors_are_the_same(tmp_path: Path, options: dict[str, Any]) -> None:
    from swapjudge.errors import SwapjudgeError

    for path in _files(tmp_path, SHAPES["mixed"]()):
        found = []
        for engine in ("memory", "streaming"):
            try:
                found.append(("ok", _document(report(path, engine=engine, **options), 1000)))
            except SwapjudgeError as err:
                found.append((type(err).__name__, str(err)))
        assert found[0] == found[1], options


def test_example_and_real_records(tmp_path: Path) -> None:
    memory, _ = _both(ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl", min_consistency=0)
    assert memory.queue.height > 100 and memory.analyses[0].outcomes.complete > 1000
    rows = shi2024_records("MTBench", "gpt-4-0613")
    for path in _files(tmp_path, rows):
        memory, streamed = _both(path, min_consistency=0, rank_rounds=20)
        assert memory.rankings and streamed.queue_total > 100


def _with_texts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call with its answers, task and judge reply (the fields the queue shows)."""
    return [{**r, "first_text": f"{r['item']}: answer of {r['first']}", "second_text": f"answer of {r['second']}",
             "prompt": f"task {r['item']}", "raw": f"reply {n}"} for n, r in enumerate(rows)]


def test_the_queue_shows_the_answers_and_replies_of_its_pairs(tmp_path: Path) -> None:
    rows = _with_texts(SHAPES["two_systems"]())
    for path in _files(tmp_path, rows):
        memory, streamed = _both(path, limit=5, min_consistency=0)
        shown = streamed.queue.to_dicts()
        assert len(shown) == 5 and all(q["raw_x_first"] and q["text_x"] and q["prompt"] for q in shown)
        assert streamed.source.has_texts and streamed.left_out == (LEFT_OUT_LENGTH,)
        assert memory.lengths  # the texts give the length probe in memory


def test_a_pairs_file_gives_the_queue_its_texts(tmp_path: Path) -> None:
    rows = SHAPES["two_systems"]()
    items = sorted({r["item"] for r in rows})[::2]  # half the items: the others' texts are missing
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item": i, "prompt": f"task {i}", "answers": {"A": f"a {i}", "B": f"b {i}"}})
                             + "\n" for i in items))
    systems = sorted({r["first"] for r in rows})
    pairs.write_text(pairs.read_text().replace('"A"', json.dumps(systems[0])).replace('"B"', json.dumps(systems[1])))
    for path in _files(tmp_path, rows):
        _, streamed = _both(path, min_consistency=0, pairs=pairs)
        texts = [q["text_x"] for q in streamed.queue.to_dicts()]
        assert any(texts) and None in texts and streamed.source.provenance["pairs_file"] == str(pairs)


def test_auto_streams_only_what_it_can_report_whole(tmp_path: Path) -> None:
    solo = write_parquet(tmp_path / "solo.parquet", SHAPES["two_systems"]())
    assert report(solo, min_consistency=0).settings["engine"] == "streaming"
    assert report(write_jsonl(tmp_path / "small.jsonl", SHAPES["two_systems"]()),
                  min_consistency=0).settings["engine"] == "memory"  # under 32 MiB
    several = write_parquet(tmp_path / "several.parquet", SHAPES["mixed"]())
    assert report(several, min_consistency=0).settings["engine"] == "memory"  # the panel
    assert report(several, min_consistency=0, judge="j1").settings["engine"] == "streaming"
    texts = write_parquet(tmp_path / "texts.parquet", _with_texts(SHAPES["two_systems"]()))
    assert report(texts, min_consistency=0).settings["engine"] == "memory"  # the length probe
    human = write_jsonl(tmp_path / "human.jsonl", [{**r, "judge": "people"} for r in SHAPES["two_systems"]()[:40]])
    streamed = report(solo, min_consistency=0, human=human)  # people's records need no rows of the judge's file
    assert streamed.settings["engine"] == "streaming" and streamed.calibrations and streamed.left_out == ()


def _people(rows: list[dict[str, Any]], a: str, b: str, seed: int = 5) -> list[dict[str, Any]]:
    """People's records on about half of one judge's calls between a and b in round 0 (so some pairs in one
    order), with verdicts of their own."""
    rng = random.Random(seed)
    return [{**r, "judge": "people", "verdict": rng.choice(["first", "second", "tie"])} for r in rows
            if {r["first"], r["second"]} == {a, b} and r.get("round", 0) == 0 and r["judge"] == rows[0]["judge"]
            and rng.random() < 0.5]


@pytest.mark.parametrize("policy", ["half_credit", "no_credit"])
def test_the_human_corrected_win_rate_is_the_same_from_the_compared_pairs_calls(tmp_path: Path, policy: str) -> None:
    # two judges, two rounds, integer items beside text ones: the calls read back must match the people's items
    rows = SHAPES["mixed"]()
    people = write_jsonl(tmp_path / "people.jsonl", _people(rows, "alpha", "beta"))
    for path in _files(tmp_path, rows):
        options: dict[str, Any] = {"min_consistency": 0, "human": people, "a": "alpha", "b": "beta",
                                   "tie_policy": policy}
        memory = report(path, engine="memory", **options)
        streamed = report(path, engine="streaming", **options)
        assert [c.judge for c in memory.calibrations] == ["j1", "j2"]
        assert [c.to_dict() for c in streamed.calibrations] == [c.to_dict() for c in memory.calibrations]
        assert streamed.left_out == (LEFT_OUT_PANEL.format(n=2),)
    solo = SHAPES["two_systems"]()
    people = write_jsonl(tmp_path / "people.jsonl", _people(solo, "base", "cand"))
    for path in _files(tmp_path, solo):
        memory = report(path, engine="memory", min_consistency=0, human=people, tie_policy=policy)
        streamed = report(path, engine="streaming", min_consistency=0, human=people, tie_policy=policy)
        assert memory.calibrations and streamed.left_out == ()
        assert [c.to_dict() for c in streamed.calibrations] == [c.to_dict() for c in memory.calibrations]


def test_auto_streams_a_file_too_large_to_read_whole_and_says_what_it_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import swapjudge.workflows.report as reporting

    several = write_parquet(tmp_path / "several.parquet", SHAPES["mixed"]())
    rows = len(SHAPES["mixed"]())
    monkeypatch.setattr(reporting, "AUTO_WHOLE_RECORDS", rows)
    assert report(several, min_consistency=0).settings["engine"] == "memory"  # the panel, read whole
    monkeypatch.setattr(reporting, "AUTO_WHOLE_RECORDS", rows - 1)
    streamed = report(several, min_consistency=0)
    assert streamed.settings["engine"] == "streaming"
    assert streamed.left_out == (LEFT_OUT_PANEL.format(n=2),) and not streamed.lengths
    big_jsonl = write_jsonl(tmp_path / "several.jsonl", SHAPES["mixed"]())
    monkeypatch.setattr("swapjudge.reading.streaming.STREAM_ABOVE_BYTES", 1)  # auto streams this JSON Lines file
    assert report(big_jsonl, min_consistency=0).left_out == (LEFT_OUT_PANEL.format(n=2),)


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`swapjudge report` in this process (CliRunner): the claims are about what it writes and says, not about a
    process; an exception its error handling lets through fails the test."""
    done = CliRunner().invoke(app, ["report", *map(str, args)], catch_exceptions=False)
    return subprocess.CompletedProcess(["report", *map(str, args)], done.exit_code, done.stdout, done.stderr)


def _same_apart_from_the_engine(text: str) -> str:
    """A rendered report without what differs by engine: the time it was generated and the engine's name."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "TIME", text)
    return re.sub(r"&quot;engine&quot;: &quot;(memory|streaming)&quot;", "ENGINE", text)


def test_the_command_renders_the_same_report(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", SHAPES["mixed"]())
    written = {}
    for engine in ("memory", "streaming"):
        html, markdown = tmp_path / f"{engine}.html", tmp_path / f"{engine}.md"
        done = _cli(path, "--html", html, "--markdown", markdown, "--judge", "j1", "--min-consistency", "0",
                    "--segment", "category", "--engine", engine)
        assert done.returncode == 0, done.stderr
        written[engine] = (_same_apart_from_the_engine(html.read_text()), _same_apart_from_the_engine(
            markdown.read_text()))
    assert written["streaming"] == written["memory"]
    assert "Showing the first" not in written["memory"][0]  # every unsettled pair is shown (fewer than 1000)


def test_the_command_renders_the_same_human_corrected_win_rate(tmp_path: Path) -> None:
    rows = SHAPES["two_systems"]()
    path, people = write_parquet(tmp_path / "r.parquet", rows), write_jsonl(tmp_path / "people.jsonl",
                                                                             _people(rows, "base", "cand"))
    written = {}
    for engine in ("memory", "streaming"):
        markdown = tmp_path / f"{engine}.md"
        done = _cli(path, "--markdown", markdown, "--min-consistency", "0", "--human", people, "--engine", engine)
        assert done.returncode == 0, done.stderr
        written[engine] = _same_apart_from_the_engine(markdown.read_text())
    assert written["streaming"] == written["memory"] and "corrected" in written["memory"].lower()
    assert "--engine memory" not in written["streaming"]  # no section left out


def test_the_command_says_what_it_left_out(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", SHAPES["mixed"]())
    html, markdown = tmp_path / "r.html", tmp_path / "r.md"
    done = _cli(path, "--html", html, "--markdown", markdown, "--min-consistency", "0", "--max-pairs", "3",
                "--engine", "streaming")
    assert done.returncode == 0, done.stderr
    sentence = LEFT_OUT_PANEL.format(n=2)
    assert sentence in html.read_text() and sentence in markdown.read_text()
    memory = report(path, engine="memory", min_consistency=0)
    assert f"Showing the first 3 of {memory.queue.height:,}" in html.read_text()
    assert f"{memory.queue.height:,} pairs to read" in markdown.read_text()
    assert html.read_text().count('<article class="pair"') == 3


def test_a_bad_file_is_one_line(tmp_path: Path) -> None:
    rows = SHAPES["two_systems"]()
    rows[5] = {**rows[5], "verdict": "maybe"}
    for path in _files(tmp_path, rows):
        done = _cli(path, "--markdown", tmp_path / "out.md", "--engine", "streaming")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and path.name in lines[0] and "verdict" in lines[0], done.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"item": "1", "first": "a", "second": "b", "verdict": "first"}\n{not json\n')
    said = [_cli(broken, "--markdown", tmp_path / "out.md", "--engine", engine) for engine in ("streaming", "memory")]
    # the line that is not JSON is named by its number in the file (the streaming engine named it line 1 before)
    assert [(d.returncode, d.stderr) for d in said] == [(2, said[1].stderr)] * 2 and "broken.jsonl:2:" in said[0].stderr


def test_the_provenance_sums_the_usage_columns(tmp_path: Path) -> None:
    rows = [{**r, "input_tokens": 100 + n % 7, "cost_usd": 0.001 * (n % 13) + 1e-7, "latency_s": n % 3,
             **({"prompt_hash": f"h{n % 5}"} if n % 4 else {})} for n, r in enumerate(SHAPES["two_systems"]())]
    for path in _files(tmp_path, rows):
        memory = report(path, engine="memory", min_consistency=0).source.provenance
        streamed = report(path, engine="streaming", min_consistency=0).source.provenance
        assert streamed["total_cost_usd"] == pytest.approx(memory["total_cost_usd"], rel=1e-12)  # summed in
        assert {**streamed, "total_cost_usd": 0} == {**memory, "total_cost_usd": 0}  # another order
        assert memory["total_input_tokens"] == sum(r["input_tokens"] for r in rows)
        assert memory["distinct_prompts"] == 6  # five hashes and the missing one


def test_blank_lines_do_not_shift_the_replies_read_back(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    with path.open("w") as f:
        for n, row in enumerate(SHAPES["two_systems"]()):
            f.write(json.dumps({**row, "raw": f"reply {n}"}) + ("\n\n   \n" if n % 3 == 0 else "\n"))
    _, streamed = _both(path, min_consistency=0)
    assert all(q["raw_x_first"] and q["raw_y_first"] for q in streamed.queue.to_dicts())
