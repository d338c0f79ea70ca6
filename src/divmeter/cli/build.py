"""``divmeter build ...``: make controlled sets from response sets (parse -> library -> write).

``rndshuff`` / ``nounshuff`` / ``para`` / ``nonsensical`` (commonsense paper, section 4.2) write
the built sets (same ``set_id`` plus a ``source`` field) and, with ``--pairs``, the pairs file
``divmeter meta pairwise`` reads.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from divmeter.errors import InvalidInputError

build_app = typer.Typer(
    name="build",
    help="Build controlled sets: RndShuff, NounShuff, Para-k, Nonsensical (commonsense paper "
    "section 4.2).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SetsArg = Annotated[str, typer.Argument(help="Response sets (.jsonl .json .csv .parquet, or a "
                                        "Tevet CSV).", show_default=False)]
OutOpt = Annotated[str, typer.Option("--output", "-o", help="Built sets, JSONL.",
                                     show_default=False)]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of every random draw.")]
PairsOpt = Annotated[
    str | None,
    typer.Option("--pairs", help="Also write {set1: source, set2: built, label} rows for "
                 "`divmeter meta pairwise`.", show_default=False),
]
PreferOpt = Annotated[
    str, typer.Option("--prefer", help="Pair label: which set should be more diverse: source "
                      "(0), perturbed (1) or tie (2).")
]
ModelOpt = Annotated[str, typer.Option("--model", help="Generator model (the name the server "
                                       "serves).", show_default=False)]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible API root ending in /v1 (default "
                 "$DIVMETER_BASE_URL).", show_default=False),
]
TemplateOpt = Annotated[
    str | None,
    typer.Option("--template", help="Prompt template file replacing the packaged one.",
                 show_default=False),
]
MaxTokOpt = Annotated[int, typer.Option("--max-tokens", help="Longest generation in tokens.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No summary on stderr.")]


def _run(builder: str, sets_file: str, output: str, pairs: str | None, prefer: str,
         quiet: bool, **kw: Any) -> None:
    from divmeter.data.io import read_sets
    from divmeter.perturb import PREFER, build, write_jsonl

    if prefer not in PREFER:  # fail before any work
        raise InvalidInputError(f"--prefer must be source, perturbed or tie; got {prefer!r}.")
    built = build(builder, read_sets(sets_file), **kw)
    n = write_jsonl(built.rows(), output)
    if pairs:
        write_jsonl(built.pairs(prefer), pairs)
    if not quiet:
        typer.echo(f"{n} sets -> {output}{f' (+ pairs {pairs})' if pairs else ''}; "
                   f"{built.signature}", err=True)


def _generator(model: str, base_url: str | None) -> Any:
    """``divmeter.generation.get_generator`` when it is installed, else the chat adapter."""
    import importlib.util

    if importlib.util.find_spec("divmeter.generation") is not None:
        from divmeter.generation import get_generator  # type: ignore[import-not-found]

        return get_generator(model, base_url=base_url)
    from divmeter.perturb.generator import ChatServerGenerator

    gen = ChatServerGenerator(model, base_url)
    gen.client.check()
    return gen


@build_app.command("rndshuff")
def rndshuff_cmd(
    sets: SetsArg,
    output: OutOpt,
    seed: SeedOpt = 0,
    pairs: PairsOpt = None,
    prefer: PreferOpt = "source",
    within: Annotated[str, typer.Option("--within", help="Shuffle words per sentence or per "
                                        "response.")] = "sentence",
    quiet: QuietOpt = False,
) -> None:
    """RndShuff: shuffle all the words of each sentence (section 4.2.2)."""
    _run("rndshuff", sets, output, pairs, prefer, quiet, seed=seed, within=within)


@build_app.command("nounshuff")
def nounshuff_cmd(
    sets: SetsArg,
    output: OutOpt,
    seed: SeedOpt = 0,
    pairs: PairsOpt = None,
    prefer: PreferOpt = "source",
    pos: Annotated[
        list[str] | None,
        typer.Option("--pos", help="POS tag that moves (repeatable; default NOUN PROPN PRON).",
                     show_default=False),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """NounShuff: shuffle nouns and pronouns within each sentence (spaCy en_core_web_sm)."""
    _run("nounshuff", sets, output, pairs, prefer, quiet, seed=seed, pos=pos)


@build_app.command("para")
def para_cmd(
    sets: SetsArg,
    output: OutOpt,
    model: ModelOpt,
    k: Annotated[int, typer.Option("--k", "-k", help="Para-k: 1, 2 or 3.")] = 1,
    base_url: BaseUrlOpt = None,
    seed: SeedOpt = 0,
    pairs: PairsOpt = None,
    prefer: PreferOpt = "source",
    template: TemplateOpt = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
    = 0.7,
    max_tokens: MaxTokOpt = 64,
    quiet: QuietOpt = False,
) -> None:
    """Para-k: replace sentences by paraphrases of others (section 4.2.1), via a generator."""
    if k not in (1, 2, 3):
        raise InvalidInputError(f"--k must be 1, 2 or 3; got {k}.")
    _run("para", sets, output, pairs, prefer, quiet, seed=seed, k=k, template=template,
         temperature=temperature, max_tokens=max_tokens, generator=_generator(model, base_url))


@build_app.command("nonsensical")
def nonsensical_cmd(
    sets: SetsArg,
    output: OutOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    seed: SeedOpt = 0,
    pairs: PairsOpt = None,
    prefer: PreferOpt = "source",
    template: TemplateOpt = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
    = 1.0,
    max_tokens: MaxTokOpt = 64,
    quiet: QuietOpt = False,
) -> None:
    """Nonsensical: concept-covering sentences that defy common sense (section 4.2.2)."""
    _run("nonsensical", sets, output, pairs, prefer, quiet, seed=seed, template=template,
         temperature=temperature, max_tokens=max_tokens, generator=_generator(model, base_url))
