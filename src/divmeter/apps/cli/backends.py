"""``divmeter embed-parity``: compare a server's embeddings with the local model of the same name.

Thin: reads texts, calls :func:`divmeter.backends.server.parity_check`, prints one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt, capped
from divmeter.core.errors import InvalidInputError


def embed_parity_cmd(
    path: Annotated[Path, typer.Argument(help="Response-set file (any format `score` reads).")],
    model: Annotated[str, typer.Option("--model", help="Server model, openai:NAME.")],
    base_url: Annotated[str | None, typer.Option("--base-url", help="Server API root (.../v1).")
                        ] = None,
    local: Annotated[str, typer.Option("--local", help="Local model to compare with.")
                     ] = "minilm",
    sample: Annotated[int, typer.Option("--sample",
        callback=capped(10**6, low=1), help="Texts compared (the first N).")] = 64,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Print the worst (and mean) cosine between server and local embeddings on a sample."""
    from divmeter.backends.server import parity_check
    from divmeter.inputs.data.readers import read_sets

    if sample < 1:
        raise InvalidInputError(f"--sample must be an integer >= 1; got {sample}.")
    texts: list[str] = []
    for s in read_sets(path):
        texts.extend(s.responses)
        if len(texts) >= sample:
            break
    rep = parity_check(texts[:sample], model, base_url, local=local)
    if as_json:
        typer.echo(json.dumps(rep))
    else:
        typer.echo(
            f"worst cosine {rep['worst_cosine']:.6f} (text {rep['worst_index']}), mean "
            f"{rep['mean_cosine']:.6f} over {rep['n']} texts: {rep['server']} vs {rep['local']}"
        )
