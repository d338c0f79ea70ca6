"""``divmeter generate``: n samples per prompt and decoding value, streamed to JSONL.

Parsing and printing only; the work is :func:`divmeter.studies.generation.sweep.run_sweep`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from divmeter.apps.cli.options import SEED_CAP, QuietOpt, VerboseOpt, capped
from divmeter.core.errors import InvalidInputError

__all__ = ["generate_cmd"]


_GeneratePrompts = Annotated[
        str,
        typer.Argument(help="Prompts: JSONL (one object per line with 'prompt' or 'context' and "
                       "an optional 'id') or .txt (one per line).", metavar="PROMPTS",
                       show_default=False),
    ]
_GenerateOutput = Annotated[
        str,
        typer.Option("--output", "-o", help="JSONL of response sets (appended to and resumed "
                     "when it exists).", metavar="OUT.jsonl", show_default=False),
    ]
_GenerateModel = Annotated[
        str,
        typer.Option("--model", help="gemma-3-270m, smollm2, a .gguf file, a transformers "
                     "folder, a cached hub name, or openai:NAME (with --base-url)."),
    ]
_GenerateBaseUrl = Annotated[
        str | None,
        typer.Option("--base-url", help="API root of an OpenAI-compatible server, e.g. "
                     "http://127.0.0.1:8000/v1 (default $DIVMETER_BASE_URL).",
                     show_default=False),
    ]
_GenerateN = Annotated[int, typer.Option("-n",
                                         callback=capped(10**6, low=1), help="Samples per set.")]
_GenerateSweep = Annotated[
        str | None,
        typer.Option("--sweep", help="PARAM=LO:HI:STEP or PARAM=V1,V2 with PARAM temperature, "
                     "top_p or top_k; one set per prompt and value, the value as label. "
                     "Default: the single --temperature.", show_default=False),
    ]
_GenerateTemperature = Annotated[float, typer.Option("--temperature", help="Temperature when not "
                                               "swept (0: greedy).")]
_GenerateTopP = Annotated[float, typer.Option("--top-p", help="Top-p when not swept (1: off).")]
_GenerateTopK = Annotated[int, typer.Option("--top-k",
    callback=capped(10**7, low=0), help="Top-k when not swept (0: off).")]
_GenerateMaxTokens = Annotated[int, typer.Option("--max-tokens",
    callback=capped(10**6, low=1), help="New tokens per sample.")]
_GenerateStop = Annotated[
        list[str] | None,
        typer.Option("--stop", help="A string that ends a sample; repeat for several.",
                     show_default=False),
    ]
_GenerateSeed = Annotated[int, typer.Option("--seed",
    callback=capped(SEED_CAP), help="Run seed (per-sample seeds derive from "
                                      "it and are written in each row).")]
_GenerateChat = Annotated[
        bool | None,
        typer.Option("--chat/--no-chat", help="Send prompts as a user message (chat template / "
                     "/chat/completions). Default: locally when the model has a chat template; "
                     "on a server, no.", show_default=False),
    ]
_GenerateDevice = Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:i.")]
_GenerateDtype = Annotated[str, typer.Option("--dtype", help="float32, bfloat16 or float16.")
                     ]
_GenerateBatchSize = Annotated[
        int | None,
        typer.Option("--batch-size",
            callback=capped(4096, low=1), help="Local: real sequences per decoding pass, at most "
                     "--lanes (default: --lanes); does not change a sample.", show_default=False),
    ]
_GenerateLanes = Annotated[
        int | None,
        typer.Option("--lanes",
                     callback=capped(4096, low=1),
            help="Local: rows of every decoding pass (default 16 on the CPU, "
                     "128 on CUDA); in the signature.", show_default=False),
    ]
_GenerateConcurrency = Annotated[int, typer.Option("--concurrency",
    callback=capped(1024, low=1), help="Server: requests in "
                                             "flight.")]
_GenerateTimeout = Annotated[float, typer.Option("--timeout", help="Server: seconds per request.")
                       ]
_GenerateOverwrite = Annotated[bool, typer.Option("--overwrite", help="Start OUT afresh instead of "
                                            "resuming.")]
_GenerateResume = Annotated[bool, typer.Option("--resume", help="Keep the rows already in OUT and "
                                         "generate the rest (what a rerun does unless "
                                         "--overwrite is given).")]


def generate_cmd(
    prompts: _GeneratePrompts,
    output: _GenerateOutput,
    model: _GenerateModel = "gemma-3-270m",
    base_url: _GenerateBaseUrl = None,
    n: _GenerateN = 5,
    sweep: _GenerateSweep = None,
    temperature: _GenerateTemperature = 1.0,
    top_p: _GenerateTopP = 1.0,
    top_k: _GenerateTopK = 0,
    max_tokens: _GenerateMaxTokens = 64,
    stop: _GenerateStop = None,
    seed: _GenerateSeed = 0,
    chat: _GenerateChat = None,
    device: _GenerateDevice = "auto",
    dtype: _GenerateDtype = "float32",
    batch_size: _GenerateBatchSize = None,
    lanes: _GenerateLanes = None,
    concurrency: _GenerateConcurrency = 4,
    timeout: _GenerateTimeout = 60.0,
    overwrite: _GenerateOverwrite = False,
    resume: _GenerateResume = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Generate N samples per prompt (and per swept decoding value) into OUT.jsonl.

    Each row: set_id, prompt, responses, label (the swept value), label_name, prompt_id, seeds,
    provenance. The file is read by `divmeter meta dectest` and `divmeter score` directly. A rerun
    keeps the rows already written and generates the rest.
    """
    from divmeter.studies.generation import Decoding, get_generator
    from divmeter.studies.generation.sweep import parse_sweep, read_prompts, run_sweep

    # everything cheap is checked before a model is loaded or a server is asked
    spec = parse_sweep(sweep) if sweep is not None else parse_sweep(f"temperature={temperature}")
    base = Decoding(temperature=temperature, top_p=top_p, top_k=top_k, max_tokens=max_tokens,
                    stop=tuple(stop or ()))
    if n < 1:
        raise InvalidInputError(f"-n must be an integer >= 1; got {n}.")
    if resume and overwrite:
        raise InvalidInputError("--resume keeps OUT and --overwrite starts it afresh; give one.")
    if not os.path.exists(prompts):
        raise FileNotFoundError(2, "No such file or directory", prompts)
    from divmeter.inputs.data.paths import guard_outputs

    guard_outputs({"-o": output}, [prompts])
    items = read_prompts(prompts)
    if model.startswith("openai:"):
        kw: dict[str, object] = {"concurrency": concurrency, "timeout": timeout}
    else:
        if base_url is not None:
            raise InvalidInputError(
                f"--base-url is for server models, named openai:NAME; got --model {model!r}.")
        kw = {"device": device, "dtype": dtype, "batch_size": batch_size, "lanes": lanes}
    gen = get_generator(model, base_url=base_url, chat=chat, **kw)  # type: ignore[arg-type]
    # the device note (cuda asked, none found) is logged once by the generator itself
    total = len(items) * len(spec.values)
    t0 = time.perf_counter()
    count = [0]

    tty = sys.stderr.isatty()  # a log file gets the closing line only, never \r frames

    def progress(row: dict[str, object]) -> None:
        count[0] += 1
        if not quiet and tty:
            typer.echo(f"\r{count[0]} new sets written ({total} in the run)", err=True, nl=False)

    report = run_sweep(gen, items, n, spec, output, decoding=base, seed=seed,
                       overwrite=overwrite, on_row=progress)
    _close(report, output, time.perf_counter() - t0, bool(count[0]) and tty, quiet)


def _close(report: Any, output: str, wall: float, after_progress: bool, quiet: bool) -> None:
    """The closing line of a sweep; exit 1 when the server stopped or sets failed."""
    if not quiet:
        if after_progress:
            typer.echo("", err=True)
        extra = ""
        if report.stats.get("requests") is not None:
            extra = (f"; {report.stats['requests']} requests, {report.stats['cache_hits']} cache "
                     f"hits, retries {report.stats.get('retries') or {}}")
        typer.echo(f"divmeter: {report.written} sets written, {report.kept} kept from an earlier "
                   f"run, {report.failed} failed, of {report.planned} -> {output} "
                   f"({wall:.1f} s{extra}).", err=True)
    if report.stopped:
        end = "" if report.stopped.endswith("?") else "."
        typer.echo(f"divmeter: error: {report.stopped}{end}", err=True)
        raise typer.Exit(1)
    if report.failed:
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(report.failures.items()))
        typer.echo(f"divmeter: error: {report.failed} sets failed ({kinds}); rerun the same "
                   "command to retry them (rows written are kept).", err=True)
        raise typer.Exit(1)
