"""``divmeter meta ...``: the meta-evaluation protocols on the command line.

Parse options, call :mod:`divmeter.studies.meta`, format the result (table / json / markdown) and
write the report folder. No statistics here.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import typer

from divmeter.apps.cli.options import SEED_CAP, QuietOpt, VerboseOpt, capped, option_group
from divmeter.apps.cli.progress import progress_bar
from divmeter.core.errors import InvalidInputError

meta_app = typer.Typer(
    name="meta",
    help="Meta-evaluate diversity metrics: conTest, decTest, McDiv_nuggets re-sampling, paired "
    "contrasts, pairwise preference, length bias.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# ---------------------------------------------------------------------------------------------
# shared options

FileArg = Annotated[
    str,
    typer.Argument(help="A Tevet CSV / response-set file (.jsonl .json .csv .parquet) or a "
                   "`divmeter score` output.", show_default=False),
]
#: The most resamples or repetitions of any protocol (divmeter.studies.meta.stats.MAX_RESAMPLES,
#: written here so that mounting the CLI imports no statistics; a test checks they agree).
MAX_RESAMPLES = 10_000_000
#: The most worker processes (divmeter.engine.batch.pool.MAX_WORKERS; a test checks).
MAX_WORKERS = 1024

MetricOpt = Annotated[
    list[str] | None,
    typer.Option("--metric", "-m", help="Registry metric to compute, NAME[:k=v,...]; repeatable.",
                 show_default=False),
]
ColumnOpt = Annotated[
    list[str] | None,
    typer.Option("--column", "-c", help="Precomputed score column (e.g. metric_sent_bert); "
                 "repeatable. Default with no -m/-c: every metric_* column except *_std.",
                 show_default=False),
]
EmptyOpt = Annotated[
    str,
    typer.Option("--empty", help="Empty sets (no non-blank response): drop (remove the row, "
                 "counted in n_empty), zero (computed metrics score 0), error."),
]
NanOpt = Annotated[
    str, typer.Option("--nan", help="NaN / missing scores: error, or omit (excluded and counted).")
]
RoundOpt = Annotated[
    int | None,
    typer.Option("--round",
                 callback=capped(15, low=0),  # float64 holds about 16 digits
        help="Round scores to this many decimals first (Tevet's CSVs hold 3).",
                 show_default=False),
]
FormatOpt = Annotated[
    str | None,
    typer.Option("--format", "-f", help="table, json or markdown (default: table on a terminal, "
                 "json when piped).", show_default=False),
]
ReportOpt = Annotated[
    str | None,
    typer.Option("--report", help="Write report.json, report.md and PNG plots to this folder.",
                 show_default=False),
]
HtmlOpt = Annotated[
    str | None,
    typer.Option("--html", help="Also write one self-contained HTML report (table, signatures, "
                 "plots) here.", metavar="REPORT.html", show_default=False),
]
NoPlotOpt = Annotated[bool, typer.Option("--no-plots", help="With --report: skip the PNG plots.")]
SeedOpt = Annotated[int, typer.Option("--seed",
    callback=capped(SEED_CAP), help="Seed of every random draw.", min=0)]
BootOpt = Annotated[
    int | None,
    typer.Option("--bootstrap",
                 callback=capped(MAX_RESAMPLES, low=0),
        help="Bootstrap resamples for confidence intervals (e.g. 10000).",
                 show_default=False),
]
CiOpt = Annotated[str, typer.Option("--ci", help="Bootstrap interval: percentile or bca.")]
WorkersOpt = Annotated[int, typer.Option("--workers",
    callback=capped(MAX_WORKERS, low=1), help="Processes for computing metrics.")]


def _note(msg: str, quiet: bool) -> None:
    if not quiet:
        typer.echo(f"divmeter: note: {msg}", err=True)


def _fmt(fmt: str | None, command: str = "meta") -> str:
    """The format to print (:mod:`divmeter.inputs.data.formats`: the one registry)."""
    from divmeter.inputs.data.formats import check_format, default_format

    if fmt is None:
        return default_format(command, terminal=sys.stdout.isatty())
    return check_format(fmt, command)


def _emit(result: Any, fmt: str | None, *, source: str, report: str | None, plots: bool,
          xlabel: str = "parameter", quiet: bool = False, html: str | None = None) -> None:
    from divmeter.report import markdown_table, rich_table, write_report
    from divmeter.report.writer import report_files

    chosen = _fmt(fmt)
    from divmeter.inputs.data.paths import guard_outputs, report_folder

    # the inputs: every file the command has read (the one guard notes them as they are read)
    guard_outputs({"--html": html,
                   "--report": report_folder(
                       report, report_files(result, report, plot=plots) if report else [])})
    if chosen == "json":
        payload = result.to_dict()
        typer.echo(json.dumps(payload, indent=2, allow_nan=False))
    elif chosen == "markdown":
        typer.echo(markdown_table(result, title=f"{result.protocol} — {source}"), nl=False)
    else:
        from rich.console import Console

        from divmeter.report.terminal import print_unbroken

        console = Console()
        print_unbroken(console, *rich_table(result, title=f"{result.protocol}: {source}",
                                            width=console.width))
    if report:
        files = write_report(result, report, source=source, plot=plots, xlabel=xlabel)
        _note(f"report written to {report} ({len(files)} files)", quiet)
    if html:
        from divmeter.report.html import meta_report

        meta_report(result, html, source=source, xlabel=xlabel, plots=plots)
        _note(f"HTML report written to {html}", quiet)


@dataclass
class Report:
    """How a result is printed and written: ``--format``, ``--report``, ``--html`` and
    ``--no-plots``, the options the meta-evaluation commands and ``compare`` share
    (:func:`option_group`)."""

    fmt: FormatOpt = None
    report: ReportOpt = None
    html: HtmlOpt = None
    no_plots: NoPlotOpt = False


@dataclass
class Output(Report):
    """:class:`Report`'s options, then ``--workers`` and the ``-q``/``-v`` every command has."""

    workers: WorkersOpt = 1
    quiet: QuietOpt = False
    verbose: VerboseOpt = False

    def emit(self, result: Any, *, source: str, xlabel: str = "parameter") -> None:
        """Print ``result`` and write the reports asked for (:func:`_emit`)."""
        _emit(result, self.fmt, source=source, report=self.report, plots=not self.no_plots,
              xlabel=xlabel, quiet=self.quiet, html=self.html)


@dataclass
class Interval:
    """The bootstrap interval of a protocol's statistics: ``--bootstrap``, ``--ci`` and
    ``--seed`` (:func:`option_group`)."""

    bootstrap: BootOpt = None
    ci: CiOpt = "percentile"
    seed: SeedOpt = 0


@dataclass
class Scored:
    """What a protocol scores and how: FILE, ``-m``, ``-c``, ``--empty``, ``--nan`` and
    ``--round``, the start of ``contest`` and ``dectest`` (:func:`option_group`)."""

    file: FileArg
    metric: MetricOpt = None
    column: ColumnOpt = None
    empty: EmptyOpt = "drop"
    nan: NanOpt = "error"
    round_: RoundOpt = None

    def scores(self, out: Output) -> Any:
        """FILE loaded and scored (:func:`_scores`)."""
        return _scores(self.file, self.metric, self.column, self.empty, self.round_,
                       out.workers, out.quiet)


def _scores(file: str, metric: list[str] | None, column: list[str] | None, empty: str,
            round_: int | None, workers: int, quiet: bool, *,
            need_labels: bool = True) -> tuple[Any, dict[str, np.ndarray],
                                                                     np.ndarray, dict[str, Any],
                                                                     dict[str, str], np.ndarray]:
    """Load and score the file (:func:`divmeter.studies.meta.loaders.prepare_scores`), and say what
    was dropped or excluded."""
    from divmeter.inputs.data.tables import load_table
    from divmeter.studies.meta.loaders import prepare_scores

    if quiet:
        from divmeter.apps.cli.progress import quiet_libraries

        quiet_libraries()
    table = load_table(file)
    with progress_bar(bool(metric) and not quiet, len(table)) as callback:
        res = prepare_scores(table, metrics=metric or (), columns=column or (), empty=empty,
                             round_=round_, workers=workers, progress=callback,
                             need_labels=need_labels)
    if res.n_dropped_empty:
        _note(f"{res.n_dropped_empty} empty set(s) dropped (--empty drop); n_empty is in the "
              "output.", quiet)
    _say_undefined(res.undefined, lambda r: f"row {r} (set {table.ids[r]!r})", quiet)
    return table, res.scores, res.labels, res.settings, res.signatures, res.rows


def _say_undefined(undefined: Any, where: Any, quiet: bool, *, in_output: bool = True) -> None:
    for u in undefined:
        _note(f"{u.column} is undefined on {u.count} item(s), excluded (first: "
              f"{where(u.first)}: {u.reason})"
              + ("; n_undefined is in the output." if in_output else "."), quiet)


def _directions(metric: list[str] | None, lower: list[str] | None,
                columns: list[str] | None = None) -> dict[str, str]:
    from divmeter.studies.meta.loaders import metric_directions

    return metric_directions(metric, lower, columns)


LowerOpt = Annotated[
    list[str] | None,
    typer.Option("--lower-is-diverse", help="A precomputed column (-c) for which a LOWER value "
                 "means more diverse; repeatable. Registry metrics (-m) know their direction.",
                 show_default=False),
]


LengthRangeOpt = Annotated[
    str | None,
    typer.Option("--length-range", help="LOW-HIGH: keep only responses of LOW..HIGH words "
                 "(inclusive) before the top-k selection (PATTR paper, Section 4.3).",
                 show_default=False),
]
BleuOpt = Annotated[
    str,
    typer.Option("--bleu", help="BLEU of the homogenisation: bleu (divmeter's, both directions) "
                 "or hf (the PATTR paper's Hugging Face BLEU: 13a, case kept, one direction)."),
]


def _score_columns(sets: list[Any], metric: list[str], workers: int,
                   signatures: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """Each metric's column of values over ``sets`` (NaN where a set's value is null); each
    metric's signature goes into ``signatures``."""
    from divmeter.engine.batch import resolve_metrics, score_sets

    plans = resolve_metrics(list(metric))
    vals = {p.column: np.full(len(sets), math.nan) for p in plans}
    for rec in score_sets(sets, list(metric), workers=workers, with_signatures=True):
        for c, sig in (rec.get("signatures") or {}).items():
            if signatures is not None:
                signatures.setdefault(c, sig)
        for p in plans:
            v = rec.get(p.column)
            vals[p.column][rec["row"]] = math.nan if v is None else float(v)
    return vals


# ---------------------------------------------------------------------------------------------
# contest / dectest


@meta_app.command("contest")
@option_group
def contest_cmd(scored: Scored, interval: Interval, out: Output) -> None:
    """conTest (Tevet & Berant): Spearman rho, OCA and ROC AUC of each metric against a 0/1 label.

    Prints, per metric/column: spearman, oca, auc, n (and p-values, thresholds, settings).
    """
    _fmt(out.fmt)  # fail on a bad --format before any work
    from divmeter.studies.meta.protocols import contest

    table, scores, labels, settings, sigs, _ = scored.scores(out)
    result = contest(scores, labels, nan=scored.nan, bootstrap=interval.bootstrap,
                     ci_method=interval.ci, seed=interval.seed, metric_signatures=sigs,
                     settings=settings)
    out.emit(result, source=table.source)


@meta_app.command("dectest")
@option_group
def dectest_cmd(
    scored: Scored,
    subsample: Annotated[
        int | None,
        typer.Option("--subsample",
                     callback=capped(10**9, low=1),
            help="Tevet's repeated sub-sampling: rows per repetition "
                     "(e.g. 200).", show_default=False),
    ] = None,
    sample: Annotated[
        str | None,
        typer.Option("--sample", help="Sub-sampling: per-temperature (Tevet 6.3: --per-value "
                     "sets of each parameter value per repetition) or uniform (--subsample "
                     "rows). Default: none, or uniform when --subsample is given.",
                     show_default=False),
    ] = None,
    per_value: Annotated[int, typer.Option("--per-value",
        callback=capped(10**9, low=1), help="Sets drawn per parameter "
                                           "value with --sample per-temperature.")] = 2,
    repeats: Annotated[int, typer.Option("--repeats",
        callback=capped(MAX_RESAMPLES, low=1), help="Sub-sampling repetitions.")] = 100,
    ranking: Annotated[
        bool, typer.Option("--ranking", help="Tevet's ranking test (C.1, Table 5): pairs of sets "
                           "of the same context (--context-field), Spearman of metric vs "
                           "parameter differences and sign accuracy.")
    ] = False,
    context_field: Annotated[str, typer.Option("--context-field", help="What tells contexts "
                                               "apart for --ranking: prompt or a metadata "
                                               "field.")] = "prompt",
    ranking_order: Annotated[str, typer.Option("--ranking-order", help="Pair orientation for "
                                               "--ranking: ascending (higher minus lower "
                                               "parameter) or row (later minus earlier row).")]
    = "ascending",
    pair_accuracy: Annotated[
        bool, typer.Option("--pair-accuracy", help="Also the pairwise ranking accuracy "
                           "(Tevet Table 5; metric ties count as misses).")
    ] = False,
    *,
    interval: Interval,
    out: Output,
) -> None:
    """decTest (Tevet & Berant): Spearman and Pearson of each metric with a decoding parameter.

    Prints, per metric/column: spearman, pearson, n (and sub-sampling mean/std when asked).
    """
    _fmt(out.fmt)  # fail on a bad --format before any work
    from divmeter.studies.meta.protocols import dectest

    table, scores, labels, settings, sigs, rows = scored.scores(out)
    contexts = _contexts(table, rows, context_field) if ranking else None
    result = dectest(scores, labels, subsample=subsample, repeats=repeats, seed=interval.seed,
                     sample=sample, per_value=per_value, pair_accuracy=pair_accuracy,
                     contexts=contexts, ranking_order=ranking_order,
                     bootstrap=interval.bootstrap, ci_method=interval.ci, nan=scored.nan,
                     metric_signatures=sigs, settings=settings)
    out.emit(result, source=table.source, xlabel=table.label_name or "parameter")


# ---------------------------------------------------------------------------------------------
# McDiv_nuggets re-sampling


@meta_app.command("nuggets")
def nuggets_cmd(
    file: FileArg,
    metric: MetricOpt = None,
    column: ColumnOpt = None,
    group_size: Annotated[int, typer.Option("--group-size",
        callback=capped(10**9, low=1), help="Sets per sorted group.")] = 40,
    seed: SeedOpt = 0,
    empty: EmptyOpt = "drop",
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the selected sets here (format from the "
                     "extension; a Tevet wide CSV stays wide).", show_default=False),
    ] = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """McDiv_nuggets construction (Tevet & Berant C.2): a form-neutralised subset.

    Sorts sets by one form metric (exactly one -m or -c), cuts fixed-size groups and keeps equal
    numbers of high and low sets from each, so the metric no longer separates the classes.
    """
    from divmeter.inputs.data.tables import load_table
    from divmeter.studies.meta.loaders import prepare_scores
    from divmeter.studies.meta.protocols import nuggets_resample

    _fmt(fmt)
    if len(metric or []) + len(column or []) != 1:
        raise InvalidInputError("nuggets needs exactly one metric (-m) or column (-c).")
    if output:
        from divmeter.inputs.data.paths import guard_outputs

        guard_outputs({"-o": output}, [file])
    table = load_table(file)
    res = prepare_scores(table, metrics=metric or (), columns=column or (), empty=empty)
    name, sc = next(iter(res.scores.items()))
    rows = res.rows
    missing = np.flatnonzero(np.isnan(sc))
    if len(missing):  # a precomputed column with holes: nuggets sorts every set by its score
        first = int(rows[missing[0]])
        raise InvalidInputError(
            f"{table.source}: column {name!r} has no value for {len(missing)} set(s) (first: "
            f"set {table.ids[first]!r}, row {first + 1}); nuggets sorts every set by its score.")
    _say_undefined(res.undefined, lambda r: f"row {r} (set {table.ids[r]!r})", quiet)
    r = nuggets_resample(sc, res.labels, group_size=group_size, seed=seed)
    selected = rows[r.details["indices"]]
    out = {name: {**r.to_dict(), **res.settings, "rows": selected.tolist()}}
    details = {k: v for k, v in (("reason", r.details.get("reason")),
                                 ("metric_signature", res.signatures.get(name))) if v}
    if details:
        out[name]["details"] = details
    if output:
        if table.sets is None:
            raise InvalidInputError("-o needs a response-set input (this file holds scores).")
        from divmeter.inputs.data.writers import write_sets

        wide = output.endswith((".csv", ".csv.gz")) and all(
            len(table.sets[i].responses) == len(table.sets[0].responses) for i in selected)
        n = write_sets([table.sets[i] for i in selected], output,
                       layout="wide" if wide else "long")
        _note(f"{n} sets written to {output}", quiet)
    if _fmt(fmt) == "json":
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
    else:
        typer.echo(
            f"{name}: kept {r.n_selected} of {r.n_input} sets ({r.n_groups} groups of "
            f"{group_size}); Spearman with the label {r.spearman_before:.3f} -> "
            f"{r.spearman_after:.3f}  [{r.signature}]"
            + (f"\n{name}: {res.signatures[name]}" if name in res.signatures else "")
        )


# ---------------------------------------------------------------------------------------------
# paired / stages


def _contexts(table: Any, rows: Any, name: str) -> list[str]:
    """Each row's context for --ranking; a row without one is refused (read as one shared
    context it would pair sets of different prompts and give a meaningless answer)."""
    out = []
    for i in rows:
        value = _field(table, i, name)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise InvalidInputError(
                f"--ranking pairs sets of the same context, but set {table.ids[i]!r} (row "
                f"{i + 1}) has no {name!r}; give every set one, or name the field that tells "
                "contexts apart with --context-field.")
        out.append(_cond(value))
    return out


def _cond(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@meta_app.command("paired")
@option_group
def paired_cmd(
    file: FileArg,
    metric: MetricOpt = None,
    column: ColumnOpt = None,
    lower_is_diverse: LowerOpt = None,
    by: Annotated[str, typer.Option("--by", help="What tells the conditions apart: 'label' or a "
                                    "metadata field (e.g. stage).")] = "label",
    key: Annotated[str, typer.Option("--key", help="What matches items across conditions: "
                                     "set_id, prompt or a metadata field.")] = "set_id",
    high: Annotated[str, typer.Option("--high", help="Condition expected more diverse (P1).")]
    = "1",
    low: Annotated[str, typer.Option("--low", help="Its matched counterpart (P2).")] = "0",
    contrast: Annotated[
        list[str] | None,
        typer.Option("--contrast", help="Pre-registered stage contrasts instead of --high/--low: "
                     "'base>sft' (one-sided), 'dpo!=rlvr' (two-sided); repeatable; one "
                     "correction family.", show_default=False),
    ] = None,
    exploratory: Annotated[
        list[str] | None,
        typer.Option("--exploratory", help="Exploratory stage contrast, reported uncorrected "
                     "and outside the family (Decan Table 4's DPO != RLVR); repeatable.",
                     show_default=False),
    ] = None,
    correction: Annotated[str, typer.Option("--correction", help="bonferroni, holm or none.")]
    = "bonferroni",
    zero_method: Annotated[str, typer.Option("--zeros", help="Wilcoxon zero differences: "
                                             "wilcox, pratt, zsplit.")] = "wilcox",
    empty: EmptyOpt = "drop",
    nan: NanOpt = "error",
    round_: RoundOpt = None,
    *,
    interval: Interval,
    out: Output,
) -> None:
    """Paired contrasts (CDM P1 vs P2, Decan stages): Wilcoxon two/one-sided, d, sign accuracy.

    Items are matched by --key; the conditions come from --by. A key without exactly one item
    in each compared condition is skipped (counted in n_unmatched). Lower-is-more-diverse
    metrics (self-BLEU, homogenization) are negated first; each row echoes its direction.
    """
    _fmt(out.fmt)  # fail on a bad --format before any work
    from divmeter.studies.meta.protocols import (
        attach_metric_signatures,
        paired_matched,
        paired_stages,
    )

    table, scores, _, settings, sigs, kept_rows = _scores(file, metric, column, empty, round_,
                                                          out.workers, out.quiet,
                                                          need_labels=by == "label")
    conds = [_cond(_field(table, i, by)) for i in kept_rows]
    keys = [_cond(_field(table, i, key)) for i in kept_rows]
    dirs = _directions(metric, lower_is_diverse, list(scores))
    if contrast or exploratory:
        result = paired_stages(scores, conds, keys, contrast or [], exploratory=exploratory or [],
                               by=by, key=key, correction=correction, zero_method=zero_method,
                               nan=nan, directions=dirs, settings=settings)
    else:
        result = paired_matched(scores, conds, keys, high=high, low=low, by=by, key=key,
                                directions=dirs, settings=settings, correction=correction,
                                zero_method=zero_method, nan=nan, bootstrap=interval.bootstrap,
                                ci_method=interval.ci, seed=interval.seed)
    out.emit(attach_metric_signatures(result, sigs), source=table.source)


def _field(table: Any, i: int, name: str) -> Any:
    if name == "label":
        return table.labels[i]
    if name in ("set_id", "id"):
        return table.ids[i]
    if table.sets is not None and name in ("prompt", "context"):
        return table.sets[i].prompt
    meta = table.metadata[i] if table.metadata else {}
    if name in meta:
        return meta[name]
    if name in table.columns:
        return table.columns[name][i]
    raise InvalidInputError(
        f"row {i}: field {name!r} not found; use label, set_id, prompt or a metadata field."
    )


# ---------------------------------------------------------------------------------------------
# pairwise


def _pair_scores(pairs: Any, metric: list[str] | None, column: list[str] | None, workers: int,
                 quiet: bool, signatures: dict[str, str] | None = None
                 ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each pair's two score vectors per metric/column: precomputed columns from the rows,
    metrics computed on both sets; pairs on which a computed metric is undefined are excluded
    (``pairs`` is filtered in place), counted and noted."""
    from divmeter.inputs.data.model import ResponseSet

    s1: dict[str, np.ndarray] = {}
    s2: dict[str, np.ndarray] = {}
    for c in column or []:
        if c not in pairs.scores1:
            raise InvalidInputError(
                f"column {c!r} not found in the rows' scores1/scores2 of {pairs.source}; "
                f"available: {', '.join(pairs.scores1) or 'none'}."
            )
        s1[c], s2[c] = pairs.scores1[c], pairs.scores2[c]
    if metric:
        n = len(pairs.labels)
        sets = [ResponseSet(f"pair{i}.set1", r) for i, r in enumerate(pairs.set1)] + [
            ResponseSet(f"pair{i}.set2", r) for i, r in enumerate(pairs.set2)]
        for col, vals in _score_columns(sets, metric, workers, signatures).items():
            s1[col], s2[col] = vals[:n], vals[n:]
    if not s1:
        raise InvalidInputError("give at least one metric (-m) or column (-c).")
    if metric:  # pairs on which a computed metric is undefined are excluded, counted, noted
        from divmeter.studies.meta.loaders import exclude_undefined

        n = len(pairs.labels)
        keep = np.ones(n, dtype=bool)
        found = []
        for side, sets_, columns in (("set1", pairs.set1, s1), ("set2", pairs.set2, s2)):
            for u in exclude_undefined([ResponseSet(f"pair{i}.{side}", r)
                                        for i, r in enumerate(sets_)], columns, metric, keep):
                found.append((side, u))
        if found and keep.sum() < 2:  # nothing left to measure: one line that says why
            side, u = found[0]
            raise InvalidInputError(
                f"{pairs.source}: {u.column} is undefined on {u.count} of {n} pair(s) (first: "
                f"pair {u.first + 1} {side}: {u.reason}); {int(keep.sum())} pair(s) left, "
                "pairwise needs at least 2.")
        for side, u in found:
            _say_undefined([u], lambda r, side=side: f"pair {r + 1} {side}", quiet,
                           in_output=False)
        if not keep.all():
            s1 = {c: v[keep] for c, v in s1.items()}
            s2 = {c: v[keep] for c, v in s2.items()}
            pairs.labels = pairs.labels[keep]
            if pairs.rating1 is not None:
                pairs.rating1 = pairs.rating1[keep]
            if pairs.rating2 is not None:
                pairs.rating2 = pairs.rating2[keep]
    return s1, s2


@meta_app.command("pairwise")
@option_group
def pairwise_cmd(
    file: Annotated[str, typer.Argument(help="JSONL of {set1, set2, label} rows (label 0 = set1 "
                                        "more diverse, 1 = set2, 2 = tie).", show_default=False)],
    metric: MetricOpt = None,
    column: Annotated[
        list[str] | None,
        typer.Option("--column", "-c", help="Precomputed score in the rows' scores1/scores2.",
                     show_default=False),
    ] = None,
    lower_is_diverse: LowerOpt = None,
    metric_ties: Annotated[str, typer.Option("--metric-ties", help="Metric scores equal: miss, "
                                             "half, drop or match.")] = "miss",
    label_ties: Annotated[str, typer.Option("--label-ties", help="Annotator label 2: drop or "
                                            "keep.")] = "drop",
    min_rating_diff: Annotated[
        float | None,
        typer.Option("--min-rating-diff", help="Drop pairs whose annotator ratings "
                     "(rating1/rating2) differ by less (the paper: 0.5).", show_default=False),
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples",
        callback=capped(MAX_RESAMPLES, low=1), help="Bootstrap resamples.")] = 10_000,
    confidence: Annotated[float, typer.Option("--confidence", help="CI level.")] = 0.95,
    seed: SeedOpt = 0,
    nan: NanOpt = "error",
    *,
    out: Output,
) -> None:
    """Pairwise preference accuracy against an annotator, with CIs and a kappa matrix.

    Prints, per metric: accuracy, ci_low/ci_high (bootstrap percentile), cp_low/cp_high
    (Clopper-Pearson), n, and the tie policy; the report adds Cohen's kappa between metrics and
    the annotator.
    """
    _fmt(out.fmt)  # fail on a bad --format before any work
    from divmeter.inputs.data.tables import read_pairs
    from divmeter.studies.meta.protocols import attach_metric_signatures, pairwise

    pairs = read_pairs(file)
    sigs: dict[str, str] = {}
    s1, s2 = _pair_scores(pairs, metric, column, out.workers, out.quiet, sigs)
    result = pairwise(s1, s2, pairs.labels, metric_ties=metric_ties, label_ties=label_ties,
                      rating1=pairs.rating1, rating2=pairs.rating2,
                      min_rating_diff=min_rating_diff, confidence=confidence,
                      n_resamples=resamples, seed=seed, nan=nan,
                      directions=_directions(metric, lower_is_diverse))
    out.emit(attach_metric_signatures(result, sigs), source=pairs.source)


# ---------------------------------------------------------------------------------------------
# length bias


@meta_app.command("length-bias")
@option_group
def length_bias_cmd(
    file: Annotated[str, typer.Argument(help="Response sets; each set is one pool of responses "
                                        "to the same prompt.", show_default=False)],
    metric: Annotated[
        list[str],
        typer.Option("--metric", "-m", help="Metric scored on each response alone; repeatable.",
                     show_default=False),
    ],
    quantile: Annotated[float, typer.Option("--quantile", help="Length percentile of a 'short' "
                                            "response within its pool.")] = 25.0,
    top_k: Annotated[
        list[int] | None,
        typer.Option("--top-k",
                     callback=capped(10**9, low=1),
            help="Corpus filtering: keep the k most diverse responses and "
                     "measure ROUGE-1/2/L and BLEU homogenisation; repeatable.",
                     show_default=False),
    ] = None,
    pairs: Annotated[int, typer.Option("--pairs",
        callback=capped(MAX_RESAMPLES, low=1), help="Pairs sampled for homogenisation.")]
    = 1000,
    length_range: LengthRangeOpt = None,
    bleu: BleuOpt = "bleu",
    seed: SeedOpt = 0,
    *,
    out: Output,
) -> None:
    """Length bias (PATTR paper): short-response win rate, Spearman with length (raw, as in its
    Table 1, and oriented to diversity), top-k filtering (after an optional length range)."""
    _fmt(out.fmt)  # fail on a bad --format before any work
    from divmeter.inputs.data.model import ResponseSet
    from divmeter.inputs.data.readers import read_sets
    from divmeter.studies.meta.pattr import length_bias, parse_length_range

    rng = parse_length_range(length_range) if length_range is not None else None

    pools = [s.responses for s in read_sets(file)]
    singles = [ResponseSet(f"{p}.{j}", [t]) for p, pool in enumerate(pools)
               for j, t in enumerate(pool)]
    sigs: dict[str, str] = {}
    flat = _score_columns(singles, metric, out.workers, sigs)
    bounds = np.cumsum([0] + [len(p) for p in pools])
    per_pool = {k: [v[bounds[i]:bounds[i + 1]] for i in range(len(pools))]
                for k, v in flat.items()}
    result = length_bias(pools, per_pool, quantile=quantile, top_k=top_k or (), n_pairs=pairs,
                         seed=seed, directions=_directions(metric, None), length_range=rng,
                         bleu=bleu)

    from divmeter.studies.meta.protocols import attach_metric_signatures

    out.emit(attach_metric_signatures(result, sigs), source=os.path.basename(file))


# ---------------------------------------------------------------------------------------------
# decan confound (Khoriaty et al. 2026, appendix E)


_DecanConfoundFile = Annotated[str, typer.Argument(
        help="Per-set results (.jsonl .json .csv .parquet): one record per set with the columns, "
        "a label and a length (or --sets), e.g. benchmarks/results_contest_decan.jsonl.",
        show_default=False)]
_DecanConfoundColumn = Annotated[
        list[str] | None,
        typer.Option("--column", "-c", help="Numeric field to tabulate; repeatable. Default: a_1 "
                     "and D.", show_default=False),
    ]
_DecanConfoundLabel = Annotated[str, typer.Option("--label", help="Field holding the class label.")]
_DecanConfoundLength = Annotated[str, typer.Option("--length", help="Field holding the set length "
                                        "(ignored with --sets).")]
_DecanConfoundSets = Annotated[
        str | None,
        typer.Option("--sets", help="Response-set file the results were scored from (e.g. a "
                     "Tevet conTest CSV): the length of a record is the mean UTF-8 bytes of the "
                     "responses of set number `row` there.", show_default=False),
    ]
_DecanConfoundWhere = Annotated[
        list[str] | None,
        typer.Option("--where", help="KEY=VALUE: keep records whose field equals VALUE (as "
                     "text), e.g. task=story_gen; repeatable.", show_default=False),
    ]
_DecanConfoundBins = Annotated[str, typer.Option(
    "--bins", help="Length bin edges, comma-separated; bin i is [e_i, e_i+1). Default: the "
    "paper's Table 8.")]
_DecanConfoundHighLabel = Annotated[float, typer.Option(
    "--high-label", help="Label of the high-diversity class.")]
_DecanConfoundLowLabel = Annotated[float, typer.Option(
    "--low-label", help="Label of the low-diversity class.")]


@meta_app.command("decan-confound")
@option_group
def decan_confound_cmd(
    file: _DecanConfoundFile,
    column: _DecanConfoundColumn = None,
    label: _DecanConfoundLabel = "label",
    length: _DecanConfoundLength = "mean_bytes",
    sets: _DecanConfoundSets = None,
    where: _DecanConfoundWhere = None,
    bins: _DecanConfoundBins = "20,40,60,80,120",
    high_label: _DecanConfoundHighLabel = 1.0,
    low_label: _DecanConfoundLowLabel = 0.0,
    *,
    out: Report,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Decan confound check (appendix E): class means of a_1 and D overall and by length bin.

    Prints Table 7 (high / low class means, gap = low - high, mean length, n) and, per column,
    Table 8 (the same within length bins). --report DIR writes report.json, report.md and
    confound.png (class histograms and per-bin means).
    """
    chosen = _fmt(out.fmt)
    from divmeter.studies.meta.confound import (
        DEFAULT_COLUMNS,
        decan_confound,
        load_confound_inputs,
        parse_bins,
        parse_where,
    )

    conds = parse_where(where or [])
    values, labels, lengths, info = load_confound_inputs(
        file, columns=column or DEFAULT_COLUMNS, label=label, length=length, sets=sets,
        where=conds,
    )
    result = decan_confound(values, labels, lengths, bins=parse_bins(bins),
                            high_label=high_label, low_label=low_label,
                            length_name=info["length"])
    from divmeter.inputs.data.paths import guard_outputs, report_folder
    from divmeter.report.decan_plot import confound_report_files

    guard_outputs({"--html": out.html, "--report": report_folder(
        out.report, confound_report_files(out.report, plots=not out.no_plots)
        if out.report else [])})
    title = f"decan-confound — {info['source']}" + (
        f" ({', '.join(f'{k}={v}' for k, v in conds.items())})" if conds else "")
    if chosen == "json":
        typer.echo(json.dumps({**result.to_dict(), "input": info}, indent=2, allow_nan=False))
    elif chosen == "markdown":
        typer.echo(result.markdown(title=title), nl=False)
    else:
        from rich.console import Console
        from rich.markdown import Markdown

        from divmeter.report.terminal import printable

        Console().print(Markdown(printable(result.markdown(title=title), lines=True)))
    if out.report:
        from divmeter.report.decan_plot import write_confound_report

        files = write_confound_report(result, out.report, info=info, title=title,
                                      plots=not out.no_plots)
        _note(f"report written to {out.report} ({len(files)} files)", quiet)
    if out.html:
        from divmeter.report.html import text_report

        text_report(result.markdown(title=title), out.html, title="divmeter meta decan-confound",
                    source=str(info["source"]))
        _note(f"HTML report written to {out.html}", quiet)


@meta_app.command("pattr-sensitivity")
def pattr_sensitivity_cmd(
    file: Annotated[str, typer.Argument(help="Response sets; all their responses form the "
                                        "corpus to filter (e.g. one model's).",
                                        show_default=False)],
    target_length: Annotated[
        list[int] | None,
        typer.Option("--target-length",
            callback=capped(10**7, low=1), help="PATTR target length L_T; repeatable (default: "
                     "100 275 400, the paper's Table 4).", show_default=False),
    ] = None,
    window: Annotated[
        list[int] | None,
        typer.Option("--window",
            callback=capped(10**7, low=1), help="MATTR window W; repeatable (default: 32 128 512).",
                     show_default=False),
    ] = None,
    k: Annotated[int, typer.Option("--top-k",
        callback=capped(10**9, low=1), help="Responses selected per metric.")] = 10,
    length_range: LengthRangeOpt = None,
    bleu: BleuOpt = "hf",
    welch: Annotated[bool, typer.Option("--welch", help="Welch's t-test instead of Student's "
                                        "(scipy's default, used by the paper).")] = False,
    pairs: Annotated[int, typer.Option("--pairs",
        callback=capped(MAX_RESAMPLES, low=1), help="Pairs per selection (all when fewer).")]
    = 1000,
    seed: SeedOpt = 0,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    html: HtmlOpt = None,
) -> None:
    """PATTR's L_T x W sensitivity table (its Section 4.4, Table 4 / F.1): independent t-tests of
    the pair similarities of PATTR's and MATTR's top-k selections (negative t: PATTR's more
    diverse)."""
    _fmt(fmt)
    from divmeter.inputs.data.readers import read_sets
    from divmeter.studies.meta.pattr import parse_length_range, pattr_sensitivity

    rng = parse_length_range(length_range) if length_range is not None else None
    texts = [t for s in read_sets(file) for t in s.responses]
    result = pattr_sensitivity(
        texts, target_lengths=target_length or (100, 275, 400), windows=window or (32, 128, 512),
        k=k, length_range=rng, bleu=bleu, n_pairs=pairs, seed=seed, equal_var=not welch,
    )

    _emit(result, fmt, source=os.path.basename(file), report=None, plots=False,
          quiet=quiet, html=html)
