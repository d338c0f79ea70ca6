"""``divmeter annotate ...``: collect Human Diversity Scores with a local web app.

``init`` (tasks file -> study database), ``serve`` (the web app), ``invite`` (annotator links),
``status`` (progress), ``export`` (per-item means/std/counts + raw ratings), ``report``
(Krippendorff's alpha and the Figure 5 stability analysis). Parse, call :mod:`divmeter.apps.web`,
print; no logic here.
"""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from divmeter.apps.cli.options import SEED_CAP, QuietOpt, VerboseOpt, capped
from divmeter.apps.cli.options import note as _note
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.paths import guard_outputs

annotate_app = typer.Typer(
    name="annotate",
    help="Collect human diversity ratings (Tevet & Berant's HDS questionnaires) in a local web "
    "app: init, serve, invite, status, export, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: The most ratings per item and annotator links per call (divmeter.apps.web.store's
#: MAX_RATINGS and MAX_INVITES, written here so the CLI imports no server code; a test checks).
MAX_RATINGS = 10_000
MAX_INVITES = 100_000
DbArg = Annotated[str, typer.Argument(help="The study database (SQLite).", show_default=False)]
StudyOpt = Annotated[
    str | None,
    typer.Option("--study", help="Study name (needed when the database holds several).",
                 show_default=False),
]



@annotate_app.command("init")
def init_cmd(
    tasks: Annotated[str, typer.Argument(help="Response sets (.jsonl .json .csv .parquet); rnk/cs "
                                              "group sets by a 'group' field, else by prompt.",
                                         show_default=False)],
    db: Annotated[str, typer.Option("--db", help="Study database to create or extend.",
                                    show_default=False)],
    kind: Annotated[str, typer.Option("--kind", help="abs, asp, sim, rnk or cs.",
                                      show_default=False)],
    ratings: Annotated[int, typer.Option("--ratings",
        callback=capped(MAX_RATINGS, low=1), help="Ratings wanted per item, from "
                                                           "distinct annotators.")] = 10,
    name: Annotated[str | None, typer.Option("--name", help="Study name (default: FILE-KIND).",
                                             show_default=False)] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse the whole file when a set "
                                         "cannot be shown (default: skip it and say so).")]
    = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create a study from a file of response sets."""
    from divmeter.apps.web.store import create_study, split_valid
    from divmeter.inputs.data.readers import read_sets

    guard_outputs({"--db": db}, [tasks])
    sets = list(read_sets(tasks))
    if not strict:
        sets, skipped = split_valid(kind, sets)
        if skipped:
            first_id, first_why = skipped[0]
            _note(f"skipped {len(skipped)} set(s) that cannot be shown (first: {first_id!r}: "
                  f"{first_why}); --strict refuses the file instead")
    study = name or f"{Path(tasks).stem}-{kind}"
    n = create_study(db, sets, kind=kind, ratings=ratings, name=study, source=Path(tasks).name)
    typer.echo(f"study {study}: kind {kind}, {n} items, {ratings} ratings each, in {db}")
    _note(f"next: divmeter annotate invite {db} -n 10 --study {study}")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_bindable(host: str, port: int) -> None:
    """Refuse (one line) an address the server cannot listen on, before uvicorn tries it and
    exits 3 with its own log line (port in use, no such interface, a privileged port)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidInputError(f"--host {host!r} is not an address of this machine: "
                                f"{exc}") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                                    "choose another --port (or --host)") from None


@annotate_app.command("serve")
def serve_cmd(
    db: DbArg,
    host: Annotated[str, typer.Option("--host", help="Interface to bind; anything but loopback "
                                                     "exposes the study to the network.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port",
                                      callback=capped(65535, low=0), help="TCP port.")] = 8000,
    lease_minutes: Annotated[float, typer.Option("--lease-minutes", help="How long an assigned "
                                                 "item stays reserved for its annotator.")] = 60.0,
    max_body: Annotated[int, typer.Option("--max-body",
        callback=capped(2**30, low=1), help="Largest request body in bytes.")]
    = 65536,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Where annotators reach the server, for the invite links of the "
        "admin page (default: http://HOST:PORT).", show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Serve the questionnaires (and the admin page) over HTTP."""
    from divmeter.apps.web.app import create_app
    from divmeter.apps.web.store import Store
    from divmeter.core._optional import require

    uvicorn = require("uvicorn", extra="web")
    if not 0 < port < 65536:
        raise InvalidInputError(f"--port must be from 1 to 65535; got {port}.")
    if max_body < 1024:
        raise InvalidInputError(f"--max-body must be at least 1024 bytes; got {max_body}.")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise InvalidInputError(f"--base-url must start with http:// or https://; got "
                                f"{base_url!r}.")
    shown = f"[{host}]" if ":" in host else host
    app = create_app(db, lease=lease_minutes * 60.0, max_body=max_body,
                     base_url=base_url or f"http://{shown}:{port}")
    _check_bindable(host, port)
    if not _is_loopback(host):
        _note(f"binding {host}: the study is reachable from other machines.")
    admin = Store(db).admin_token()
    typer.echo(f"serving {db} on http://{host}:{port}/  (admin page: "
               f"http://{host}:{port}/admin/{admin})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False,
                server_header=False, date_header=False)


@annotate_app.command("invite")
def invite_cmd(
    db: DbArg,
    n: Annotated[int, typer.Option("-n", "--annotators",
        callback=capped(MAX_INVITES, low=1), help="Number of new annotator links.")]
    = 1,
    study: StudyOpt = None,
    base_url: Annotated[str, typer.Option("--base-url", help="Where the server is reached.")]
    = "http://127.0.0.1:8000",
    admin: Annotated[bool, typer.Option("--admin", help="Print the admin page link instead.")]
    = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Print one personal link per new annotator (or the admin link)."""
    from divmeter.apps.web.store import Store

    store = Store(db)
    base = base_url.rstrip("/")
    if admin:
        typer.echo(f"{base}/admin/{store.admin_token()}")
        return
    for token in store.invite(study, n):
        typer.echo(f"{base}/a/{token}")


@annotate_app.command("status")
def status_cmd(
    db: DbArg,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="table or json (default: "
                                            "table on a terminal).", show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Progress of every study in the database."""
    from divmeter.apps.web.store import Store

    rows = Store(db).status()
    chosen = fmt or ("table" if sys.stdout.isatty() else "json")
    if chosen == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    if chosen != "table":
        raise InvalidInputError(f"--format must be table or json; got {fmt!r}.")
    from rich.console import Console
    from rich.table import Table

    from divmeter.report.terminal import cell

    table = Table(title=cell(f"divmeter annotate: {db}"))
    cols = ["study", "kind", "items", "ratings_per_item", "answers", "answers_wanted",
            "items_complete", "open_leases", "annotators_active", "annotators_invited", "progress"]
    for c in cols:
        table.add_column(c.replace("_", " "))
    for r in rows:
        table.add_row(*[f"{100 * r[c]:.1f}%" if c == "progress" else cell(r[c]) for c in cols])
    Console().print(table)


@annotate_app.command("export")
def export_cmd(
    db: DbArg,
    out: Annotated[str, typer.Option("-o", "--output", help="Output file ('-' = stdout for "
                                     "csv/jsonl).")] = "-",
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="csv, jsonl or parquet "
                                            "(default: from the extension, jsonl on stdout).",
                                            show_default=False)] = None,
    study: StudyOpt = None,
    level: Annotated[str, typer.Option("--level", help="item, or set (simHDS: the section 5 "
                                                       "reduction of the pair ratings).")]
    = "item",
    raw: Annotated[str | None, typer.Option("--raw", help="Also write every rating (with the "
                                            "warm-up answers) to this file.",
                                            show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Per-item mean, std (ddof=1) and count of the ratings: item_id, set_id, kind, n_ratings,
    mean, std (+ label). `divmeter meta contest FILE -c mean` reads it directly."""
    from divmeter.apps.web.store import Store
    from divmeter.inputs.data.writers import open_record_writer

    if fmt is not None and fmt not in ("csv", "jsonl", "parquet"):
        raise InvalidInputError(f"--format must be csv, jsonl or parquet; got {fmt!r}.")
    guard_outputs({"-o": out, "--raw": raw}, [db])
    store = Store(db)
    rows = store.export(study, level=level)
    chosen = fmt or ("jsonl" if out == "-" else None)
    with open_record_writer(out, chosen) as w:
        for r in rows:
            w.write(r)
    if raw:
        raw_rows = store.raw(study)
        with open_record_writer(raw, None) as w:
            for r in raw_rows:
                w.write(r)
        _note(f"{len(raw_rows)} raw ratings written to {raw}")
    if out != "-":
        _note(f"{len(rows)} rows written to {out}")


@annotate_app.command("report")
def report_cmd(
    db: DbArg,
    out: Annotated[str, typer.Option("-o", "--output", help="Report folder.")] = "hds-report",
    study: StudyOpt = None,
    reps: Annotated[int, typer.Option("--reps",
        callback=capped(10**6, low=1), help="Resamples per point (Figure 5).")] = 200,
    seed: Annotated[int, typer.Option("--seed",
        callback=capped(SEED_CAP), help="Seed of the resampling.", min=0)] = 0,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip stability.png.")] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Krippendorff's alpha (ordinal) and Tevet & Berant's Figure 5 stability analysis."""
    from divmeter.apps.web.analysis import (
        MAIN_ASPECT,
        alpha,
        report_files,
        stability,
        units,
        write_report,
    )
    from divmeter.apps.web.store import Store
    from divmeter.inputs.data.paths import report_folder

    guard_outputs({"-o": report_folder(out, report_files(out, plot=not no_plots), "-o")},
                  [db])
    store = Store(db)
    s = store.study(study)
    raw = store.raw(s["name"])
    alphas = alpha(raw)
    stab = None
    if s["kind"] == "sim":
        _note("the stability analysis needs one rating list per set; simHDS rates pairs "
              "(skipped).")
    else:
        labels = store.unit_labels(s["name"])
        by_unit = units(raw, MAIN_ASPECT[s["kind"]])
        keys = [k for k in by_unit if labels.get(k) is not None]
        if len(keys) < 2:
            _note("fewer than 2 rated sets with numeric labels: stability analysis skipped.")
        else:
            stab = stability([list(by_unit[k].values()) for k in keys],
                             [float(labels[k] or 0.0) for k in keys], reps=reps, seed=seed,
                             aspect=MAIN_ASPECT[s["kind"]])
    files = write_report(out, study=s, alphas=alphas, stab=stab, plot=not no_plots)
    for aspect, a in alphas.items():
        shown = "n/a (" + a["reason"] + ")" if a["alpha"] is None else f"{a['alpha']:.3f}"
        typer.echo(f"{s['name']} {aspect}: Krippendorff alpha (ordinal) = {shown}, "
                   f"{a['units']} units")
    if stab is not None and stab.full is not None:
        typer.echo(f"{s['name']}: Spearman rho of mean rating with label = {stab.full:.3f}")
    _note(f"report written to {out} ({len(files)} files)")
