"""CDM appendix A.2: from a frame with marked slots, generate high- and low-diversity
realisations with a generator, and compare P1 vs P2 through the paired protocol.

A *frame* is a reference sentence whose semantic-role fillers are marked, e.g.
``"[[Armin]] does [[fieldwork]] in [[Berlin]]."``. For each frame the generator rewrites it
"in a completely different domain" (high diversity) and "in a closely related domain" (low
diversity), keeping the marks (the ``cdm`` template; the paper's A.2 prompt asks a strong LLM for
the same three-condition structure). Each frame gives two CDM items: P1 = (reference, high),
label 1, and P2 = (reference, low), label 0, both with the frame's id; CDM of P1 should exceed
CDM of P2 (the paper's Table 4 "Diff" and "Acc"). :func:`cdm_p1_p2` runs that comparison with
:func:`divmeter.studies.meta.protocols.paired_matched`; on the command line the written rows go
``divmeter score OUT.jsonl -m cdm -o SCORED.jsonl`` then ``divmeter meta paired SCORED.jsonl -c
cdm`` (items matched by id, P1 = label 1 vs P2 = label 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from divmeter.core._version import __version__
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.items import fillers_from_marked
from divmeter.studies.perturb.gate import Gate, checked_samples
from divmeter.studies.perturb.generated import _check_decoding, _check_generator
from divmeter.studies.perturb.generator import Generator, Template, load_template

__all__ = ["DOMAINS", "CdmBuilt", "cdm_fillers", "cdm_p1_p2", "parse_realisation"]

#: The two conditions of appendix A.2: the instruction each one puts into ``{domain}``.
DOMAINS = {"high": "a completely different domain", "low": "a closely related domain"}


@dataclass(frozen=True)
class CdmBuilt:
    """Generated CDM items.

    Attributes:
        signature: Generator, template, decoding and seed.
        rows: CDM-item JSONL rows, two per frame that succeeded: ``{"id", "texts", "label",
            "frame", "condition", "pair"}`` with ``id`` = the frame id, ``texts`` = [reference,
            rewrite] (marks kept), label 1 for P1 (high) and 0 for P2 (low).
        failures: ``{"frame", "condition", "reason"}`` for frames no sample could realise.
    """

    signature: str
    rows: list[dict[str, Any]]
    failures: list[dict[str, str]]


def parse_realisation(text: str, n_fillers: int, reference: str) -> str | None:
    """The first line of a generation that marks exactly ``n_fillers`` non-empty fillers and
    differs from the reference, with its marks; ``None`` when no line does.

    Example:
        >>> parse_realisation("Sure!\\n[[Mia]] bakes [[bread]].", 2, "[[Al]] cooks [[rice]].")
        '[[Mia]] bakes [[bread]].'
        >>> parse_realisation("[[Mia]] bakes bread.", 2, "[[Al]] cooks [[rice]].") is None
        True
    """
    ref_fillers = fillers_from_marked([reference])[0][0]
    for line in text.splitlines():
        line = line.strip().strip('"').strip()
        if "[[" not in line:
            continue
        try:
            fillers = fillers_from_marked([line])[0][0]
        except InvalidInputError:
            continue
        if len(fillers) == n_fillers and fillers != ref_fillers:
            return line
    return None


def _frames(frames: Sequence[Any]) -> list[tuple[str, str, int]]:
    if isinstance(frames, (str, bytes)):
        raise InvalidInputError("`frames` must be a list of marked sentences; got a single str.")
    out = []
    for i, f in enumerate(frames):
        fid, text = (str(i), f) if isinstance(f, str) else (
            (str(f.get("id", i)), f.get("text")) if isinstance(f, dict) else (str(i), None))
        if not isinstance(text, str):
            raise InvalidInputError(
                f"frame {i} must be a marked sentence (or {{'id', 'text'}}); got "
                f"{type(f).__name__}."
            )
        try:
            n = len(fillers_from_marked([text])[0][0])
        except InvalidInputError as exc:
            raise InvalidInputError(f"frame {fid!r}: {exc}") from None
        if n == 0:
            raise InvalidInputError(
                f"frame {fid!r} must mark its fillers with [[...]]; got none in {text!r}."
            )
        out.append((fid, text, n))
    return out


def cdm_fillers(
    frames: Sequence[str | dict[str, Any]], generator: Generator, *,
    seed: int = 0, temperature: float = 0.7, max_tokens: int = 96, attempts: int = 3,
    template: Template | None = None, gate: Gate | None = None,
) -> CdmBuilt:
    """High- and low-diversity realisations of marked frames (CDM paper, appendix A.2).

    Args:
        frames: Marked reference sentences, or ``{"id", "text"}`` objects.
        generator: A :class:`~divmeter.studies.perturb.generator.Generator`.
        seed: Generator seed.
        temperature: Sampling temperature.
        max_tokens: Longest rewrite in tokens.
        attempts: Samples per (frame, condition); the first that
            :func:`parse_realisation` accepts and the quality gate passes (no template or
            special token, not an echo of the request or of the reference, a length within
            the gate's factor of the reference) is kept.
        template: Prompt template with ``{reference}`` and ``{domain}`` (default ``cdm.txt``).
        gate: The quality gate (default :class:`~divmeter.studies.perturb.gate.Gate()`; its retries
            are the ``attempts`` here).

    Returns:
        A :class:`CdmBuilt`.

    Raises:
        InvalidInputError: A frame without marks, bad decoding settings or no generator.
    """
    _check_decoding(temperature, max_tokens)
    _check_generator(generator)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise InvalidInputError(f"`attempts` must be an integer >= 1; got {attempts!r}.")
    tpl = template or load_template("cdm")
    items = _frames(frames)
    jobs = [(f, cond) for f in items for cond in DOMAINS]
    prompts = [tpl.fill(reference=f[1], domain=DOMAINS[cond]) for f, cond in jobs]
    got = checked_samples(generator.generate(prompts, attempts, temperature=temperature,
                                             max_tokens=max_tokens, seed=seed),
                          len(prompts), attempts, generator.signature)
    gate = gate or Gate()
    found: dict[tuple[str, str], str] = {}
    failures = []
    for k, (((fid, ref, n), cond), samples) in enumerate(zip(jobs, got, strict=True)):
        parsed = [r for r in (parse_realisation(s, n, ref) for s in samples) if r]
        why = [gate.check(r, source=ref, instruction=prompts[k].replace(ref, " "))
               for r in parsed]
        real = next((r for r, w in zip(parsed, why, strict=True) if w is None), None)
        if real is not None:
            found[(fid, cond)] = real
        elif parsed:
            failures.append({"frame": fid, "condition": cond,
                             "reason": f"no sample of {attempts} passed the gate; e.g. {why[0]}"})
        else:
            failures.append({"frame": fid, "condition": cond,
                             "reason": f"no sample of {attempts} marked {n} new fillers"})
    rows = []
    for fid, ref, _ in items:
        if (fid, "high") in found and (fid, "low") in found:
            for cond, label, p in (("high", 1, "P1"), ("low", 0, "P2")):
                rows.append({"id": fid, "texts": [ref, found[(fid, cond)]], "label": label,
                             "frame": fid, "condition": cond, "pair": p})
    sig = (f"cdm-fillers|gen:{generator.signature}|template:{tpl.sha}|temp:{temperature}|"
           f"max_tokens:{max_tokens}|attempts:{attempts}|{gate.signature()}|seed:{seed}|"
           f"v:{__version__}")
    return CdmBuilt(sig, rows, failures)


def cdm_p1_p2(rows: Sequence[dict[str, Any]], *, model: str = "minilm",
              **options: Any) -> Any:
    """CDM of every item, then P1 (label 1) vs P2 (label 0) matched by ``frame``
    (:func:`divmeter.studies.meta.protocols.paired_matched`: Wilcoxon one-sided, effect size, sign
    accuracy = the paper's Table 4 "Acc").

    Args:
        rows: :attr:`CdmBuilt.rows` (or rows of that shape read from JSONL).
        model: CDM's word embedding (see :func:`divmeter.metrics.cdm.cdm`).
        **options: Passed to ``paired_matched`` (correction, zero_method, bootstrap, seed...).

    Returns:
        The paired protocol's result, one metric ``cdm``.
    """
    from divmeter.metrics.cdm import cdm
    from divmeter.studies.meta.protocols import paired_matched

    scores, conds, keys = [], [], []
    for i, row in enumerate(rows):
        try:
            insts = fillers_from_marked(row["texts"])[0]
            conds.append(str(row["label"]))
            keys.append(str(row["frame"]))
        except (KeyError, TypeError):
            raise InvalidInputError(
                f"row {i} must have 'texts', 'label' and 'frame'; got keys {sorted(row)}."
            ) from None
        scores.append(cdm(insts, model=model).value)
    return paired_matched({"cdm": scores}, conds, keys, high="1", low="0", by="label",
                          key="frame", settings={"model": model}, **options)
