"""Where a key travels. The provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) goes only to the provider's
own host over HTTPS; any other server gets the variable `api_key_env` names, or no key. Credentials written into
`base_url` (user:password, a key in the query) are sent as the URL says and shown nowhere: not by `--check`, not
in errors, not in the store; the query string stays a query string. Against real servers on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.judges.anthropic import PROVIDER as ANTHROPIC
from swapjudge.judges.openai import PROVIDER as OPENAI
from swapjudge.redact import redact, redact_url

PROVIDER_KEY = "sk-proj-PROVIDERKEY-0123456789"
SERVER_KEY = "SERVERKEY-abcdef-0123456789"


def _invoke(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


class PathServer(JudgeServer):
    """The fake judge, remembering the request target (path and query) of every request."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.targets: list[str] = []

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        self.targets.append(path)
        return super().handle(path.partition("?")[0], body, auth)


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_the_providers_own_variable_never_reaches_another_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", PROVIDER_KEY)
    write_pairs(tmp_path, 3)
    with JudgeServer() as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        write_config(tmp_path, backend=backend, base_url=url)
        assert _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress").exit_code == 0
        assert len(server.auth_headers) == 6 and set(server.auth_headers) == {""}  # no key went to 127.0.0.1
        monkeypatch.setenv("SERVER_KEY", SERVER_KEY)  # a key of its own, named in the configuration
        write_config(tmp_path, backend=backend, base_url=url, judge={"api_key_env": "SERVER_KEY"},
                     store="own-key.db")
        assert _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress").exit_code == 0
        sent = server.auth_headers[6:]
        assert sent and all(SERVER_KEY in h and PROVIDER_KEY not in h for h in sent)


def test_a_server_that_wants_a_key_is_told_to_name_its_variable(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    write_pairs(tmp_path, 2)
    with JudgeServer(faults=lambda user, attempt: "401") as server:
        write_config(tmp_path, base_url=server.openai_url)
        result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "HTTP 401" in lines[0] and "OPENAI_API_KEY is sent only to api.openai.com" in lines[0]
    assert "judge.api_key_env" in lines[0] and PROVIDER_KEY not in result.output


@pytest.mark.parametrize(("url", "home"), [
    ("https://api.openai.com/v1", True),
    ("https://api.openai.com:443/v1", True),
    ("http://api.openai.com/v1", False),  # the provider's host, but plain HTTP: no key over it
    ("https://api.openai.com:8443/v1", False),
    ("https://api.openai.com.example.net/v1", False),
    ("https://proxy.example/api.openai.com/v1", False),
    ("http://127.0.0.1:8000/v1", False),
])
def test_the_providers_own_host_is_https_to_its_default_host(url: str, home: bool) -> None:
    assert OPENAI.is_home(url) is home
    assert ANTHROPIC.is_home(url.replace("openai", "anthropic")) is home


def test_credentials_in_base_url_are_sent_and_shown_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    password, query_key = "PASSWORD-zyx-987654", "QUERYKEY-abc-123456"
    write_pairs(tmp_path, 3)
    with PathServer() as server:
        url = (f"http://judge:{password}@127.0.0.1:{server.port}/v1?api-version=2024-06-01&key={query_key}")
        write_config(tmp_path, base_url=url)
        outputs = [_invoke(tmp_path, monkeypatch, "run", "run.yaml", "--check"),
                   _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress"),
                   _invoke(tmp_path, monkeypatch, "runs", "--format", "json"),
                   _invoke(tmp_path, monkeypatch, "export", "--latest", "-o", "e.jsonl")]
        assert [r.exit_code for r in outputs] == [0, 0, 0, 0], [r.output for r in outputs]
        # the query string reaches the server as a query string, after the endpoint's path
        assert set(server.targets) == {f"/v1/chat/completions?api-version=2024-06-01&key={query_key}"}
        basic = "Basic " + base64.b64encode(f"judge:{password}".encode()).decode()
        assert set(server.auth_headers) == {basic}
    shown = redact_url(url)
    assert shown == f"http://[redacted]@127.0.0.1:{server.port}/v1?api-version=2024-06-01&key=[redacted]"
    assert f"check: {shown} answered" in " ".join(outputs[0].stdout.split())
    for result in outputs:
        assert password not in result.output and query_key not in result.output
    for f in tmp_path.iterdir():
        if f.is_file() and f.name != "run.yaml":  # the configuration the user wrote holds them, nothing else
            assert password.encode() not in f.read_bytes() and query_key.encode() not in f.read_bytes(), f.name
    stored = json.loads(_invoke(tmp_path, monkeypatch, "runs", "--format", "json").stdout)
    assert stored[0]["config_hash"] == load_config(tmp_path / "run.yaml").config_hash
    # nothing listening there: the error names the server without its credentials
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    write_config(tmp_path, base_url=f"http://judge:{password}@127.0.0.1:{dead}/v1?key={query_key}")
    result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
    assert result.exit_code == 2 and f"cannot reach http://[redacted]@127.0.0.1:{dead}/v1?key=[redacted]" in \
        result.stderr and password not in result.output and query_key not in result.output


def test_a_credential_in_base_url_is_no_part_of_the_judge_or_the_configuration_hash(tmp_path: Path) -> None:
    """The same server with another key is the same judge (its cache is shared); a URL without credentials is
    stored and hashed exactly as given."""
    write_pairs(tmp_path, 1)
    hashes = set()
    for secret in ("first-secret-1234", "second-secret-5678"):
        cfg = load_config(write_config(tmp_path, base_url=f"https://u:{secret}@judge.example/v1?token={secret}"))
        stored = cfg.normalised()["judge"]["base_url"]
        assert stored == "https://[redacted]@judge.example/v1?token=[redacted]"
        hashes.add((cfg.config_hash, cfg.judge_hash))
    assert len(hashes) == 1
    plain = "http://127.0.0.1:8080/v1?api-version=2024-06-01"
    assert redact_url(plain) is plain
    assert load_config(write_config(tmp_path, base_url=plain)).normalised()["judge"]["base_url"] == plain


def test_error_texts_lose_url_credentials_by_their_shape() -> None:
    said = redact("cannot reach https://bob:hunter2@h.example/v1?key=abc&sig=xyz&api-version=1 (refused)")
    assert said == "cannot reach https://[redacted]@h.example/v1?key=[redacted]&sig=[redacted]&api-version=1 (refused)"
