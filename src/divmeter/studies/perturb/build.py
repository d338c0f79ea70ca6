"""One entry point over the perturbation builders, with provenance and the pairs file.

:func:`build` runs a builder on response sets and returns a :class:`Built`: the new sets (same
``set_id``, ``prompt``, ``label`` and metadata as their ``source`` set, plus ``source_set_id``,
so every meta protocol reads a built file as it reads its source), a signature of every setting
that changes the output, the sets left out with their reasons (:meth:`Built.rejected_rows`),
the counts (:meth:`Built.counts`) and :meth:`Built.pairs`, the ``{set1, set2, label}`` rows
``divmeter meta pairwise`` reads.

Every builder skips a source set with no non-blank response (nothing to shuffle or rewrite);
the generator builders also put every generated text through the quality gate
(:mod:`divmeter.studies.perturb.gate`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.outputs import claim_write
from divmeter.studies.perturb.gate import Gate

__all__ = ["BUILDERS", "MAX_REJECTED", "PREFER", "Built", "build", "rejected_path",
           "write_jsonl"]

#: Default largest share of rejected sets (rejected / (accepted + rejected)) a ``divmeter
#: build`` run may end with before it exits 1 (``--max-rejected``).
MAX_REJECTED = 0.2

#: Builder names accepted by :func:`build` (``para`` takes ``k``).
BUILDERS = ("rndshuff", "nounshuff", "para", "nonsensical")
#: Pair labels of ``divmeter meta pairwise``: 0 = set1 (the source) more diverse, 1 = set2
#: (the perturbed set), 2 = tie.
PREFER = {"source": 0, "perturbed": 1, "tie": 2}


@dataclass(frozen=True)
class Built:
    """What a builder made.

    Attributes:
        builder: ``rndshuff``, ``nounshuff``, ``para-k`` or ``nonsensical``.
        signature: Every setting that changes the output, e.g.
            ``rndshuff|within:sentence|seed:0|v:0.3.0``.
        sets: The perturbed sets, in input order, same ``set_id`` as their source.
        sources: The input sets of ``sets``, in the same order.
        rejected: Source sets left out, one row each: ``{"set_id", "status", "reason"}``
            (``status`` ``skipped``: nothing to build from; ``rejected``: a generated text failed
            the quality gate after every retry, with the failing ``texts``).
        retried: Generated texts that failed the gate once and were generated again.
    """

    builder: str
    signature: str
    sets: list[ResponseSet]
    sources: list[ResponseSet]
    rejected: list[dict[str, Any]] = field(default_factory=list)
    retried: int = 0

    def rows(self) -> list[dict[str, Any]]:
        """One JSON object per set: ``set_id``, ``prompt``, ``responses``, ``label`` (the
        source's), ``source`` (the source ``set_id`` and ``responses``) and ``metadata`` (the
        source's, then ``builder``, ``signature``, ``source_set_id`` and what the builder
        recorded, e.g. Para-k's ``layout``)."""
        out = []
        for s, src in zip(self.sets, self.sources, strict=True):
            # the built texts under the source's prompt and label
            row = ResponseSet(s.set_id, s.responses, prompt=src.prompt, label=src.label).to_dict()
            row["source"] = {"set_id": src.set_id, "responses": list(src.responses)}
            row["metadata"] = {**src.metadata, **s.metadata, "signature": self.signature,
                               "source_set_id": src.set_id}
            out.append(row)
        return out

    def rejected_rows(self) -> list[dict[str, Any]]:
        """The rows of the ``.rejected`` file: each left-out source set with its reason and
        the builder's signature."""
        return [{**r, "builder": self.builder, "signature": self.signature}
                for r in self.rejected]

    def counts(self) -> dict[str, int]:
        """``accepted`` sets, ``retried`` texts, ``rejected`` sets (a text failed the gate) and
        ``skipped`` source sets (nothing to build from)."""
        return {"accepted": len(self.sets), "retried": self.retried,
                "rejected": sum(r["status"] == "rejected" for r in self.rejected),
                "skipped": sum(r["status"] == "skipped" for r in self.rejected)}

    def summary_line(self) -> str:
        """One line of counts, e.g. ``para-1: 9 accepted, 2 retried, 1 rejected, 0 skipped
        sources``."""
        c = self.counts()
        return (f"{self.builder}: {c['accepted']} accepted, {c['retried']} retried, "
                f"{c['rejected']} rejected, {c['skipped']} skipped sources")

    def rejected_share(self) -> float:
        """rejected / (accepted + rejected): the share of the sets tried that were left out
        (1.0 when nothing was accepted)."""
        c = self.counts()
        tried = c["accepted"] + c["rejected"]
        return c["rejected"] / tried if c["accepted"] else 1.0

    def problem(self, max_rejected: float = MAX_REJECTED) -> str | None:
        """Why the run should fail, in one line, or ``None``: no set built, or more than
        ``max_rejected`` of the sets tried rejected (with the most common reasons)."""
        c = self.counts()
        if not c["accepted"]:
            reasons = Counter(r["reason"].split(":")[0].split(" (")[0] for r in self.rejected)
            shown = ", ".join(f"{v} x {k}" for k, v in reasons.most_common(3)) or "no input"
            return (f"{self.builder}: no set was built ({c['rejected']} rejected, "
                    f"{c['skipped']} skipped sources; {shown}).")
        share = self.rejected_share()
        if share <= max_rejected:
            return None
        reasons = Counter(r["reason"].split(":")[0] for r in self.rejected
                          if r["status"] == "rejected")
        shown = ", ".join(f"{v} x {k}" for k, v in reasons.most_common(3))
        return (f"{self.builder}: {c['rejected']} of {c['accepted'] + c['rejected']} sets "
                f"rejected ({share:.0%}), above --max-rejected {max_rejected:g} ({shown}).")

    def pairs(self, prefer: str = "source") -> list[dict[str, Any]]:
        """Pair rows for ``divmeter meta pairwise``: ``set1`` = source, ``set2`` = perturbed,
        ``label`` from ``prefer`` (:data:`PREFER`), plus ``set_id`` and ``builder``.

        The default ``"source"`` states the commonsense paper's expectation: Para-k lowers
        diversity (section 4.2.1), and the low-quality builders should not raise it, since
        "diversity should not be evaluated without considering quality" (section 5.3).

        Raises:
            InvalidInputError: Unknown ``prefer``.
        """
        if prefer not in PREFER:
            raise InvalidInputError(
                f"`prefer` must be source, perturbed or tie; got {prefer!r}."
            )
        return [
            {"set_id": s.set_id, "set1": list(src.responses), "set2": list(s.responses),
             "label": PREFER[prefer], "builder": self.signature}
            for s, src in zip(self.sets, self.sources, strict=True)
        ]


def _version() -> str:
    from divmeter.core._version import __version__

    return __version__


def build(
    builder: str,
    sets: Iterable[ResponseSet | Sequence[str]],
    *,
    seed: int = 0,
    generator: Any = None,
    k: int = 1,
    within: str = "sentence",
    pos: Sequence[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    temperature: float | None = None,
    max_tokens: int = 64,
    gate: Gate | None = None,
) -> Built:
    """Run one builder (commonsense paper, section 4.2) and record how.

    Args:
        builder: One of :data:`BUILDERS`.
        sets: Response sets (or lists of texts, numbered from 0).
        seed: Seed of every random draw (and of the generator).
        generator: A :class:`~divmeter.studies.perturb.generator.Generator` (``para``,
            ``nonsensical``).
        k: Para-k's k (1, 2 or 3).
        within: RndShuff's unit (``sentence`` or ``response``).
        pos: NounShuff's POS tags (default nouns, proper nouns, pronouns).
        template: A prompt template file replacing the packaged one (generator builders).
        temperature: Generator temperature (default 0.7 for para, 1.0 for nonsensical).
        max_tokens: Generator token limit.
        gate: The quality gate of generated texts (default
            :class:`~divmeter.studies.perturb.gate.Gate()`); its settings join the signature.

    Returns:
        A :class:`Built`.

    Raises:
        InvalidInputError: Unknown builder, bad setting, or a generator builder without one.

    Example:
        >>> b = build("rndshuff", [["a b c"]], seed=2)
        >>> b.signature.split("|v:")[0]
        'rndshuff|within:sentence|seed:2'
        >>> sorted(b.rows()[0]["responses"][0].split())
        ['a', 'b', 'c']
    """
    from divmeter.studies.perturb import generated, shuffle

    if builder not in BUILDERS:
        raise InvalidInputError(
            f"unknown builder {builder!r}; expected one of {', '.join(BUILDERS)}."
        )
    all_sources = [shuffle._as_set(s, i) for i, s in enumerate(sets)]
    v = _version()
    if builder in ("rndshuff", "nounshuff"):
        usable = [any(t.strip() for t in s.responses) for s in all_sources]
        sources = [s for s, ok in zip(all_sources, usable, strict=True) if ok]
        skipped = [{"set_id": s.set_id, "status": "skipped", "reason": "no non-blank response"}
                   for s, ok in zip(all_sources, usable, strict=True) if not ok]
    if builder == "rndshuff":
        out = shuffle.rnd_shuff(sources, seed=seed, within=within)
        return Built(builder, f"rndshuff|within:{within}|seed:{seed}|v:{v}", out, sources,
                     skipped)
    if builder == "nounshuff":
        tags = tuple(pos) if pos is not None else shuffle.NOUN_POS
        out = shuffle.noun_shuff(sources, seed=seed, pos=tags)
        sig = f"nounshuff|pos:{'+'.join(tags)}|tagger:{shuffle.tagger_id()}|seed:{seed}|v:{v}"
        return Built(builder, sig, out, sources, skipped)
    if generator is None:
        raise InvalidInputError(
            f"{builder} needs a generator (a model or server to write "
            f"{'paraphrases' if builder == 'para' else 'sentences'}); got none."
        )
    from divmeter.studies.perturb.generator import load_template

    gate = gate or Gate()
    if not gate.extra_tokens:
        gate = replace(gate, extra_tokens=_special_tokens(generator))
    style = generated.prompt_style(generator)
    tpl = load_template("paraphrase" if builder == "para" else "nonsensical", template,
                        style=style)
    if builder == "para":
        temp = 0.7 if temperature is None else temperature
        res = generated.para_k(all_sources, generator, k=k, seed=seed, temperature=temp,
                               max_tokens=max_tokens, template=tpl, gate=gate)
        name = f"para-{k}"
    else:
        temp = 1.0 if temperature is None else temperature
        res = generated.nonsensical(all_sources, generator, seed=seed, temperature=temp,
                                    max_tokens=max_tokens, template=tpl, gate=gate)
        name = "nonsensical"
    sig = (f"{name}|gen:{generator.signature}|prompt:{style}|template:{tpl.sha}|temp:{temp}|"
           f"max_tokens:{max_tokens}|{gate.signature()}|seed:{seed}|v:{v}")
    return Built(name, sig, res.sets, res.sources, res.rejected, res.retried)


def _special_tokens(generator: Any) -> tuple[str, ...]:
    from divmeter.studies.perturb.gate import special_tokens_of

    return special_tokens_of(generator)


def rejected_path(output: str | os.PathLike[str]) -> str:
    """Where the sets left out of ``output`` go: its name with ``.rejected.jsonl``.

    Example:
        >>> rejected_path("built/para.jsonl")
        'built/para.rejected.jsonl'
    """
    out = str(output)
    return (out[:-6] if out.endswith(".jsonl") else out) + ".rejected.jsonl"


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write rows as JSON Lines (UTF-8, one object per line); returns the number written."""
    n = 0
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise InvalidInputError(f"output folder {str(p.parent)!r} does not exist.")
    claim_write(p)  # never a file the command read
    with open(p, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
