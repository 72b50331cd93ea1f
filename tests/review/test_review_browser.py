"""The review page in a real headless Chromium (the Debian package), driven with the keyboard through the Chrome
DevTools Protocol by Playwright, against the real server in a subprocess: 20 votes with one undo, exported in the
orders shown; hostile answers render inert; no system name ever reaches the browser."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from review_server import ENV, ReviewServer, write_pairs

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")

SYSTEMS = ("sysALPHA", "sysBETA")  # names that must never reach the browser
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE = [
    "<script>window.__pwned = 'script'; document.title = 'pwned'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'; document.title = 'pwned'\">",
    "<a href=\"javascript:window.__pwned = 'link'\" id=\"evil\">click me</a>",
    "<svg onload=\"window.__pwned = 'svg'\"></svg><iframe src=\"javascript:parent.__pwned='iframe'\"></iframe>",
]
KEYS = {"1": "first", "2": "second", "t": "tie", "b": "tie"}
CHOICE_OF_KEY = {"1": "1", "2": "2", "t": "tie", "b": "both_bad"}


def chromium() -> str:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found is None:
        pytest.fail("headless browser missing: `chromium` is not on PATH (run `make .chromium`, or "
                    "apt-get install -y chromium)")
    return found


def _items() -> list[dict[str, Any]]:
    items = []
    for i in range(20):
        answers = {SYSTEMS[0]: f"Reply of kind one to question {i}.", SYSTEMS[1]: f"Reply of kind two to question {i}."}
        if i < len(HOSTILE):
            answers[SYSTEMS[i % 2]] = HOSTILE[i]
        prompt = f"Question {i}: which reply is better?" if i != 4 else "<script>window.__pwned='prompt'</script>?"
        items.append({"item": f"q{i:02d}", "prompt": prompt, "answers": answers})
    return items


def _open(p: Any, profile: Path) -> Any:
    return p.chromium.launch_persistent_context(str(profile), executable_path=chromium(), headless=True,
                                                args=BROWSER_FLAGS, viewport={"width": 1280, "height": 800})


def wait_until(page: Any, expression: str, arg: Any = None, timeout: float = 15.0) -> None:
    """Poll `expression` (a function of `arg`) through CDP's evaluate: Playwright's wait_for_function evaluates
    a string with eval when it polls, which the page's Content-Security-Policy rightly refuses."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} s: {expression}")
        time.sleep(0.02)


def _wait_for_task_change(page: Any, previous: str) -> None:
    wait_until(page, "prev => !document.body.dataset.busy && document.body.dataset.task !== prev "
                     "&& document.body.dataset.state !== 'loading'", previous)


def test_twenty_keyboard_votes_with_one_undo_are_exported_in_the_orders_shown(tmp_path: Path) -> None:
    items = _items()
    pairs = write_pairs(tmp_path / "pairs.jsonl", items)
    text_to_system = {(it["item"], text): name for it in items for name, text in it["answers"].items()}
    prompt_to_item = {it["prompt"]: it["item"] for it in items}
    store = tmp_path / "review.db"
    bodies: list[str] = []
    problems: list[str] = []
    dialogs: list[str] = []
    with ReviewServer(pairs, store, ["alice"], "--seed", "7", "--reshow", "0") as srv, \
            playwright.sync_playwright() as p:
        context = _open(p, tmp_path / "profile")
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

        def keep(response: Any) -> None:
            with contextlib.suppress(Exception):  # a redirect or an aborted load has no body
                bodies.append(response.url + "\n" + response.text())

        page.on("response", keep)
        page.goto(srv.links["alice"])
        wait_until(page, "() => document.body.dataset.state === 'task'", timeout=15)
        assert page.title() == "swapjudge review"
        page.keyboard.press("?")
        assert page.is_visible("#help")
        page.keyboard.press("?")
        assert not page.is_visible("#help")

        keys = ["1", "2", "t", "b"] * 5
        final: dict[str, dict[str, Any]] = {}  # task -> what was on screen and the last key pressed for it
        n = 0
        while n < len(keys):
            task = page.evaluate("document.body.dataset.task")
            shown = {"prompt": page.text_content("#prompt"), "r1": page.text_content("#response_1"),
                     "r2": page.text_content("#response_2")}
            key = keys[n]
            page.keyboard.press(key)
            _wait_for_task_change(page, task)
            final[task] = {**shown, "key": key}
            n += 1
            if n == 7:  # one undo: the pair comes back, voted again with another key
                page.keyboard.press("u")
                _wait_for_task_change(page, page.evaluate("document.body.dataset.task"))
                assert page.evaluate("document.body.dataset.task") == task
                assert page.text_content("#count") == "6 / 20"
                page.keyboard.press("1" if key != "1" else "2")
                _wait_for_task_change(page, task)
                final[task]["key"] = "1" if key != "1" else "2"
        wait_until(page, "() => document.body.dataset.state === 'done'", timeout=15)
        assert page.text_content("#count") == "20 / 20"
        assert page.evaluate("window.__pwned === undefined") and page.title() == "swapjudge review"
        context.close()
    assert not dialogs and not problems, (dialogs, problems)
    assert len(final) == 20
    for body in bodies:  # HTML, JSON, script, style, URLs: not one system name
        assert not any(name in body for name in SYSTEMS), body[:300]

    out = tmp_path / "human.jsonl"
    subprocess.run([sys.executable, "-m", "swapjudge", "review", "export", "--store", str(store), "-o", str(out)],
                   check=True, env=ENV, capture_output=True)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 20
    by_task = {r["task"]: r for r in records}
    assert set(by_task) == set(final)
    for task, seen in final.items():
        record = by_task[task]
        item = prompt_to_item[seen["prompt"]]
        assert record["item"] == item
        assert record["first"] == text_to_system[(item, seen["r1"])]  # the order shown, mapped back
        assert record["second"] == text_to_system[(item, seen["r2"])]
        assert record["verdict"] == KEYS[seen["key"]] and record["choice"] == CHOICE_OF_KEY[seen["key"]]
        assert record["judge"] == "human:alice" and record["origin"] == "sample" and record["reshow"] is False


def test_hostile_answers_render_as_inert_text(tmp_path: Path) -> None:
    items = [{"item": f"x{i}", "prompt": HOSTILE[i], "answers": {SYSTEMS[0]: HOSTILE[i], SYSTEMS[1]: HOSTILE[-1 - i]}}
             for i in range(len(HOSTILE))]
    pairs = write_pairs(tmp_path / "pairs.jsonl", items)
    problems: list[str] = []
    with ReviewServer(pairs, tmp_path / "review.db", ["eve"], "--seed", "3", "--reshow", "0") as srv, \
            playwright.sync_playwright() as p:
        context = _open(p, tmp_path / "profile")
        page = context.new_page()
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("dialog", lambda d: (problems.append("dialog: " + d.message), d.dismiss()))
        page.goto(srv.links["eve"])
        wait_until(page, "() => document.body.dataset.state === 'task'", timeout=15)
        for _ in items:
            task = page.evaluate("document.body.dataset.task")
            texts = [page.text_content(sel) for sel in ("#prompt", "#response_1", "#response_2")]
            assert all(t in HOSTILE for t in texts)  # shown as the very characters of the answer
            injected = page.evaluate("document.querySelectorAll('#task script, #task img, #task a, #task svg, "
                                     "#task iframe').length")
            assert injected == 0
            page.click("#response_1")  # a click on the text runs nothing
            page.keyboard.press("1")
            _wait_for_task_change(page, task)
        assert page.evaluate("window.__pwned === undefined")
        assert page.title() == "swapjudge review"
        context.close()
    assert not problems, problems


def test_the_owners_status_page_renders_the_figures_without_a_system_name(tmp_path: Path) -> None:
    items = [{"item": f"q{i}", "prompt": f"p{i}", "answers": {SYSTEMS[0]: f"one {i}", SYSTEMS[1]: f"two {i}"}}
             for i in range(30)]
    pairs = write_pairs(tmp_path / "pairs.jsonl", items)
    judge = tmp_path / "judge.jsonl"
    with judge.open("w") as f:
        for i in range(30):
            for first, second in (SYSTEMS, SYSTEMS[::-1]):
                verdict = "first" if (first == SYSTEMS[0]) == (i % 3 != 0) else "second"
                f.write(json.dumps({"judge": "j", "item": f"q{i}", "first": first, "second": second,
                                    "verdict": verdict}) + "\n")
    problems: list[str] = []
    with ReviewServer(pairs, tmp_path / "review.db", ["ann", "ben"], "--seed", "1", "--overlap", "2",
                      "--reshow", "0.2", "--judge-records", str(judge)) as srv, playwright.sync_playwright() as p:
        for name in ("ann", "ben"):
            with srv.client(name) as client:
                n = 0
                while (task := client.get("/api/next").json())["task"] is not None:
                    client.post("/api/vote", json={"task": task["task"], "choice": ("1", "2", "tie")[n % 3]})
                    n += 1
        context = _open(p, tmp_path / "profile")
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{srv.base}/status?token={srv.owner}")
        wait_until(page, "() => document.body.dataset.state === 'ready'", timeout=30)
        text = page.inner_text("body")
        rows = page.eval_on_selector_all("#reviewers tbody tr", "rows => rows.map(r => r.cells[0].textContent)")
        circles = page.eval_on_selector_all("#history circle", "c => c.length")
        html = page.content()
        context.close()
    assert not problems, problems
    assert rows == ["ann", "ben"] and "72 / 72" in text
    assert "corrected:" in text and circles >= 2
    assert not any(name in html for name in SYSTEMS)
