"""Stores that are not as they should be: of a newer swapjudge, damaged (real bytes flipped in a real file), or on a
read-only file system (a read-only bind mount in a private mount namespace, tests/mounts.py: even root cannot
write there). Each is one line and exit 2 at the CLI, never a traceback; a newer store is left untouched, a
read-only one is read by every command that only reads."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from mounts import in_namespace, read_only_bind, script, swapjudge
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app
from swapjudge.store import Store, StoreDamagedError, StoreError, StoreReadOnlyError

PAIRS = 24


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a pairs file, a configuration and the store of one finished run of it (closed: no -wal)."""
    folder = tmp_path_factory.mktemp("judged")
    write_pairs(folder, PAIRS)
    with JudgeServer(policy="better") as server:
        write_config(folder, base_url=server.openai_url)
        result = CliRunner().invoke(app, ["run", str(folder / "run.yaml"), "--no-progress"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return folder


def _copy(judged: Path, to: Path) -> Path:
    shutil.copytree(judged, to)
    return to / "swapjudge.db"


def _invoke(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _one_line_error(result, needle: str) -> str:  # type: ignore[no-untyped-def]
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and needle in lines[0], lines
    return str(lines[0])


def _digest(db: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.parent.glob(db.name + "*"))}


# ---- a newer schema -----------------------------------------------------------------------------------------


def test_a_store_of_a_newer_schema_is_refused_before_anything_is_written(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(judged, tmp_path / "newer")
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    con.execute("DROP TABLE anchor_scores")  # a table swapjudge (schema 4) would recreate
    con.commit()
    con.execute("PRAGMA journal_mode=DELETE")  # what an older swapjudge would switch back to WAL
    con.close()
    before = _digest(db)
    with pytest.raises(StoreError, match="store schema 5 is newer than this swapjudge"):
        Store(db)
    assert _digest(db) == before  # not a byte changed, no -wal or -shm file made
    with pytest.raises(StoreError, match="store schema 5 is newer than this swapjudge"):
        Store(db, read_only=True)
    for args in (["runs"], ["export", "--latest"], ["history"], ["run", "run.yaml", "--dry-run"],
                 ["run", "run.yaml", "--no-progress"], ["report", "swapjudge.db", "--html", "r.html"]):
        _one_line_error(_invoke(db.parent, monkeypatch, *args), "store schema 5 is newer")
    assert _digest(db) == before  # not a byte changed, no -wal or -shm file made
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert "anchor_scores" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()


# ---- damaged files ------------------------------------------------------------------------------------------


def _flip(db: Path, offset: int, mask: int = 0xFF, count: int = 1) -> None:
    data = bytearray(db.read_bytes())
    for i in range(offset, offset + count):
        data[i] ^= mask
    db.write_bytes(bytes(data))


def test_a_flipped_byte_in_the_schema_is_one_line_for_every_command(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes of the schema's own text (the CREATE TABLE of `meta`) made invalid UTF-8, then the schema's SQL
    made to name a column that does not exist: SQLite cannot even read the schema."""
    for case, where, shift in (("utf8", b"CREATE TABLE meta", 3), ("sql", b"CREATE TABLE calls", 20)):
        db = _copy(judged, tmp_path / case)
        at = db.read_bytes().find(where)
        assert at > 0
        _flip(db, at + shift, 0xFF, 2 if case == "utf8" else 4)
        for args in (["runs"], ["export", "--latest", "-o", "e.jsonl"], ["history"],
                     ["report", "swapjudge.db", "--html", "r.html"], ["run", "run.yaml", "--dry-run"],
                     ["run", "run.yaml", "--no-progress"], ["runs", "--check"]):
            line = _one_line_error(_invoke(db.parent, monkeypatch, *args), "store is damaged")
            assert "quick_check" in line or "integrity_check" in line, line


def _every(data: bytes, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def _page_of(db: Path, name: str) -> tuple[int, int]:
    """(first byte, size) of the root page of table or index `name`."""
    con = sqlite3.connect(db)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (name,)).fetchone()[0]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    return (int(root) - 1) * int(size), int(size)


def test_a_damaged_index_page_stops_a_run_with_what_quick_check_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupted run whose calls' primary-key index has its cell pointers overwritten: the resumed run stops
    at its first commit, with what quick_check finds and how many paid replies it could not store."""
    write_pairs(tmp_path, PAIRS)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url)
        assert _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress").exit_code == 0
        con = sqlite3.connect(db)
        con.execute("DELETE FROM calls WHERE item >= 'q020'")  # as if killed before these were made
        con.execute("DELETE FROM cache")
        con.execute("UPDATE runs SET status='incomplete'")
        con.commit()
        con.close()
        start, _ = _page_of(db, "sqlite_autoindex_calls_1")
        _flip(db, start + 8, 0xFF, 32)
        paid = server.replied
        line = _one_line_error(_invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress"),
                               "store is damaged")
        assert "PRAGMA quick_check: " in line and "page" in line, line
        assert "nothing was asked of the judge" in line and server.replied == paid, line


def test_a_damaged_json_cell_and_a_damaged_text_cell_are_named(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(judged, tmp_path / "cells")
    data = db.read_bytes()
    settings = _every(data, b'{"logprobs": false')  # the calls' (and cached replies') settings, as JSON text
    config = data.find(b'{"chain_of_thought"')  # the run's configuration, keys sorted
    assert len(settings) >= 2 * PAIRS and config > 0
    for at in settings:
        _flip(db, at + 1, 0x20)  # `"` becomes 0x02: not JSON any more
    line = _one_line_error(_invoke(db.parent, monkeypatch, "export", "--latest", "-o", "e.jsonl"),
                           "store is damaged")
    assert "call of item" in line and "settings" in line and "is not valid JSON" in line
    assert "quick_check finds the file's structure sound" in line
    _flip(db, config + 1, 0x20)
    line = _one_line_error(_invoke(db.parent, monkeypatch, "runs"), "store is damaged")
    assert "the configuration of run 1 is not valid JSON" in line
    with pytest.raises(StoreDamagedError):
        Store(db, read_only=True).runs()
    raw = _copy(judged, tmp_path / "raw")
    replies = _every(raw.read_bytes(), b'{"winner": "')
    assert len(replies) >= 2 * PAIRS
    for at in replies:
        _flip(raw, at + 3, 0x80)  # `i` becomes 0xE9: a UTF-8 lead byte without its continuation
    line = _one_line_error(_invoke(raw.parent, monkeypatch, "export", "--latest", "-o", "e.jsonl"),
                           "store is damaged")
    assert "UTF-8" in line and "'raw'" in line


def test_runs_check_finds_an_index_that_no_longer_matches_its_table(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte of a key in the calls' index changed: every page still reads (quick_check says ok, and `runs`
    lists the runs), but the index no longer matches the table, which `runs --check` finds."""
    db = _copy(judged, tmp_path / "index")
    start, size = _page_of(db, "sqlite_autoindex_calls_1")
    original = db.read_bytes()
    for offset in range(size - 1, size - 400, -1):  # the cells' content sits at the page's end
        db.write_bytes(original)
        _flip(db, start + offset, 0x01)
        con = sqlite3.connect(db)
        quick, full = con.execute("PRAGMA quick_check").fetchall(), con.execute("PRAGMA integrity_check").fetchall()
        con.close()
        if quick == [("ok",)] and full != [("ok",)]:
            break
    else:
        pytest.fail("no byte of the index page damages its content alone")
    assert _invoke(db.parent, monkeypatch, "runs").exit_code == 0
    line = _one_line_error(_invoke(db.parent, monkeypatch, "runs", "--check"), "store is damaged")
    assert "PRAGMA integrity_check: " in line and "index sqlite_autoindex_calls_1" in line, line
    sound = _invoke(judged, monkeypatch, "runs", "--check")
    assert sound.exit_code == 0 and "integrity_check found no problem" in sound.stderr


# ---- read-only file systems ---------------------------------------------------------------------------------


def _read_only_commands(store_dir: Path, out: Path) -> list[tuple[str, str]]:
    db = store_dir / "swapjudge.db"
    return [("runs", swapjudge("runs", "--store", db)),
            ("check", swapjudge("runs", "--check", "--store", db)),
            ("export", swapjudge("export", "--latest", "--store", db, "-o", out / "e.jsonl")),
            ("history", swapjudge("history", "--store", db, "--format", "json")),
            ("report", swapjudge("report", db, "--html", out / "r.html")),
            ("dry-run", swapjudge("run", store_dir / "run.yaml", "--dry-run", "--store", db))]


def test_every_command_that_only_reads_reads_a_store_on_a_read_only_file_system(
        judged: Path, tmp_path: Path) -> None:
    source, view, out = tmp_path / "source", tmp_path / "view", tmp_path / "out"
    shutil.copytree(judged, source)
    view.mkdir()
    out.mkdir()
    for name, command in _read_only_commands(view, out):
        done = in_namespace(script(read_only_bind(source, view), command), cwd=tmp_path)
        assert done.returncode == 0, (name, done.stderr)
        assert "Traceback" not in done.stderr, name
    assert len((out / "e.jsonl").read_text().splitlines()) == 2 * PAIRS and (out / "r.html").exists()
    # `run` writes every call: it says the store is read-only, in one line
    done = in_namespace(script(read_only_bind(source, view),
                               swapjudge("run", view / "run.yaml", "--no-progress", "--store", view / "swapjudge.db")),
                        cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "store is read-only" in lines[0], done.stderr


def test_a_read_only_store_of_an_older_schema_is_read_from_an_upgraded_copy(judged: Path, tmp_path: Path) -> None:
    """A schema-3 store (no `strength` columns) on a read-only file system: it cannot be upgraded in place, so it
    is read from a copy upgraded in memory; the file is left as it was."""
    source, view, out = tmp_path / "source", tmp_path / "view", tmp_path / "out"
    db = _copy(judged, source)
    view.mkdir()
    out.mkdir()
    con = sqlite3.connect(db)
    for table in ("calls", "superseded_calls", "cache"):
        con.execute(f"ALTER TABLE {table} DROP COLUMN strength")
    con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    before = _digest(db)
    for name, command in _read_only_commands(view, out):
        done = in_namespace(script(read_only_bind(source, view), command), cwd=tmp_path)
        assert done.returncode == 0, (name, done.stderr)
    assert len((out / "e.jsonl").read_text().splitlines()) == 2 * PAIRS
    assert _digest(db) == before
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
    assert "strength" not in {r[1] for r in con.execute("PRAGMA table_info(calls)")}
    con.close()


def test_a_read_only_store_with_writes_still_in_its_write_ahead_log_is_read_whole(tmp_path: Path) -> None:
    """A store copied while its writer was open: the last calls sit in the -wal file only. Read through the -shm
    file, every call is there; without the -shm file the store says why it cannot be read."""
    source, view, out = tmp_path / "source", tmp_path / "view", tmp_path / "out"
    for d in (source, view, out):
        d.mkdir()
    live = tmp_path / "live.db"
    with Store(live) as st:
        run_id = st.create_run(config_hash="c", judge_hash="j", judge="openai:m", config={"tie_policy": "exclude"},
                               config_path=None, pairs_digest="d", seed="s", orders="both", total_calls=2)
        from swapjudge.store import CallRecord

        st.record_calls(run_id, [CallRecord(item="q1", first=a, second=b, order_index=i, verdict="first",
                                            source="api") for i, (a, b) in enumerate([("x", "y"), ("y", "x")])])
        for suffix in ("", "-wal", "-shm"):  # copied while the store is open: its log not yet checkpointed
            shutil.copy(str(live) + suffix, source / f"swapjudge.db{suffix}")
    assert (source / "swapjudge.db-wal").stat().st_size > 0
    export = swapjudge("export", "--latest", "--store", view / "swapjudge.db", "-o", out / "e.jsonl")
    done = in_namespace(script(read_only_bind(source, view), export), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["first"] for line in (out / "e.jsonl").read_text().splitlines()] == ["x", "y"]
    (source / "swapjudge.db-shm").unlink()
    done = in_namespace(script(read_only_bind(source, view), export), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "-wal file" in lines[0], done.stderr


def test_read_only_stores_in_the_library(judged: Path, tmp_path: Path) -> None:
    """`Store(read_only=True)` writes nothing to a sound store, refuses to create one, and cannot write."""
    db = _copy(judged, tmp_path / "lib")
    before = _digest(db)
    with Store(db, read_only=True) as st:
        assert len(list(st.calls(1))) == 2 * PAIRS
        with pytest.raises(StoreReadOnlyError, match="store is read-only"):
            st.finish_run(1, "done")
    assert _digest(db) == before and len(stored_calls(db)) == 2 * PAIRS
    with pytest.raises(StoreError, match="no run store here"):
        Store(tmp_path / "missing.db", read_only=True)
    (tmp_path / "empty.db").touch()  # an empty file is an empty store, read as one and left empty
    with Store(tmp_path / "empty.db", read_only=True) as st:
        assert st.runs() == []
    assert (tmp_path / "empty.db").stat().st_size == 0
