"""Decoding sweeps (Tevet & Berant 2021, decTest: section 6.3 and appendix B): one response set
per (prompt, decoding value), streamed to JSONL, resumable.

Each output row is a response set that ``divmeter meta dectest`` reads directly::

    {"set_id": "p3@temperature=0.45", "prompt": "...", "responses": [...], "label": 0.45,
     "label_name": "temperature", "prompt_id": "p3", "seeds": [...], "provenance": {...}}

``provenance`` holds the model, its revision and package versions, the backend, the decoding
settings, the seed and the full signature. Rows are appended and flushed as soon as a batch is
done, in a fixed order (value by value, prompts in file order). A rerun with the same settings
keeps the rows already written (a cut-off last line is dropped) and generates only the missing
ones, in the same batches as an uninterrupted run, so the result is the same.

A server that stops answering during the run (the HTTP client's circuit breaker opens: see
:mod:`divmeter.backends.http`) ends the run after the rows already complete are written;
:attr:`SweepReport.stopped` then says so, and a rerun resumes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import display_name, loads, text_lines
from divmeter.inputs.data.outputs import claim_write
from divmeter.studies.generation.base import (
    Decoding,
    SampleGenerator,
    check_n,
    derive_seed,
    run_signature,
    sample_seeds,
)

__all__ = ["SWEEP_PARAMS", "Sweep", "Prompt", "SweepReport", "parse_sweep", "read_prompts",
           "run_sweep"]

#: Decoding parameters a sweep can vary.
SWEEP_PARAMS = ("temperature", "top_p", "top_k")

_PROMPT_KEYS = ("prompt", "context", "text", "input")
_ID_KEYS = ("id", "set_id", "prompt_id", "sample_id")


def _with(decoding: Decoding, param: str, value: float | int) -> Decoding:
    """``decoding`` with one parameter replaced (validated)."""
    change: dict[str, Any] = {param: value}
    return replace(decoding, **change)


@dataclass(frozen=True)
class Sweep:
    """A decoding parameter and the values it takes, in order."""

    param: str
    values: tuple[float | int, ...]

    def key(self, value: float | int) -> str:
        return f"{self.param}={value:g}" if isinstance(value, float) else f"{self.param}={value}"


def parse_sweep(spec: str) -> Sweep:
    """Parse ``PARAM=LO:HI:STEP`` (HI included when a step lands on it) or ``PARAM=V1,V2,...``.

    Args:
        spec: e.g. ``"temperature=0.2:1.2:0.25"``, ``"top_p=0.1:1:0.3"``, ``"top_k=1,10,100"``.

    Returns:
        The :class:`Sweep`.

    Raises:
        InvalidInputError: Unknown parameter, malformed numbers, an empty range (HI < LO or
            STEP <= 0), or values outside the parameter's domain.

    Example:
        >>> parse_sweep("temperature=0.2:1.2:0.25").values
        (0.2, 0.45, 0.7, 0.95, 1.2)
        >>> parse_sweep("top_k=1,10,100")
        Sweep(param='top_k', values=(1, 10, 100))
    """
    if not isinstance(spec, str) or "=" not in spec:
        raise InvalidInputError(
            f"--sweep must look like temperature=LO:HI:STEP or top_k=1,10,100; got {spec!r}.")
    param, _, rng = spec.partition("=")
    param = param.strip().replace("-", "_")
    if param not in SWEEP_PARAMS:
        raise InvalidInputError(
            f"--sweep parameter must be one of {', '.join(SWEEP_PARAMS)}; got {param!r}.")
    integral = param == "top_k"

    def number(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise InvalidInputError(
                f"--sweep {spec!r}: {text.strip()!r} is not a number.") from None
        if not math.isfinite(x):
            raise InvalidInputError(f"--sweep {spec!r}: {text.strip()!r} is not a finite number.")
        return x

    if ":" in rng:
        parts = rng.split(":")
        if len(parts) != 3:
            raise InvalidInputError(
                f"--sweep range must be LO:HI:STEP (three numbers); got {rng!r}.")
        lo, hi, step = (number(p) for p in parts)
        if step <= 0 or hi < lo:
            raise InvalidInputError(
                f"--sweep {spec!r} is an empty range: expected LO <= HI and STEP > 0; "
                f"got LO={lo:g}, HI={hi:g}, STEP={step:g}.")
        count = int(math.floor((hi - lo) / step + 1e-9)) + 1
        raw = [lo + i * step for i in range(count)]
    else:
        raw = [number(p) for p in rng.split(",") if p.strip()]
        if not raw:
            raise InvalidInputError(f"--sweep {spec!r} is an empty range: no values given.")
    values: list[float | int] = []
    for x in raw:
        if integral:
            if abs(x - round(x)) > 1e-9:
                raise InvalidInputError(f"--sweep {spec!r}: top_k values must be integers; "
                                        f"got {x:g}.")
            values.append(int(round(x)))
        else:
            values.append(round(x, 10))
    for v in values:  # domain checks through Decoding, with the sweep named
        try:
            _with(Decoding(), param, v)
        except InvalidInputError as exc:
            raise InvalidInputError(f"--sweep {spec!r}: {exc}") from None
    if len(set(values)) != len(values):
        raise InvalidInputError(f"--sweep {spec!r} repeats a value: {values}.")
    return Sweep(param, tuple(values))


@dataclass(frozen=True)
class Prompt:
    """A prompt and its id (the id names its sets and seeds its samples)."""

    id: str
    text: str


def read_prompts(path: str | os.PathLike[str]) -> list[Prompt]:
    """Read prompts: JSONL (one object per line with ``prompt`` / ``context`` / ``text`` and an
    optional ``id``, or a JSON string), or plain text (``.txt``: one prompt per line).

    Ids default to ``p0``, ``p1``, ... by position among the prompts.

    Raises:
        InvalidInputError: A bad line (file and line named), duplicate ids, no prompts.
        FileNotFoundError: Missing file.
    """
    name = display_name(path)
    plain = str(path).endswith(".txt")
    out: list[Prompt] = []
    for lineno, line in text_lines(path):  # UTF-8, bounded lines (one-line errors)
        if not line.strip():
            continue
        where = f"{name} line {lineno}"
        pid: Any = None
        if plain:
            prompt: Any = line
        else:
            obj = loads(line, name, lineno)
            if isinstance(obj, str):
                prompt = obj
            elif isinstance(obj, dict):
                key = next((k for k in _PROMPT_KEYS if k in obj), None)
                if key is None:
                    raise InvalidInputError(
                        f"{where}: expected a field 'prompt' (or context/text); got fields "
                        f"{sorted(obj)}.")
                prompt = obj[key]
                pid = next((obj[k] for k in _ID_KEYS if k in obj), None)
            else:
                raise InvalidInputError(
                    f"{where}: each line must be a JSON object with 'prompt' or a JSON string; "
                    f"got {type(obj).__name__}.")
            if not isinstance(prompt, str):
                raise InvalidInputError(
                    f"{where}: field 'prompt' must be a string; got {type(prompt).__name__}.")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, (str, int))):
            raise InvalidInputError(
                f"{where}: field 'id' must be a string or an integer; got {type(pid).__name__}.")
        out.append(Prompt(str(pid) if pid is not None else f"p{len(out)}", prompt))
    if not out:
        raise InvalidInputError(f"{name}: no prompts found.")
    seen: set[str] = set()
    for p in out:
        if p.id in seen:
            raise InvalidInputError(f"{name}: prompt id {p.id!r} appears twice; ids must be "
                                    "unique.")
        seen.add(p.id)
    return out


@dataclass
class SweepReport:
    """What a sweep run did.

    Attributes:
        path: The output file.
        planned: Sets the run is made of (prompts x values).
        kept: Sets already in the file from an earlier run (resume).
        written: Sets generated and written by this run.
        failed: Sets not written because a sample failed for good (rerun to retry them).
        failures: Failed samples by kind (HTTP backend).
        stats: Backend counters (tokens, seconds; requests, cache hits, retries for HTTP).
        stopped: Why the run stopped early (the server stopped answering), else ``None``.
    """

    path: str
    planned: int = 0
    kept: int = 0
    written: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None


def _existing(path: Path) -> list[dict[str, Any]]:
    """Rows already in ``path``; a cut-off or unreadable last line (an interrupted write) is
    removed from the file; a bad line elsewhere is an error."""
    if not path.is_file():  # nothing yet, or a device / FIFO (/dev/stdout): nothing to resume
        return []
    data = path.read_bytes()
    rows: list[dict[str, Any]] = []
    offset = 0
    for lineno, raw in enumerate(data.splitlines(keepends=True), start=1):
        if not raw.strip():
            offset += len(raw)
            continue
        try:
            obj = json.loads(raw)
            ok = isinstance(obj, dict) and "set_id" in obj
        except ValueError:
            ok = False
        if not ok or not raw.endswith(b"\n"):
            if offset + len(raw) == len(data):  # the last line, cut off by an interruption
                with path.open("r+b") as fh:
                    fh.truncate(offset)
                break
            raise InvalidInputError(
                f"{path.name} line {lineno}: not a row written by divmeter generate; use "
                "another -o or --overwrite.")
        rows.append(obj)
        offset += len(raw)
    return rows


def run_sweep(
    generator: SampleGenerator,
    prompts: Sequence[Prompt],
    n: int,
    sweep: Sweep,
    output: str | os.PathLike[str],
    *,
    decoding: Decoding | None = None,
    seed: int = 0,
    overwrite: bool = False,
    chunk: int | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepReport:
    """Generate ``n`` samples per (prompt, swept value) and append each set to ``output``.

    Args:
        generator: From :func:`divmeter.studies.generation.get_generator`.
        prompts: From :func:`read_prompts`.
        n: Samples per set.
        sweep: From :func:`parse_sweep`; the swept value is each set's ``label``.
        output: JSONL file; rows already there with the same settings are kept (resume).
        decoding: The other decoding settings (the swept one is replaced per value).
        seed: Run seed; each prompt's seed is derived from it, the prompt id and the value.
        overwrite: Start the file afresh instead of resuming.
        chunk: Prompts per generator call (default: ``batch_size // n`` locally, at least 1;
            ``4 * concurrency`` over HTTP). Fixed chunks keep a resumed run identical.
        on_row: Called with each row after it is written (progress bars; tests stop a run
            here to simulate an interruption).

    Returns:
        A :class:`SweepReport`.

    Raises:
        InvalidInputError: The file holds rows written with other settings, or rows that are not
            part of this run.
    """
    check_n(n)
    base = decoding if decoding is not None else Decoding()
    path = Path(output)
    if overwrite and path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    plan: dict[str, tuple[float | int, Prompt, Decoding, str]] = {}
    for value in sweep.values:
        dec = _with(base, sweep.param, value)
        sig = run_signature(generator, dec, n, seed)
        for p in prompts:
            plan[f"{p.id}@{sweep.key(value)}"] = (value, p, dec, sig)
    if len(plan) != len(prompts) * len(sweep.values):
        raise InvalidInputError(
            f"sweep values {list(sweep.values)} do not give distinct set ids (they agree to 6 "
            "significant digits); space them further apart.")
    report = SweepReport(str(path), planned=len(plan))
    done: set[str] = set()
    for k, row in enumerate(_existing(path), start=1):
        sid = str(row["set_id"])
        if sid not in plan:
            raise InvalidInputError(
                f"{path.name} line {k}: set {sid!r} is not part of this run (other prompts or "
                "sweep); use another -o or --overwrite.")
        want = plan[sid][3]
        got = (row.get("provenance") or {}).get("signature")
        if got != want:
            raise InvalidInputError(
                f"{path.name} line {k}: written with other settings ({got}); this run is {want}. "
                "Use another -o or --overwrite.")
        done.add(sid)
    report.kept = len(done)
    if chunk is None:
        batch = getattr(generator, "batch_size", None)
        conc = getattr(generator, "concurrency", None)
        chunk = max(1, batch // n) if batch else max(1, 4 * int(conc or 4))
    partial = getattr(generator, "generate_partial", None)
    client = getattr(generator, "client", None)
    breaker = getattr(client, "breaker", None)
    if breaker is not None:
        breaker.plan((len(plan) - len(done)) * n)
    tokens = 0.0
    seconds = 0.0
    claim_write(path, "-o")  # never a file the command read
    with path.open("a", encoding="utf-8") as fh:
        for value in sweep.values:
            dec = _with(base, sweep.param, value)
            sig = run_signature(generator, dec, n, seed)
            for c in range(0, len(prompts), chunk):
                group = list(prompts[c:c + chunk])
                ids = [f"{p.id}@{sweep.key(value)}" for p in group]
                if all(i in done for i in ids):
                    continue
                pseeds = [derive_seed("prompt", seed, p.id, sweep.key(value)) for p in group]
                kw: dict[str, Any] = dict(
                    temperature=dec.temperature, top_p=dec.top_p, top_k=dec.top_k,
                    max_tokens=dec.max_tokens, stop=dec.stop, seed=seed, prompt_seeds=pseeds)
                texts = [p.text for p in group]
                results: list[Any]
                if partial is not None:
                    results = partial(texts, n, **kw)
                else:
                    results = [(r, None) for r in generator.generate(texts, n, **kw)]
                st = getattr(generator, "last_stats", {}) or {}
                tokens += float(st.get("tokens", 0))
                seconds += float(st.get("seconds", 0))
                for sid, p, ps, (resp, failed) in zip(ids, group, pseeds, results, strict=True):
                    if sid in done:
                        continue
                    if failed:
                        report.failed += 1
                        for kind in failed:
                            report.failures[kind] = report.failures.get(kind, 0) + 1
                        continue
                    row = {
                        "set_id": sid, "prompt": p.text, "responses": list(resp),
                        "label": value, "label_name": sweep.param, "prompt_id": p.id,
                        "seeds": sample_seeds(seed, p.text, n, prompt_seed=ps),
                        "provenance": {**generator.provenance, "decoding": dec.to_dict(),
                                       "n": n, "seed": seed, "signature": sig},
                    }
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    fh.flush()
                    done.add(sid)
                    report.written += 1
                    if on_row is not None:
                        on_row(row)
                if breaker is not None and breaker.is_open:
                    report.stopped = breaker.line(client.base_url)  # type: ignore[union-attr]
                    break
            if report.stopped:
                break
    report.stats = {"tokens": int(tokens), "seconds": round(seconds, 3)}
    if client is not None:
        report.stats.update(client.stats.to_dict())
    return report
