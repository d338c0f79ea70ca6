"""``divmeter build ...``: make controlled sets from response sets (parse -> library -> write).

``rndshuff`` / ``nounshuff`` / ``para`` / ``nonsensical`` (commonsense paper, section 4.2) write
the built sets (same ``set_id``, label and metadata, plus a ``source`` field) and, with
``--pairs``, the pairs file ``divmeter meta pairwise`` reads. Sets left out (a generated text that
failed the quality gate after its retries, or a source set with nothing to build from) go to
OUTPUT's name + ``.rejected.jsonl`` with their reasons; the run ends with one line of counts and
exits 1 when more than ``--max-rejected`` of the sets were rejected, or none was built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from divmeter.apps.cli.options import SEED_CAP, QuietOpt, VerboseOpt, capped, option_group
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.paths import guard_outputs

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
#: The most styles per topic (divmeter.studies.perturb.pattr_grid.MAX_STYLES; a test checks).
MAX_STYLES = 10_000
SeedOpt = Annotated[int, typer.Option("--seed",
    callback=capped(SEED_CAP), help="Seed of every random draw.", min=0)]
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
MaxTokOpt = Annotated[int, typer.Option("--max-tokens",
    callback=capped(10**6, low=1), help="Longest generation in tokens.")]
TemperatureOpt = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxRejectedOpt = Annotated[float, typer.Option(
    "--max-rejected", help="Exit 1 when more than this share of the sets tried was rejected "
    "(a generated text failed the quality gate after its retries).")]
RetriesOpt = Annotated[int, typer.Option(
    "--retries",
    callback=capped(100, low=0),
        help="New samples (new seed each) for a generated text that fails the "
    "quality gate, before its set is rejected.")]
LengthFactorOpt = Annotated[float, typer.Option(
    "--length-factor", help="Quality gate: a generated text has between source/F and "
    "source x F words.")]
ChatOpt = Annotated[
    bool | None,
    typer.Option("--chat/--no-chat", help="Send the prompts as chat messages (instruction "
                 "templates). Default: a local model chats when it has a chat template; a "
                 "server model is continued with few-shot completion templates (pass --chat "
                 "for an instruction-tuned server model).", show_default=False),
]


def _run(builder: str, sets_file: str, output: str, pairs: str | None, prefer: str,
         quiet: bool, max_rejected: float = 0.2, **kw: Any) -> None:
    from divmeter.inputs.data.readers import read_sets
    from divmeter.studies.perturb import PREFER, build, write_jsonl

    if prefer not in PREFER:  # fail before any work
        raise InvalidInputError(f"--prefer must be source, perturbed or tie; got {prefer!r}.")
    guard_outputs({"-o": output, "--pairs": pairs, "-o (its rejected sets)": _rejected(output)},
                  [sets_file, kw.get("template")])
    _check_share(max_rejected)
    sets = list(read_sets(sets_file))  # a bad input is refused before a model or server starts
    if kw.get("template") and builder in ("para", "nonsensical"):  # and so is a bad template
        from divmeter.studies.perturb.generator import load_template

        load_template("paraphrase" if builder == "para" else "nonsensical", kw["template"])
    if callable(kw.get("generator")):
        kw["generator"] = kw["generator"]()
    built = build(builder, sets, **kw)
    n = write_jsonl(built.rows(), output)
    if pairs:
        write_jsonl(built.pairs(prefer), pairs)
    rejected = _write_rejected(built.rejected_rows(), output)
    if not quiet:
        typer.echo(f"divmeter: {n} sets -> {output}{f' (+ pairs {pairs})' if pairs else ''}; "
                   f"{built.signature}", err=True)
        typer.echo(f"divmeter: build {built.summary_line()}"
                   + (f"; reasons in {rejected}" if rejected else ""), err=True)
    problem = built.problem(max_rejected)
    if problem is not None:
        typer.echo(f"divmeter: error: build {problem}"
                   + (f" Reasons in {rejected}." if rejected else ""), err=True)
        raise typer.Exit(1)


def _check_share(max_rejected: float) -> None:
    if not 0 <= max_rejected <= 1:
        raise InvalidInputError(f"--max-rejected must be a share from 0 to 1; got "
                                f"{max_rejected}.")


def _rejected(output: str) -> str:
    """The sidecar of OUTPUT that gets the sets left out (guarded like any output)."""
    from divmeter.studies.perturb.build import rejected_path

    return rejected_path(output)


def _write_rejected(rows: list[dict[str, Any]], output: str) -> str | None:
    """Write the sets left out beside OUTPUT (or remove a stale file); its path, or None."""
    import os

    from divmeter.inputs.data.paths import claim_write
    from divmeter.studies.perturb import write_jsonl

    path = _rejected(output)
    if rows:
        write_jsonl(rows, path)
        return path
    if os.path.exists(path):
        claim_write(path, "-o (its rejected sets)")
        os.remove(path)
    return None


def _generator(model: str, base_url: str | None, chat: bool | None = None, *,
               temperature: float = 1.0, max_tokens: int = 64) -> Any:
    """``divmeter.studies.generation.get_generator`` when it is installed, else the chat adapter.

    ``--model NAME --base-url URL`` names a model on that server. A server model is continued
    (``/completions``, the builders' few-shot completion templates) unless ``--chat``; a local
    model chats when it has a chat template (or ``--chat``). ``--temperature`` and
    ``--max-tokens`` are checked first, before a model loads or a server is asked."""
    import importlib.util

    if importlib.util.find_spec("divmeter.studies.generation") is not None:
        from divmeter.studies.generation import Decoding, get_generator

        Decoding(temperature=temperature, max_tokens=max_tokens)  # refuses bad values

        if base_url is not None and not model.startswith("openai:"):
            model = f"openai:{model}"
        return get_generator(model, base_url=base_url, chat=chat)
    from divmeter.studies.perturb.generator import ChatServerGenerator

    gen = ChatServerGenerator(model, base_url)
    gen.client.check()
    return gen


@dataclass
class Shuffled:
    """The input, output and pairing of the builders that shuffle words (``rndshuff``,
    ``nounshuff``): SETS, ``-o``, ``--seed``, ``--pairs`` and ``--prefer``
    (:func:`~divmeter.apps.cli.options.option_group`)."""

    sets: SetsArg
    output: OutOpt
    seed: SeedOpt = 0
    pairs: PairsOpt = None
    prefer: PreferOpt = "source"

    def build(self, builder: str, quiet: bool, **kw: Any) -> None:
        """Build (:func:`_run`; ``kw``: the builder's own settings)."""
        _run(builder, self.sets, self.output, self.pairs, self.prefer, quiet, seed=self.seed,
             **kw)


@build_app.command("rndshuff")
@option_group
def rndshuff_cmd(
    shuffled: Shuffled,
    within: Annotated[str, typer.Option("--within", help="Shuffle words per sentence or per "
                                        "response.")] = "sentence",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """RndShuff: shuffle all the words of each sentence (section 4.2.2)."""
    shuffled.build("rndshuff", quiet, within=within)


@build_app.command("nounshuff")
@option_group
def nounshuff_cmd(
    shuffled: Shuffled,
    pos: Annotated[
        list[str] | None,
        typer.Option("--pos", help="POS tag that moves (repeatable; default NOUN PROPN PRON).",
                     show_default=False),
    ] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """NounShuff: shuffle nouns and pronouns within each sentence (spaCy en_core_web_sm)."""
    shuffled.build("nounshuff", quiet, pos=pos)


@dataclass
class Generated:
    """The options of the builders whose sentences a generator writes (``para``,
    ``nonsensical``), from ``--base-url`` to ``--max-rejected``
    (:func:`~divmeter.apps.cli.options.option_group`)."""

    base_url: BaseUrlOpt = None
    seed: SeedOpt = 0
    pairs: PairsOpt = None
    prefer: PreferOpt = "source"
    template: TemplateOpt = None
    temperature: TemperatureOpt = 0.7
    max_tokens: MaxTokOpt = 64
    chat: ChatOpt = None
    retries: RetriesOpt = 3
    length_factor: LengthFactorOpt = 3.0
    max_rejected: MaxRejectedOpt = 0.2

    def build(self, builder: str, sets: str, output: str, model: str, quiet: bool,
              **kw: Any) -> None:
        """Build with ``model`` as the generator and every text through the quality gate
        (:func:`_run`; ``kw``: the builder's own settings)."""
        _check_share(self.max_rejected)
        _run(builder, sets, output, self.pairs, self.prefer, quiet, self.max_rejected,
             seed=self.seed, **kw, template=self.template, temperature=self.temperature,
             max_tokens=self.max_tokens, gate=_gate(self.retries, self.length_factor),
             generator=lambda: _generator(model, self.base_url, self.chat,
                                          temperature=self.temperature,
                                          max_tokens=self.max_tokens))


@dataclass
class Nonsense(Generated):
    """:class:`Generated` with the temperature of ``nonsensical``."""

    temperature: TemperatureOpt = 1.0


@build_app.command("para")
@option_group
def para_cmd(
    sets: SetsArg,
    output: OutOpt,
    model: ModelOpt,
    k: Annotated[int, typer.Option("--k", "-k",
                                   callback=capped(3, low=1), help="Para-k: 1, 2 or 3.")] = 1,
    *,
    gen: Generated,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Para-k: replace sentences by paraphrases of others (section 4.2.1), via a generator.
    Every paraphrase passes the quality gate (not blank, no template or special token, not an
    echo of the request or of the sentence, a length within --length-factor of it)."""
    if k not in (1, 2, 3):
        raise InvalidInputError(f"--k must be 1, 2 or 3; got {k}.")
    gen.build("para", sets, output, model, quiet, k=k)


def _gate(retries: int, length_factor: float) -> Any:
    from divmeter.studies.perturb.gate import Gate

    return Gate(length_factor=length_factor, retries=retries)


@build_app.command("nonsensical")
@option_group
def nonsensical_cmd(
    sets: SetsArg,
    output: OutOpt,
    model: ModelOpt,
    *,
    gen: Nonsense,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Nonsensical: concept-covering sentences that defy common sense (section 4.2.2). Every
    sentence passes the quality gate (as for para; its length is compared with the median
    source response)."""
    gen.build("nonsensical", sets, output, model, quiet)


@build_app.command("cdm-fillers")
def cdm_fillers_cmd(
    frames: Annotated[str, typer.Argument(help="Frames: a text file (one marked sentence a "
                                          "line, e.g. '[[Armin]] does [[fieldwork]].') or JSONL "
                                          "of {id, text}.", show_default=False)],
    output: OutOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    seed: SeedOpt = 0,
    attempts: Annotated[int, typer.Option("--attempts",
                                          callback=capped(100, low=1), help="Samples per frame and "
                                          "condition; the first well-marked one is kept.")] = 3,
    template: TemplateOpt = None,
    temperature: TemperatureOpt = 0.7,
    max_tokens: MaxTokOpt = 96,
    chat: ChatOpt = None,
    max_rejected: MaxRejectedOpt = 0.2,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """CDM appendix A.2: high/low-diversity rewrites of marked frames, written as P1 (label 1)
    / P2 (label 0) CDM items with the frame's id: then `divmeter score OUT -m cdm -o S.jsonl`
    and `divmeter meta paired S.jsonl -c cdm`. A rewrite must also pass the quality gate; frames
    without one go to OUTPUT.rejected.jsonl."""
    from divmeter.studies.perturb.cdm_fillers import cdm_fillers
    from divmeter.studies.perturb.generator import load_template

    guard_outputs({"-o": output, "-o (its rejected sets)": _rejected(output)},
                  [frames, template])
    _check_share(max_rejected)
    items = _read_frames(frames)
    tpl = load_template("cdm", template)
    gen = _generator(model, base_url, chat, temperature=temperature, max_tokens=max_tokens)
    built = cdm_fillers(items, gen, seed=seed, attempts=attempts, template=tpl,
                        temperature=temperature, max_tokens=max_tokens)
    from divmeter.studies.perturb import write_jsonl

    write_jsonl(built.rows, output)
    rows = [{"set_id": f["frame"], "status": "rejected", **f, "signature": built.signature}
            for f in built.failures]
    rejected = _write_rejected(rows, output)
    if not quiet:
        typer.echo(f"divmeter: {len(built.rows) // 2} of {len(items)} frames -> {output}; "
                   f"{built.signature}", err=True)
    done = len(built.rows) // 2
    _finish(f"cdm-fillers: {done} accepted, 0 retried, {len(items) - done} rejected, 0 skipped "
            "sources", done, len(items) - done, max_rejected, rejected)


def _finish(line: str, accepted: int, rejected: int, max_rejected: float,
            where: str | None) -> None:
    """The counts line of a builder run; exit 1 when nothing was built or too much rejected."""
    typer.echo(f"divmeter: build {line}" + (f"; reasons in {where}" if where else ""), err=True)
    tried = accepted + rejected
    if not accepted or (tried and rejected / tried > max_rejected):
        share = rejected / tried if tried else 1.0
        typer.echo(f"divmeter: error: build: {rejected} of {tried} rejected ({share:.0%}), "
                   f"above --max-rejected {max_rejected:g}"
                   + (f"; reasons in {where}." if where else "."), err=True)
        raise typer.Exit(1)


def _read_frames(path: str) -> list[Any]:
    from divmeter.inputs.data.lines import display_name, loads, text_lines

    out: list[Any] = []
    for i, ln in text_lines(path):
        ln = ln.strip()
        if not ln:
            continue
        if ln.startswith("{"):
            out.append(loads(ln, display_name(path), i))
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
    styles: Annotated[int, typer.Option("--styles",
        callback=capped(MAX_STYLES, low=1), help="Styles sampled per topic.")] = 10,
    n: Annotated[int, typer.Option("-n",
        callback=capped(10**6, low=1), help="Responses per prompt.")] = 1,
    seed: SeedOpt = 0,
    template: TemplateOpt = None,
    temperature: TemperatureOpt = 1.0,
    max_tokens: MaxTokOpt = 256,
    chat: ChatOpt = None,
    retries: RetriesOpt = 3,
    max_rejected: MaxRejectedOpt = 0.2,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """PATTR section 3.1 prompt grid (topics x instruction levels x styles); with --model, one
    pool of responses per topic for `divmeter meta length-bias`, every response through the
    quality gate (a pool with a response that keeps failing goes to OUTPUT.rejected.jsonl)."""
    from divmeter.studies.perturb import write_jsonl
    from divmeter.studies.perturb.generator import load_template
    from divmeter.studies.perturb.pattr_grid import pattr_grid, pattr_pools

    guard_outputs({"-o": output, "-o (its rejected sets)": _rejected(output)},
                  [topics, template])
    from divmeter.inputs.data.lines import text_lines

    lines = [ln.strip() for _, ln in text_lines(topics) if ln.strip()]
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
        _check_share(max_rejected)
        gen = _generator(model, base_url, chat, temperature=temperature, max_tokens=max_tokens)
        res = pattr_pools(grid, gen, n=n, seed=seed,
                          temperature=temperature, max_tokens=max_tokens,
                          gate=_gate(retries, 3.0))
        write_jsonl([p.to_dict() for p in res.sets], output)
        where = _write_rejected(res.rejected, output)
        if not quiet:
            typer.echo(f"divmeter: {len(res.sets)} pools of {len(grid) // len(lines) * n} "
                       f"responses -> {output}", err=True)
        _finish(f"pattr-grid: {len(res.sets)} accepted, {res.retried} retried, "
                f"{len(res.rejected)} rejected, 0 skipped sources", len(res.sets),
                len(res.rejected), max_rejected, where)
        return
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
