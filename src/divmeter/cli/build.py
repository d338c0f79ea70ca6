"""``divmeter build ...``: make controlled sets from response sets (parse -> library -> write).

``rndshuff`` / ``nounshuff`` / ``para`` / ``nonsensical`` (commonsense paper, section 4.2) write
the built sets (same ``set_id`` plus a ``source`` field) and, with ``--pairs``, the pairs file
``divmeter meta pairwise`` reads.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from divmeter.cli.options import QuietOpt, VerboseOpt
from divmeter.data.paths import guard_outputs
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
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of every random draw.", min=0)]
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


def _run(builder: str, sets_file: str, output: str, pairs: str | None, prefer: str,
         quiet: bool, **kw: Any) -> None:
    from divmeter.data.readers import read_sets
    from divmeter.perturb import PREFER, build, write_jsonl

    if prefer not in PREFER:  # fail before any work
        raise InvalidInputError(f"--prefer must be source, perturbed or tie; got {prefer!r}.")
    guard_outputs({"-o": output, "--pairs": pairs}, [sets_file, kw.get("template")])
    built = build(builder, read_sets(sets_file), **kw)
    n = write_jsonl(built.rows(), output)
    if pairs:
        write_jsonl(built.pairs(prefer), pairs)
    if not quiet:
        typer.echo(f"divmeter: {n} sets -> {output}{f' (+ pairs {pairs})' if pairs else ''}; "
                   f"{built.signature}", err=True)


def _generator(model: str, base_url: str | None) -> Any:
    """``divmeter.generation.get_generator`` when it is installed, else the chat adapter."""
    import importlib.util

    if importlib.util.find_spec("divmeter.generation") is not None:
        from divmeter.generation import get_generator

        # `--model NAME --base-url URL` names a model on that server; the builders' prompts are
        # instructions, so a server model answers them as chat
        if base_url is not None and not model.startswith("openai:"):
            model = f"openai:{model}"
        return get_generator(model, base_url=base_url,
                             chat=True if model.startswith("openai:") else None)
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
    verbose: VerboseOpt = False,
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
    verbose: VerboseOpt = False,
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
    verbose: VerboseOpt = False,
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
    verbose: VerboseOpt = False,
) -> None:
    """Nonsensical: concept-covering sentences that defy common sense (section 4.2.2)."""
    _run("nonsensical", sets, output, pairs, prefer, quiet, seed=seed, template=template,
         temperature=temperature, max_tokens=max_tokens, generator=_generator(model, base_url))


@build_app.command("cdm-fillers")
def cdm_fillers_cmd(
    frames: Annotated[str, typer.Argument(help="Frames: a text file (one marked sentence a "
                                          "line, e.g. '[[Armin]] does [[fieldwork]].') or JSONL "
                                          "of {id, text}.", show_default=False)],
    output: OutOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    seed: SeedOpt = 0,
    attempts: Annotated[int, typer.Option("--attempts", help="Samples per frame and "
                                          "condition; the first well-marked one is kept.")] = 3,
    template: TemplateOpt = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
    = 0.7,
    max_tokens: MaxTokOpt = 96,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """CDM appendix A.2: high/low-diversity rewrites of marked frames, written as P1 (label 1)
    / P2 (label 0) CDM items with the frame's id: then `divmeter score OUT -m cdm -o S.jsonl`
    and `divmeter meta paired S.jsonl -c cdm`."""
    from divmeter.perturb.cdm_fillers import cdm_fillers
    from divmeter.perturb.generator import load_template

    items = _read_frames(frames)
    built = cdm_fillers(items, _generator(model, base_url), seed=seed, attempts=attempts,
                        template=load_template("cdm", template), temperature=temperature,
                        max_tokens=max_tokens)
    from divmeter.perturb import write_jsonl

    write_jsonl(built.rows, output)
    if not quiet:
        typer.echo(f"divmeter: {len(built.rows) // 2} of {len(items)} frames -> {output} "
                   f"({len(built.failures)} (frame, condition) failed); {built.signature}",
                   err=True)


def _read_frames(path: str) -> list[Any]:
    import json

    with open(path, encoding="utf-8") as fh:
        lines = [ln.strip() for ln in fh]
    out: list[Any] = []
    for i, ln in enumerate(lines, 1):
        if not ln:
            continue
        if ln.startswith("{"):
            try:
                out.append(json.loads(ln))
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path} line {i}: not valid JSON ({exc.msg}).") from None
        else:
            out.append(ln)
    if not out:
        raise InvalidInputError(f"{path}: no frames found.")
    return out


@build_app.command("pattr-grid")
def pattr_grid_cmd(
    topics: Annotated[str, typer.Argument(help="Topics: a text file, one request a line.",
                                          show_default=False)],
    output: OutOpt,
    model: Annotated[str | None, typer.Option("--model", help="Generate the pools with this "
                                              "model; without it, write the prompt grid.",
                                              show_default=False)] = None,
    base_url: BaseUrlOpt = None,
    levels: Annotated[str, typer.Option("--levels", help="Instruction counts, LO:HI or a "
                                        "comma list.")] = "0:9",
    styles: Annotated[int, typer.Option("--styles", help="Styles sampled per topic.")] = 10,
    n: Annotated[int, typer.Option("-n", help="Responses per prompt.")] = 1,
    seed: SeedOpt = 0,
    template: TemplateOpt = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
    = 1.0,
    max_tokens: MaxTokOpt = 256,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """PATTR section 3.1 prompt grid (topics x instruction levels x styles); with --model, one
    pool of responses per topic for `divmeter meta length-bias`."""
    from divmeter.perturb import write_jsonl
    from divmeter.perturb.generator import load_template
    from divmeter.perturb.pattr_grid import pattr_grid, pattr_pools

    guard_outputs({"-o": output}, [topics, template])
    with open(topics, encoding="utf-8") as fh:
        lines = [ln.strip() for ln in fh if ln.strip()]
    grid = pattr_grid(lines, levels=_levels(levels), n_styles=styles, seed=seed,
                      template=load_template("pattr", template))
    if model is None:
        rows = [{"set_id": f"{g.topic_id}.{g.level}.{i % styles}", "prompt": g.prompt,
                 "responses": [], "metadata": {"topic": g.topic_id, "level": g.level,
                                               "style": g.style}}
                for i, g in enumerate(grid)]
        write_jsonl(rows, output)
        what = f"{len(rows)} prompts"
    else:
        pools = pattr_pools(grid, _generator(model, base_url), n=n, seed=seed,
                            temperature=temperature, max_tokens=max_tokens)
        write_jsonl([p.to_dict() for p in pools], output)
        what = f"{len(pools)} pools of {len(grid) // len(pools) * n} responses"
    if not quiet:
        typer.echo(f"divmeter: {what} -> {output}", err=True)


def _levels(text: str) -> list[int]:
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":"))
            out = list(range(lo, hi + 1))
        else:
            out = [int(x) for x in text.split(",")]
    except ValueError:
        raise InvalidInputError(
            f"--levels must be LO:HI or a comma list of integers; got {text!r}.") from None
    if not out:
        raise InvalidInputError(f"--levels must not be an empty range; got {text!r}.")
    return out
