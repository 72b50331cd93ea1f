"""The golden documents: every offline command's JSON (and the report's Markdown) on the repository's examples.

Regenerate them with the code of a given source tree (the goldens were taken at commit 05989d0, before the
readers moved out of core/):

    git worktree add /tmp/before 05989d0
    python tests/golden/make_golden.py --src /tmp/before/src

tests/workflows/test_golden.py runs the same commands on the current code and asserts the same bytes. The inputs
are the repository's examples (examples/), the public data beside the project (../shared/data) and small files
derived from them here in plain Python (no swapjudge code), so both sides read the same bytes.

What legitimately varies is replaced before the comparison (and only that): the temporary directory's path
(`<work>`) and the repository's (`<root>`), the values of the keys in VARYING (clock times and durations of a
run, the package version, the judge's hash, which covers the replayed file's absolute path), compare's
judge-settings change (the same hash) and a report's "generated" time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "documents"
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared" / "data"

# keys whose values are clock times, durations or the version: the only things that may differ between two runs
VARYING = (
    "started_at", "ended_at", "finished_at", "updated_at", "decided_at", "timestamp", "time", "when",
    "judge_hash", "elapsed_s", "duration_s", "wall_s", "version", "swapjudge_version", "generated_at", "date",
    "created_at",
)
_VARYING_RE = re.compile(r'("(?:' + "|".join(VARYING) + r')": )("(?:[^"\\]|\\.)*"|[-0-9.eE+]+)')
# the judge settings' hash covers the replayed file's absolute path (compare prints its first 12 digits)
_SETTINGS_RE = re.compile(r'("what": "judge_settings",\s*"before": )"[0-9a-f]+"(,\s*"after": )"[0-9a-f]+"')
# a report's footer says when it was generated
_GENERATED_RE = re.compile(r"generated \d{4}-\d\d-\d\dT[0-9:.+-]+(?:Z)?")

MT_ITEMS = 16  # MTBench questions kept from the three judges' published verdicts (16 x 30 pairs per judge)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def build_inputs(work: Path) -> None:
    """The derived inputs, in plain Python: the same bytes whichever swapjudge runs on them."""
    codes = {"A": "first", "B": "second", "C": "tie", "": None}
    # three judges on the same MTBench pairs (Shi et al. 2024): panel, variants, calibrate
    with (SHARED / "shi2024" / "verdicts_both_orders.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["benchmark"] == "MTBench"]
    keep = sorted({r["question_id"] for r in rows}, key=int)[:MT_ITEMS]
    mt = [{"judge": r["judge"], "item": r["question_id"], "first": r["model_first"], "second": r["model_second"],
           "verdict": codes[r["verdict"]], "task": r["task"]} for r in rows if r["question_id"] in keep]
    _write_jsonl(work / "mt3.jsonl", mt)
    # three repeated runs of each judge on MTBench: the repeat probe
    with (SHARED / "shi2024" / "repetition_sample_verdicts_both_orders.csv").open(newline="") as f:
        rep = [{"judge": r["judge"], "round": int(r["repetition"]) - 1, "item": r["question_id"],
                "first": r["model_first"], "second": r["model_second"], "verdict": codes[r["verdict"]]}
               for r in csv.DictReader(f) if r["benchmark"] == "MTBench"]
    _write_jsonl(work / "repeat.jsonl", rep)
    # two rule judges on the 30 LLMBar pairs (labelled, with texts): agreement, length, calibrate, decide, runs
    pairs = [json.loads(line) for line in (EXAMPLES / "llmbar_natural_30.jsonl").open(encoding="utf-8")]
    longer, biased, oracle = [], [], []
    for i, p in enumerate(pairs):
        for first, second in (("output_1", "output_2"), ("output_2", "output_1")):
            long_first = len(p["answers"][first]) >= len(p["answers"][second])
            base = {"item": p["item"], "first": first, "second": second, "label": p["label"]}
            longer.append({**base, "judge": "longer", "verdict": "first" if long_first else "second"})
            # right on most items, the first slot on every third, a tie on every seventh
            right = "first" if first == p["label"] else "second"
            verdict = "tie" if i % 7 == 0 else "first" if i % 3 == 0 else right
            biased.append({**base, "judge": "biased", "verdict": verdict})
            if i < 15:
                oracle.append({**base, "judge": "people", "verdict": right})
    _write_jsonl(work / "llm_longer.jsonl", longer)
    _write_jsonl(work / "llm_two.jsonl", longer + biased)
    _write_jsonl(work / "llm_biased.jsonl", biased)
    _write_jsonl(work / "people.jsonl", oracle)
    _write_jsonl(work / "pairs.jsonl", pairs)
    (work / "decision.yaml").write_text(
        "candidate: output_1\nincumbent: output_2\nhypothesis: superior\nmargin: 0.0\ntie_policy: half_credit\n"
        "min_consistency: 0.5\nalpha: 0.05\npower: 0.8\nitems: 30\nmonitoring: fixed\njudge: biased\n")
    (work / "decision_mt.yaml").write_text(
        "candidate: gpt-4\nincumbent: vicuna-13b-v1.3\nhypothesis: superior\nmargin: 0.0\ntie_policy: half_credit\n"
        "min_consistency: 0.7\nalpha: 0.05\npower: 0.8\nitems: 80\nmonitoring: sequential\njudge: null\n")
    for name, source in (("biased", "llm_biased.jsonl"), ("longer", "llm_longer.jsonl")):
        (work / f"run_{name}.yaml").write_text(
            "protocol: pairwise\norders: [ab, ba]\nschema: allow_tie\ntie_policy: half_credit\n"
            f"judge: {{backend: replay, path: {source}, name: {name}}}\n"
            "pairs: {path: pairs.jsonl, a: output_1, b: output_2}\nstore: runs.db\n")
    # three published judges' cards (from their published counts): card --compare
    shipped = ROOT / "src" / "swapjudge" / "suites" / "references" / "shi2024.json"
    cards = json.loads(shipped.read_text(encoding="utf-8"))["cards"]
    for name, card in zip(("card_1", "card_2", "card_3"), _first_cards(cards), strict=True):
        (work / f"{name}.json").write_text(json.dumps(card), encoding="utf-8")


def _first_cards(cards) -> list:
    """The shipped reference cards in their file's order (the first three)."""
    return list(cards.values())[:3] if isinstance(cards, dict) else list(cards)[:3]


MT = "{examples}/mtbench_gpt4_vs_vicuna.jsonl"
# (name, arguments, expected exit code); each prints one document on stdout. Order matters: the runs come first.
CASES: list[tuple[str, list[str], int]] = [
    ("run_biased.json", ["run", "run_biased.yaml", "--no-progress", "-f", "json"], 0),
    ("run_longer.json", ["run", "run_longer.yaml", "--no-progress", "-f", "json"], 0),
    ("runs.json", ["runs", "--store", "runs.db", "-f", "json"], 0),
    ("history.json", ["history", "--store", "runs.db", "-f", "json"], 0),
    ("compare.json", ["compare", "1", "2", "--store", "runs.db", "-f", "json"], 0),
    ("analyze_mtbench.json", ["analyze", MT, "-f", "json"], 0),
    ("analyze_mtbench_streaming.json", ["analyze", MT, "-f", "json", "--engine", "streaming"], 0),
    ("analyze_mtbench_pair.json", ["analyze", MT, "-f", "json", "--a", "gpt-4", "--b", "vicuna-13b-v1.3",
                                   "--tie-policy", "exclude"], 0),
    ("analyze_mt3.json", ["analyze", "mt3.jsonl", "-f", "json"], 1),
    ("analyze_mt3_streaming.json", ["analyze", "mt3.jsonl", "-f", "json", "--engine", "streaming"], 1),
    ("analyze_llm.json", ["analyze", "llm_two.jsonl", "-f", "json", "--a", "output_1", "--b", "output_2"], 0),
    ("analyze_llm_streaming.json", ["analyze", "llm_two.jsonl", "-f", "json", "--a", "output_1", "--b",
                                    "output_2", "--engine", "streaming"], 0),
    ("rank_mtbench.json", ["rank", MT, "-f", "json", "--bootstrap", "50", "--seed", "3"], 0),
    ("rank_mtbench_calls.json", ["rank", MT, "-f", "json", "--bootstrap", "0", "--outcome", "calls",
                                 "--model", "davidson"], 0),
    ("rank_mtbench_streaming.json", ["rank", MT, "-f", "json", "--bootstrap", "50", "--seed", "3",
                                     "--engine", "streaming"], 0),
    ("calc.json", ["calc", "--pairs", "2400", "--consistent", "1957", "--to-first", "198", "--to-second", "245",
                   "--margin", "0.12", "-f", "json"], 0),
    ("segments_mtbench.json", ["segments", MT, "--by", "task", "-f", "json"], 0),
    ("segments_mtbench_streaming.json", ["segments", MT, "--by", "task", "-f", "json", "--engine", "streaming"], 0),
    ("agreement_llm.json", ["agreement", "llm_two.jsonl", "-f", "json"], 0),
    ("agreement_llm_streaming.json", ["agreement", "llm_two.jsonl", "-f", "json", "--engine", "streaming"], 0),
    ("calibrate_llm.json", ["calibrate", "llm_biased.jsonl", "--human", "people.jsonl", "--a", "output_1",
                            "--b", "output_2", "-f", "json", "--min-consistency", "0.5"], 0),
    ("calibrate_llm_streaming.json", ["calibrate", "llm_biased.jsonl", "--human", "people.jsonl", "--a",
                                      "output_1", "--b", "output_2", "-f", "json", "--min-consistency", "0.5",
                                      "--engine", "streaming"], 0),
    ("probe_length.json", ["probe", "length", "llm_two.jsonl", "--pairs", "pairs.jsonl", "--judge", "longer",
                           "--a", "output_1", "--b", "output_2", "-f", "json"], 0),
    ("probe_repeat.json", ["probe", "repeat", "repeat.jsonl", "--judge", "gpt-4-0613", "--seed", "1",
                           "-f", "json"], 0),
    ("panel_mt3.json", ["panel", "mt3.jsonl", "-f", "json"], 0),
    ("variants_mt3.json", ["variants", "mt3.jsonl", "--judge", "gpt-4-0613", "--judge", "gemini-pro",
                           "-f", "json"], 0),
    ("report_mtbench.md", ["report", MT, "--markdown", "-", "--segment", "task"], 0),
    ("report_mtbench_streaming.md", ["report", MT, "--markdown", "-", "--segment", "task",
                                     "--engine", "streaming"], 0),
    ("report_llm.md", ["report", "llm_two.jsonl", "--markdown", "-", "--a", "output_1", "--b", "output_2",
                       "--human", "people.jsonl", "--pairs", "pairs.jsonl"], 0),
    ("report_llm_streaming.md", ["report", "llm_two.jsonl", "--markdown", "-", "--a", "output_1", "--b",
                                 "output_2", "--human", "people.jsonl", "--engine", "streaming"], 0),
    ("report_store.md", ["report", "runs.db", "--markdown", "-", "--run", "1"], 0),
    ("plan_expect.json", ["plan", "decision.yaml", "--expect", "0.6", "--splits", "0.3", "--simulations", "200",
                          "--seed", "1", "-f", "json"], 0),
    ("plan_pilot.json", ["plan", "decision_mt.yaml", "--pilot", MT, "--simulations", "200", "--seed", "1",
                         "-f", "json"], 0),
    ("decide_llm.json", ["decide", "decision.yaml", "llm_two.jsonl", "--store", "ledger.db", "-f", "json"], 3),
    ("decide_mt.json", ["decide", "decision_mt.yaml", MT, "--store", "ledger.db", "-f", "json"], 0),
    ("card_compare_published.json", ["card", "--compare", "card_1.json", "card_2.json", "card_3.json",
                                     "-f", "json"], 0),
]


def normalise(text: str, work: Path) -> str:
    """The command's output with only what legitimately varies replaced: the work directory and the repository's
    paths, clock times, the version, and hashes of absolute paths."""
    text = text.replace(str(work), "<work>").replace(str(ROOT), "<root>")
    text = _SETTINGS_RE.sub(lambda m: m.group(1) + '"<varies>"' + m.group(2) + '"<varies>"', text)
    text = _GENERATED_RE.sub("generated <varies>", text)
    return _VARYING_RE.sub(lambda m: m.group(1) + '"<varies>"', text)


def run_case(src: Path, work: Path, args: list[str]) -> subprocess.CompletedProcess:
    """One command of the given source tree, in the work directory, as a user runs it."""
    fill = {"examples": str(EXAMPLES), "src": str(src)}
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "120", "NO_COLOR": "1", "TZ": "UTC"}
    argv = [sys.executable, "-m", "swapjudge", *[a.format(**fill) for a in args]]
    return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=300)


def run_all(src: Path, work: Path) -> dict[str, tuple[int, str, str]]:
    """Every case in order (the runs first: history, compare and the store's report read their store)."""
    build_inputs(work)
    out = {}
    for name, args, _ in CASES:
        done = run_case(src, work, args)
        out[name] = (done.returncode, normalise(done.stdout, work), done.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="the source tree (its src/) whose outputs are kept")
    args = parser.parse_args()
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        results = run_all(args.src.resolve(), Path(tmp))
    for name, _, code in CASES:
        rc, stdout, stderr = results[name]
        if rc != code or not stdout.strip():
            raise SystemExit(f"{name}: exit {rc} (expected {code}), stderr: {stderr.strip()[-400:]}")
        (GOLDEN / name).write_text(stdout, encoding="utf-8")
        print(f"{name}: exit {rc}, {len(stdout)} characters")


if __name__ == "__main__":
    main()
