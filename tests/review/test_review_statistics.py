"""What the export is worth to the statistics, against seeded simulations whose truth is known: each reviewer's
swap-consistency and flip direction from the re-shows, the corrected win rate's coverage from the random
sample, and the queue kept out of it. Votes go through the real store (a real SQLite file) and the real export."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from review_server import ENV
from swapjudge.core.analysis import analyze_records
from swapjudge.core.policy import Gate
from swapjudge.probes.calibrate import calibrate_records
from swapjudge.reading.pairs_file import PairItem
from swapjudge.reading.records import read_records, records_from_dicts
from swapjudge.review.assign import plan_review
from swapjudge.review.export import export_review, review_records
from swapjudge.review.queue import unsettled_pairs
from swapjudge.review.votes import ReviewStore

A, B = "sysA", "sysB"
# picks a name on screen: Response 1 or 2 or no preference, given which system sits in slot 1
Reviewer = Callable[[str, str, np.random.Generator], str]


@contextlib.contextmanager
def fast_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs when there is one: the simulations commit thousands of votes, and each commit's fsync
    on a disk costs milliseconds (the store's durability is tested on disk elsewhere)."""
    shm = Path("/dev/shm")
    if shm.is_dir():
        with tempfile.TemporaryDirectory(dir=shm) as folder:
            yield Path(folder)
    else:
        yield tmp_path


def items_of(n: int) -> list[PairItem]:
    return [PairItem(f"q{i}", f"prompt {i}", {A: f"text a {i}", B: f"text b {i}"}, None, i + 1) for i in range(n)]


def review(store: Path, items: list[PairItem], reviewers: dict[str, Reviewer], rng: np.random.Generator,
           **plan_options: object) -> None:
    """Every reviewer votes on all their tasks through the store, reading only the texts shown."""
    plan = plan_review(items, list(reviewers), **plan_options)  # type: ignore[arg-type]
    opened, _ = ReviewStore.create_or_resume(store, lambda: plan, {})
    system_of = {(it.prompt, text): name for it in items for name, text in it.answers.items()}
    try:
        for name, decide in reviewers.items():
            while (task := opened.next_task(name)) is not None:
                first = system_of[(task.prompt, task.response_1)]
                second = system_of[(task.prompt, task.response_2)]
                opened.vote(name, task.task, decide(first, second, rng))
    finally:
        opened.close()


def truthful(q: float, truth: Callable[[int], str] = lambda i: A) -> Reviewer:
    """Names the better system (always A here) with probability q in every call, whatever the order."""
    def decide(first: str, second: str, rng: np.random.Generator) -> str:
        better = A
        pick = better if rng.random() < q else (B if better == A else A)
        return "1" if pick == first else "2"
    return decide


def slot_one_leaning(bias: float) -> Reviewer:
    """Picks Response 1 with probability `bias` whatever it shows, otherwise the better system (A)."""
    def decide(first: str, second: str, rng: np.random.Generator) -> str:
        if rng.random() < bias:
            return "1"
        return "1" if first == A else "2"
    return decide


def test_reshows_measure_each_reviewers_consistency_and_lean_like_a_judges(tmp_path: Path) -> None:
    with fast_folder(tmp_path) as folder:
        store = folder / "review.db"
        review(store, items_of(600), {"fair": truthful(0.9), "leaning": slot_one_leaning(0.3)},
               np.random.default_rng(3), seed=3, reshow=1.0, overlap=2)
        out = tmp_path / "human.jsonl"
        assert export_review(store, out) == 2 * 1200
    records = [json.loads(line) for line in out.read_text().splitlines()]
    by_task = {r["task"]: r for r in records}
    for r in records:  # each re-show is its original in the swapped order
        if r["reshow"]:
            o = by_task[r["reshow_of"]]
            assert (o["item"], o["first"], o["second"]) == (r["item"], r["second"], r["first"])
    loaded = read_records(out, allow_unpaired=True)
    # 99.9% intervals: a seeded draw outside a 95% one is a 1-in-20 event, not a defect
    fair, leaning = (analyze_records(loaded, judge=f"human:{name}", confidence=0.999)[0]
                     for name in ("fair", "leaning"))
    # truth: a call names A with probability 0.9 in either order, so consistency is 0.9^2 + 0.1^2 = 0.82
    assert fair.outcomes.complete == 600 and fair.consistency is not None
    assert fair.consistency.low < 0.82 < fair.consistency.high
    assert fair.flip_direction.p_value > 0.01
    # truth: with A in slot 2 the slot-1 lean names B with probability 0.3: consistency 0.7, every flip toward 1
    assert leaning.consistency is not None and leaning.consistency.low < 0.70 < leaning.consistency.high
    assert leaning.flip_direction.first_share == 1.0 and leaning.flip_direction.p_value < 1e-6


def test_the_export_of_a_partial_reshow_is_analysed_as_it_is(tmp_path: Path) -> None:
    """Pairs a reviewer saw once are single-order by design: `analyze` of the export needs no --allow-unpaired,
    counts them as incomplete and says why; consistency comes from the re-shown pairs alone."""
    with fast_folder(tmp_path) as folder:
        store = folder / "review.db"
        review(store, items_of(80), {"ann": truthful(0.9)}, np.random.default_rng(5), seed=5, reshow=0.25)
        out = tmp_path / "human.jsonl"
        export_review(store, out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    reshown = sum(r["reshow"] for r in records)
    assert reshown == 20 and {r["registered_reshow"] for r in records} == {0.25}
    done = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(out), "--format", "json"],
                          capture_output=True, text=True, env=ENV)
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert result["judge"] == "human:ann"
    assert result["pairs"] == {"total": 80, "complete": 20, "incomplete": 60}
    assert result["consistency"]["pairs"] == 20
    assert any("re-showed a share 0.25" in note and "60 pair(s) shown once by design" in note
               for note in result["notes"])


def _judge_records(items: list[PairItem], p: np.ndarray, rng: np.random.Generator, shift: float) -> list[dict]:
    """A judge that names A with probability p + shift in each order (biased toward A by `shift`)."""
    rows = []
    for it, pi in zip(items, p, strict=True):
        q = min(1.0, pi + shift)
        for first, second in ((A, B), (B, A)):
            pick = A if rng.random() < q else B
            rows.append({"judge": "j", "item": it.item, "first": first, "second": second,
                         "verdict": "first" if pick == first else "second"})
    return rows


def _person(first: str, p_a: float, rng: np.random.Generator) -> str:
    """Both bad 10% of the time, else names A with probability p_a, whichever slot A is in."""
    if rng.random() < 0.1:
        return "both_bad"
    pick = A if rng.random() < p_a else B
    return "1" if pick == first else "2"


def test_calibrate_on_the_export_of_simulated_reviewers_reaches_nominal_coverage(tmp_path: Path) -> None:
    """People name A on item i with probability p_i (p_i ~ Beta(3, 2), both bad 10% of the time): the people's
    win rate of A is 0.9 * 0.6 + 0.1 * 0.5 = 0.59 on the item population. The judge leans toward A by 0.15. Each
    replication draws new items, a seeded sample of 60 of 200 for two reviewers (overlap 1, 10% re-shown), and
    asks calibrate for the 95% interval: it must cover 0.59 about 95% of the time."""
    truth, n_items, n_sample, replications = 0.9 * 0.6 + 0.1 * 0.5, 200, 60, 200
    covered = judge_covered = 0
    with fast_folder(tmp_path) as folder:
        for rep in range(replications):
            rng = np.random.default_rng(1000 + rep)
            items = items_of(n_items)
            p = rng.beta(3, 2, size=n_items)
            prob = dict(zip((it.prompt for it in items), p, strict=True))
            store = folder / f"r{rep}.db"
            plan = plan_review(items, ["ann", "ben"], seed=rep, sample=n_sample, reshow=0.1)
            opened, _ = ReviewStore.create_or_resume(store, lambda plan=plan: plan, {})
            for name in ("ann", "ben"):
                while (task := opened.next_task(name)) is not None:
                    first = A if task.response_1.startswith("text a") else B
                    opened.vote(name, task.task, _person(first, prob[task.prompt], rng))
            opened.close()
            human = records_from_dicts(review_records(store), allow_unpaired=True).frame
            judged = records_from_dicts(_judge_records(items, p, rng, 0.15)).frame
            result = calibrate_records(judged, human, A, B, gate=Gate(0.7, True, None))
            covered += result.ppi.corrected.low <= truth <= result.ppi.corrected.high
            judge_covered += result.ppi.judge_only.low <= truth <= result.ppi.judge_only.high
    print(f"coverage of the corrected interval: {covered / replications:.3f}; of the judge's own: "
          f"{judge_covered / replications:.3f}")
    assert binomtest(covered, replications, 0.95).pvalue > 0.01, covered / replications
    assert judge_covered / replications < 0.5  # the simulation has teeth: the judge's own interval misses


def test_the_export_keeps_the_sample_apart_from_the_queue_and_calibrate_uses_the_sample_only(tmp_path: Path):
    items = items_of(80)
    rng = np.random.default_rng(8)
    p = np.full(80, 0.7)
    judge_rows = _judge_records(items, p, rng, 0.0)
    judge_file = tmp_path / "judge.jsonl"
    judge_file.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    queue = unsettled_pairs(read_records(judge_file), judge="j")
    assert len(queue) > 10
    store = tmp_path / "review.db"
    review(store, items, {"ann": truthful(0.8)}, rng, seed=4, sample=30, queue=queue, reshow=0.0)
    everything, sample_only = tmp_path / "all.jsonl", tmp_path / "sample.jsonl"
    export_review(store, everything)
    export_review(store, sample_only, origin="sample")
    records = [json.loads(line) for line in everything.read_text().splitlines()]
    origins = {r["item"]: r["origin"] for r in records}
    queued = {item for item, _, _ in queue}
    # a queue pair the sample drew is a sample pair; every other queue pair is labelled queue
    assert {i for i, o in origins.items() if o == "queue"} == queued - {i for i, o in origins.items() if o == "sample"}
    assert sum(o == "sample" for o in origins.values()) == 30
    assert [r["origin"] for r in records] == sorted((r["origin"] for r in records), key=lambda o: o != "queue")

    def corrected(path: Path) -> dict:
        done = subprocess.run([sys.executable, "-m", "swapjudge", "calibrate", str(judge_file), "--human", str(path),
                               "--a", A, "--b", B, "--format", "json"], capture_output=True, text=True, env=ENV)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    full, sample = corrected(everything), corrected(sample_only)
    assert full["corrected"] == sample["corrected"] and full["n_human"] == sample["n_human"] == 30
    assert any("priority queue" in note for note in full["notes"])
    assert not any("priority queue" in note for note in sample["notes"])


@pytest.mark.parametrize("fmt", ["label-studio", "langsmith"])
def test_foreign_exports_hold_every_vote_in_the_order_shown(tmp_path: Path, fmt: str) -> None:
    store = tmp_path / "review.db"
    review(store, items_of(12), {"ann": truthful(0.7), "ben": truthful(0.7)}, np.random.default_rng(2),
           seed=2, reshow=0.25)
    records = review_records(store)
    out = tmp_path / "out.json"
    assert export_review(store, out, format=fmt) == len(records)
    if fmt == "label-studio":
        tasks = json.loads(out.read_text())
        assert len(tasks) == len(records)
        for task, record in zip(tasks, records, strict=True):
            assert (task["data"]["first_id"], task["data"]["second_id"]) == (record["first"], record["second"])
            assert task["data"]["response_1"] == f"text {record['first'][-1].lower()} {record['item'][1:]}"
            result = task["annotations"][0]["result"][0]
            assert result["type"] == "pairwise"  # truthful() never says tie
            assert result["value"]["selected"] == {"first": "left", "second": "right"}[record["verdict"]]
    else:
        examples = [json.loads(line) for line in out.read_text().splitlines()]
        for example, record in zip(examples, records, strict=True):
            assert example["metadata"]["first"] == record["first"]
            assert example["outputs"]["preference"] == {"first": "response_1", "second": "response_2"}[
                record["verdict"]]
            winner = record["first"] if record["verdict"] == "first" else record["second"]
            assert example["feedback"]["scores"][winner] == 1.0
