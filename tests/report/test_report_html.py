"""The HTML report, rendered in a real headless Chromium: real Shi et al. data, escaping of hostile text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from conftest import pair, shared_data, shi2024_records, write_jsonl
from swapjudge.cli import app
from swapjudge.report.wording import interval, pct

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--enable-logging=stderr",
                  "--v=0"]
HOSTILE = "<script>document.title='pwned';document.documentElement.setAttribute('data-pwned','1')</script></table>"


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("headless browser missing: `chromium` is not on PATH (run `make .chromium`, or "
                    "apt-get install -y chromium)")
    return found


def render(page: Path, tmp_path: Path, *, screenshot: Path | None = None) -> tuple[str, str]:
    """Load the page in a fresh headless Chromium profile; the DOM after scripts ran, and the browser's log."""
    profile = tmp_path / f"profile-{page.stem}-{'shot' if screenshot else 'dom'}"
    profile.mkdir()
    args = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    if screenshot is None:
        args += ["--dump-dom"]
    else:
        args += ["--window-size=1280,2400", f"--screenshot={screenshot}"]
    done = subprocess.run([*args, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def console_problems(log: str) -> list[str]:
    """Console errors, uncaught exceptions and blocked content in Chromium's log."""
    return [line for line in log.splitlines()
            if "Uncaught" in line or "Refused to" in line or ("CONSOLE" in line and "ERROR" in line)]


class Figures(HTMLParser):
    """Collects every `data-figure` element: its value attribute and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, list[tuple[str | None, str]]] = {}
        self.root: dict[str, str | None] = {}
        self.scripts = 0
        self.title = ""
        self._open: list[tuple[str, str | None, list[str]]] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.root = a
        if tag == "script":
            self.scripts += 1
        self._in_title = tag == "title"
        if "data-figure" in a:
            self._open.append((a["data-figure"] or "", a.get("data-value"), []))
        elif self._open:
            self._open.append(("", None, []))

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False
        if self._open:
            name, value, text = self._open.pop()
            if self._open:
                self._open[-1][2].extend(text)
            if name:
                self.figures.setdefault(name, []).append((value, "".join(text)))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._open:
            self._open[-1][2].append(data)


def parse(dom: str) -> Figures:
    parser = Figures()
    parser.feed(dom)
    return parser


def mtbench_records(tmp_path: Path) -> Path:
    """gpt-4-0613 on MT-Bench from the Shi et al. CSV, with the judge's full replies joined in as `raw`."""
    raw = {}
    with shared_data("shi2024", "MTBench__gpt-4-0613__raw_judgments.jsonl").open() as f:
        for line in f:
            o = json.loads(line)
            raw[(o["question_id"], o["model_first"], o["model_second"])] = o["raw_judgment"]
    rows = shi2024_records("MTBench", "gpt-4-0613")
    for r in rows:
        r["raw"] = raw[(r["item"], r["first"], r["second"])]
    return write_jsonl(tmp_path / "mtbench_gpt4.jsonl", rows)


def run_cli(*args: str, ok: tuple[int, ...] = (0,)) -> Result:
    """The real CLI, in process (imports paid once): exit code, stdout and stderr."""
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code in ok, (done.exit_code, done.stderr, done.exception)
    return done


@pytest.mark.slow
def test_real_report_in_a_browser_matches_the_json_analysis(tmp_path: Path) -> None:
    records = mtbench_records(tmp_path)
    page, md = tmp_path / "report.html", tmp_path / "report.md"
    pick = ["--a", "gpt-4", "--b", "vicuna-13b-v1.3"]
    run_cli("report", str(records), "--html", str(page), "--markdown", str(md), *pick, "--segment", "task")
    expected = json.loads(run_cli("analyze", str(records), *pick, "--format", "json").stdout)

    dom, log = render(page, tmp_path)
    assert console_problems(log) == []
    doc = parse(dom)
    assert doc.root.get("data-script") == "ran"  # the page's own script ran (its CSP hash is right)
    assert doc.root.get("data-js-errors") is None
    assert doc.scripts == 1

    def shown(name: str) -> tuple[str | None, str]:
        [(value, text)] = doc.figures[name]
        return value, text

    cons, flips, win = expected["consistency"], expected["flip_direction"], expected["win_rate"]
    for name, exact in (("consistency.rate", cons["rate"]), ("flip_direction.first_share", flips["first_share"]),
                        ("flip_direction.p_value", flips["p_value"]), ("win_rate.value", win["value"]),
                        ("verdicts.first_slot_rate", expected["verdicts"]["first_slot_rate"]),
                        ("pairs.complete", expected["pairs"]["complete"])):
        value, _ = shown(name)
        assert value is not None and float(value) == pytest.approx(exact, rel=1e-12), name
    assert shown("consistency.rate")[1] == pct(cons["rate"])
    assert shown("consistency.interval")[1] == interval(cons["low"], cons["high"])
    assert shown("consistency.band")[1] == cons["band"]
    assert shown("win_rate.value")[1] == pct(win["value"])
    assert shown("win_rate.interval")[1] == interval(win["low"], win["high"])
    assert shown("flip_direction.interval")[1] == interval(flips["low"], flips["high"])
    assert shown("gate.passed")[1] == ("passed" if expected["gate"]["passed"] else "failed")
    [(_, sentence)] = doc.figures["headline"]
    assert f"gpt-4 scores {pct(win['value'])} (a split counts half) against vicuna-13b-v1.3" in sentence
    assert f"{pct(cons['rate'])} of {cons['pairs']} pairs" in sentence and "half" in sentence
    # every flipped or half-tied pair is in the page, with both raw replies, and the filter counted them
    o = expected["outcomes"]
    unsettled = o["flips_first"] + o["flips_second"] + o["half_ties_first"] + o["half_ties_second"]
    assert dom.count('<article class="pair') == unsettled
    assert f"{unsettled} of {unsettled} pairs shown" in dom
    assert dom.count("judge reply, gpt-4 in slot 1") == unsettled
    # one segment plot and a table row per MT-Bench task; the 31 systems' forest plot is the fifth plot
    assert dom.count("data:image/svg+xml;base64,") == 5 and 'alt="forest plot of the ranking"' in dom
    for task in ("coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing"):
        assert f"<td>{task}</td>" in dom
    summary = md.read_text()
    assert pct(win["value"]) in summary and interval(cons["low"], cons["high"]) in summary
    assert "| writing | 10 |" in summary

    shot = tmp_path / "report.png"
    _, log = render(page, tmp_path, screenshot=shot)
    assert console_problems(log) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


@pytest.mark.slow
def test_hostile_text_shows_as_text_and_no_script_runs(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for i, (va, vb) in enumerate([("first", "first"), ("tie", "second"), ("first", "second"), ("second", "first")]):
        extra = {"first_text": HOSTILE, "second_text": "<img src=x onerror=\"document.title='img'\">",
                 "raw": f"reply {i}: {HOSTILE}", "task": "<b>seg</b></td>"}
        rows += pair(f"<i>{i}</i>", va, vb, a="<u>sysA</u>", b="sysB&co", judge="j<script>", **extra)
    records = write_jsonl(tmp_path / "hostile.jsonl", rows)
    page = tmp_path / "hostile.html"
    run_cli("report", str(records), "--html", str(page), "--segment", "task", ok=(0, 1))
    dom, log = render(page, tmp_path)
    doc = parse(dom)
    assert console_problems(log) == []
    assert doc.root.get("data-pwned") is None and doc.root.get("data-js-errors") is None
    assert doc.root.get("data-script") == "ran"
    assert doc.title.startswith("swapjudge report")
    assert doc.scripts == 1 and "<img src=\"x\"" not in dom and "<u>" not in dom
    assert "&lt;script&gt;document.title='pwned'" in dom and "&lt;/table&gt;" in dom
    # two unsettled pairs, each showing the hostile text as x's answer and in both raw replies
    assert dom.count("&lt;script&gt;document.title=") == 2 * 3
    assert "&lt;u&gt;sysA&lt;/u&gt;" in dom and "sysB&amp;co" in dom


def test_report_needs_an_output_and_names_bad_input(tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "r.jsonl", pair(1, "first", "second"))
    done = run_cli("report", str(records), ok=(2,))
    assert done.stderr.strip() == "error: nothing to write: give --html FILE and/or --markdown FILE"
    done = run_cli("report", str(records), "--markdown", str(tmp_path / "x.md"), "--segment", "nope", ok=(2,))
    assert done.stderr.strip().startswith("error: no field 'nope' in the records; fields: ")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item": 1, "first": "A", "second": "B", "verdict": "maybe"}) + "\n")
    done = run_cli("report", str(bad), "--html", str(tmp_path / "x.html"), ok=(2,))
    assert re.fullmatch(r"error: \S+bad\.jsonl:1: field `verdict`: unknown value \"maybe\".*", done.stderr.strip())
    assert not (tmp_path / "x.html").exists()


def test_failed_gate_still_writes_the_report_and_exits_1(tmp_path: Path) -> None:
    rows = [r for i in range(10) for r in pair(i, "first", "first")] + pair(10, "first", "second")
    records = write_jsonl(tmp_path / "r.jsonl", rows)
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    done = run_cli("report", str(records), "--html", str(page), "--markdown", str(md), ok=(1,))
    assert "gate: (unnamed judge): swap-consistency 9.1% is below the gate of 70%" in done.stderr
    html = page.read_text()
    assert 'class="headline failed"' in html and "No win rate" in html and "withheld" in html
    assert 'data-figure="win_rate.value"' not in html
    assert "FAILED" in md.read_text()


def test_missing_matplotlib_is_one_clear_line_and_markdown_still_works(tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "r.jsonl", [r for i in range(5) for r in pair(i, "first", "second")])
    blocked = ("import sys; sys.modules['matplotlib'] = None; sys.argv = ['swapjudge', *sys.argv[1:]]; "
               "from swapjudge.cli import main; main()")
    html = subprocess.run([sys.executable, "-c", blocked, "report", str(records), "--html", str(tmp_path / "r.html")],
                          capture_output=True, text=True)
    assert html.returncode == 2
    assert html.stderr.strip() == ("error: the HTML report draws its plots with matplotlib, which is not installed: "
                                   "pip install 'swapjudge[report]'")
    md = subprocess.run([sys.executable, "-c", blocked, "report", str(records), "--markdown", str(tmp_path / "r.md")],
                        capture_output=True, text=True)
    assert md.returncode == 0, md.stderr
    assert "A scores 100.0% (a split counts half) against B" in (tmp_path / "r.md").read_text()
