"""The review server as a real subprocess on 127.0.0.1, driven over HTTP: tokens, isolation between reviewers,
cross-site POSTs, the binding, a kill -9 mid-session and the restart, the status endpoint."""

from __future__ import annotations

import json
import random
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from review_server import ENV, ReviewServer, simple_pairs, vote, write_pairs
from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records
from swapjudge.reading.records import read_records

SECRET_A, SECRET_B = "sysALPHA", "sysBETA"


def _listening_addresses(port: int) -> set[str]:
    """The local addresses a socket on `port` listens on, read from the kernel's tables (/proc/net/tcp{,6})."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                if width == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1]))
                else:
                    raw = bytes.fromhex(address)
                    found.add(socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))))
    return found


@pytest.fixture
def server(tmp_path: Path):
    pairs = simple_pairs(tmp_path / "pairs.jsonl", 12, SECRET_A, SECRET_B)
    with ReviewServer(pairs, tmp_path / "review.db", ["alice", "bob"], "--seed", "5") as srv:
        yield srv


def test_no_token_or_a_wrong_token_is_401_and_says_nothing_about_the_pairs(server: ReviewServer) -> None:
    pair_words = ("Question", "answer", SECRET_A, SECRET_B, "q00")
    for path in ("/", "/status", "/api/next", "/api/status", "/static/review.js", "/nowhere"):
        for headers, params in (({}, {}), ({"Authorization": "Bearer wrong"}, {}), ({}, {"token": "wrong"})):
            reply = httpx.get(server.base + path, headers=headers, params=params)
            assert reply.status_code == 401, (path, headers, params)
            assert not any(word in reply.text for word in pair_words), reply.text
    for path in ("/api/vote", "/api/undo"):
        reply = httpx.post(server.base + path, json={"task": "x", "choice": "1"})
        assert reply.status_code == 401 and "answer" not in reply.text
    # the owner's token is not a reviewer's, and a reviewer's does not open the status
    with server.client("owner") as owner, server.client("alice") as alice:
        assert owner.get("/api/next").status_code == 403
        assert alice.get("/api/status").status_code == 403
        assert alice.get("/status").status_code == 403


def test_one_reviewer_can_neither_read_nor_vote_on_another_reviewers_tasks(server: ReviewServer) -> None:
    with server.client("alice") as alice, server.client("bob") as bob:
        a_task = alice.get("/api/next").json()
        b_task = bob.get("/api/next").json()
        assert a_task["task"] != b_task["task"]
        # bob tries alice's task: refused as unknown, and nothing is stored
        reply = vote(bob, a_task["task"], "1")
        assert reply.status_code == 404 and a_task["response_1"] not in reply.text
        assert alice.get("/api/next").json()["task"] == a_task["task"]
        assert alice.get("/api/next").json()["progress"]["done"] == 0
        # bob's undo never touches alice's vote
        assert vote(alice, a_task["task"], "2").status_code == 200
        undone = bob.post("/api/undo", json={}).json()
        assert undone["undone"] is None
        assert alice.get("/api/next").json()["progress"]["done"] == 1
        # every reply to bob only ever holds bob's own tasks
        seen = set()
        while (task := bob.get("/api/next").json())["task"] is not None:
            seen.add(task["task"])
            assert vote(bob, task["task"], "tie").status_code == 200
        assert a_task["task"] not in seen


def test_a_cross_site_post_is_refused_and_stores_nothing(server: ReviewServer) -> None:
    token = server.tokens["alice"]
    with server.client("alice") as alice:
        task = alice.get("/api/next").json()["task"]
    body = {"task": task, "choice": "1"}
    auth = {"Authorization": f"Bearer {token}"}
    # what a form on another site sends: form encoding, the other site as Origin, Sec-Fetch-Site cross-site
    form = httpx.post(f"{server.base}/api/vote?token={token}", data=body,
                      headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert form.status_code == 403
    assert httpx.post(f"{server.base}/api/vote", json=body,
                      headers={**auth, "Origin": "https://evil.example"}).status_code == 403
    assert httpx.post(f"{server.base}/api/vote", json=body,
                      headers={**auth, "Sec-Fetch-Site": "same-site"}).status_code == 403
    # a form with the token but without those headers is still refused: it cannot send JSON
    assert httpx.post(f"{server.base}/api/vote?token={token}", data=body).status_code == 415
    assert httpx.post(f"{server.base}/api/vote", content="task=x", headers={**auth, "Content-Type": "text/plain"}
                      ).status_code == 415
    # a name rebound to 127.0.0.1 by another site: its Host is not answered
    assert httpx.post(f"{server.base}/api/vote", json=body, headers={**auth, "Host": "evil.example"}
                      ).status_code == 400
    with server.client("alice") as alice:
        assert alice.get("/api/next").json()["progress"]["done"] == 0
        # the same request from the page itself goes through
        same = alice.post("/api/vote", json=body, headers={"Origin": server.base, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 200 and same.json()["progress"]["done"] == 1


def test_answers_carry_a_strict_content_security_policy(server: ReviewServer) -> None:
    page = httpx.get(server.links["alice"])
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"
    assert "<script>" not in page.text  # no inline script: the CSP would refuse it anyway
    for reply in (httpx.get(server.base + "/api/next"), httpx.get(server.base + "/static/review.js",
                                                                  params={"token": server.tokens["bob"]})):
        assert reply.headers["content-security-policy"] == csp


def test_binds_127_0_0_1_by_default_and_says_so_when_it_does_not(tmp_path: Path) -> None:
    pairs = simple_pairs(tmp_path / "pairs.jsonl", 4)
    with ReviewServer(pairs, tmp_path / "review.db", ["alice"]) as srv:
        assert srv.base.startswith("http://127.0.0.1:")
        assert _listening_addresses(srv.port) == {"127.0.0.1"}
        assert not any("network" in line for line in srv.stderr_lines)
    with ReviewServer(pairs, tmp_path / "review2.db", ["alice"], "--host", "0.0.0.0") as srv:
        assert _listening_addresses(srv.port) == {"0.0.0.0"}
        assert any("can be reached from the network" in line for line in srv.stderr_lines)


def test_kill_9_mid_session_loses_no_acknowledged_vote_and_duplicates_none(tmp_path: Path) -> None:
    pairs = simple_pairs(tmp_path / "pairs.jsonl", 300)
    store = tmp_path / "review.db"
    names = [f"r{i}" for i in range(6)]
    srv = ReviewServer(pairs, store, names, "--seed", "11", "--reshow", "0.2").start()
    acknowledged: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    stop = threading.Event()

    def reviewer(name: str) -> None:
        rng = random.Random(name)
        with srv.client(name) as client:
            while not stop.is_set():
                try:
                    task = client.get("/api/next").json()["task"]
                    if task is None:
                        return
                    choice = rng.choice(["1", "2", "tie", "both_bad"])
                    reply = vote(client, task, choice)
                except httpx.TransportError:
                    return  # the server is gone: this vote was never acknowledged
                if reply.status_code == 200:
                    acknowledged[name].append((task, choice))

    threads = [threading.Thread(target=reviewer, args=(n,)) for n in names]
    for t in threads:
        t.start()
    while sum(len(v) for v in acknowledged.values()) < 150:
        threading.Event().wait(0.01)
    srv.kill()  # mid-session, with votes in flight
    stop.set()
    for t in threads:
        t.join(timeout=30)
    acked = {task: choice for votes in acknowledged.values() for task, choice in votes}
    assert len(acked) >= 150

    db = sqlite3.connect(store)
    stored = db.execute("SELECT task, choice FROM votes WHERE undone_at IS NULL").fetchall()
    db.close()
    tasks = [t for t, _ in stored]
    assert len(tasks) == len(set(tasks))  # no task voted twice
    assert {t: c for t, c in stored if t in acked} == acked  # every acknowledged vote, as acknowledged
    assert len(stored) - len(acked) <= len(names)  # at most the votes in flight, one per reviewer

    # restart on the same store: same links, each reviewer resumes at their first unvoted task
    again = ReviewServer(pairs, store, names, "--seed", "11", "--reshow", "0.2").start()
    try:
        assert again.tokens == srv.tokens
        assert any("resumed" in line for line in again.stderr_lines)
        with again.client(names[0]) as client:
            nxt = client.get("/api/next").json()
            assert nxt["task"] not in {t for t, _ in stored}
            # a vote re-sent after the crash (its answer was lost) is recognised, not stored twice
            last_task, last_choice = acknowledged[names[0]][-1]
            repeat = vote(client, last_task, last_choice)
            assert repeat.status_code == 200 and repeat.json()["repeated"] is True
            other = {"1": "2", "2": "1", "tie": "1", "both_bad": "1"}[last_choice]
            assert vote(client, last_task, other).status_code == 409
            assert vote(client, nxt["task"], "1").status_code == 200
    finally:
        again.stop()
    db = sqlite3.connect(store)
    tasks = [t for (t,) in db.execute("SELECT task FROM votes WHERE undone_at IS NULL")]
    db.close()
    assert len(tasks) == len(set(tasks)) == len(stored) + 1


def test_a_restart_with_other_options_is_refused(tmp_path: Path) -> None:
    pairs = simple_pairs(tmp_path / "pairs.jsonl", 6)
    with ReviewServer(pairs, tmp_path / "review.db", ["alice"], "--seed", "1"):
        pass
    done = subprocess.run([sys.executable, "-m", "swapjudge", "review", "serve", str(pairs), "--store",
                           str(tmp_path / "review.db"), "--reviewers", "alice", "--port", "0", "--reshow", "0.5"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == 2
    assert "reshow" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_next_vote_undo_cycle_and_bad_requests(server: ReviewServer) -> None:
    with server.client("alice") as alice:
        first = alice.get("/api/next").json()
        assert set(first) == {"task", "prompt", "response_1", "response_2", "progress"}
        assert first["progress"] == {"done": 0, "total": first["progress"]["total"]}
        assert alice.post("/api/vote", json={"task": first["task"], "choice": "maybe"}).status_code == 400
        assert alice.post("/api/vote", json={"choice": "1"}).status_code == 400
        assert alice.post("/api/vote", content=b"{not json", headers={"Content-Type": "application/json"}
                          ).status_code == 400
        assert vote(alice, first["task"], "1").json()["progress"]["done"] == 1
        second = alice.get("/api/next").json()
        assert second["task"] != first["task"]
        undone = alice.post("/api/undo", json={}).json()
        assert undone == {"ok": True, "undone": first["task"], "progress": {"done": 0,
                                                                             "total": first["progress"]["total"]}}
        assert alice.get("/api/next").json()["task"] == first["task"]  # the undone pair comes back
        assert alice.post("/api/vote", json={"task": first["task"], "choice": 2}).json()["choice"] == "2"


def test_status_reports_each_reviewers_consistency_as_analyze_does(tmp_path: Path) -> None:
    items = [{"item": f"q{i}", "prompt": f"p{i}", "answers": {SECRET_A: f"a{i}", SECRET_B: f"b{i}"}}
             for i in range(40)]
    pairs = write_pairs(tmp_path / "pairs.jsonl", items)
    judge = []
    for i in range(40):  # a judge that prefers alpha on even items and flips on every fifth
        winner = SECRET_A if i % 2 == 0 else SECRET_B
        v1 = "first" if winner == SECRET_A else "second"
        v2 = "second" if winner == SECRET_A else "first"
        if i % 5 == 0:
            v2 = {"first": "second", "second": "first"}[v2]
        judge += [{"judge": "j", "item": f"q{i}", "first": SECRET_A, "second": SECRET_B, "verdict": v1},
                  {"judge": "j", "item": f"q{i}", "first": SECRET_B, "second": SECRET_A, "verdict": v2}]
    records = tmp_path / "judge.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in judge))
    with ReviewServer(pairs, tmp_path / "review.db", ["alice", "bob"], "--seed", "2", "--reshow", "0.5",
                      "--overlap", "2", "--judge-records", str(records)) as srv:
        for name in ("alice", "bob"):
            with srv.client(name) as client:
                rng = random.Random(name)
                while (task := client.get("/api/next").json())["task"] is not None:
                    vote(client, task["task"], rng.choice(["1", "2", "1", "tie"]))
        with srv.client("owner") as owner:
            status = owner.get("/api/status").json()
            page = owner.get("/status")
        export = tmp_path / "human.jsonl"
        # the export is not the claim: the same command in this process, beside the running server
        done = CliRunner().invoke(app, ["review", "export", "--store", str(tmp_path / "review.db"), "-o", str(export)],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.output
    assert SECRET_A not in json.dumps(status) and SECRET_B not in json.dumps(status)
    assert SECRET_A not in page.text
    loaded = read_records(export, allow_unpaired=True)
    for row in status["reviewers"]:
        expected = analyze_records(loaded, judge=f"human:{row['reviewer']}")[0]
        assert row["votes"] == row["total"] == 60  # 40 pairs each (overlap 2) + 20 re-shows
        assert row["reshown_pairs"] == expected.outcomes.complete == 20
        assert row["consistency"]["rate"] == pytest.approx(expected.consistency.rate)
        assert row["consistency"]["low"] == pytest.approx(expected.consistency.low)
        assert row["agreement_with_judge"] is not None
    assert status["between_reviewers"][0]["kappa"]["items"] == 40
    assert status["calibration"]["n_human"] == 40 and status["calibration"]["n_judge"] == 40
    history = status["calibration_history"]
    assert history[-1]["votes"] == 120 and history[0]["votes"] < history[-1]["votes"]
