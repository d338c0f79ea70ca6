"""One entry point over the perturbation builders, with provenance and the pairs file.

:func:`build` runs a builder on response sets and returns a :class:`Built`: the new sets (same
``set_id``, each with its ``source`` set), a signature of every setting that changes the output,
and :meth:`Built.pairs`, the ``{set1, set2, label}`` rows ``divmeter meta pairwise`` reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from divmeter.data.model import ResponseSet
from divmeter.errors import InvalidInputError

__all__ = ["BUILDERS", "PREFER", "Built", "build", "write_jsonl"]

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
        sources: The input sets, in the same order.
    """

    builder: str
    signature: str
    sets: list[ResponseSet]
    sources: list[ResponseSet]

    def rows(self) -> list[dict[str, Any]]:
        """One JSON object per set: ``set_id``, ``prompt``, ``responses``, ``source`` (the
        source ``set_id`` and ``responses``) and ``metadata`` (``builder``, ``signature`` and
        what the builder recorded, e.g. Para-k's ``layout``)."""
        out = []
        for s, src in zip(self.sets, self.sources, strict=True):
            row: dict[str, Any] = {"set_id": s.set_id}
            if s.prompt is not None:
                row["prompt"] = s.prompt
            row["responses"] = list(s.responses)
            row["source"] = {"set_id": src.set_id, "responses": list(src.responses)}
            row["metadata"] = {**s.metadata, "signature": self.signature}
            out.append(row)
        return out

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
    from divmeter import __version__

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
) -> Built:
    """Run one builder (commonsense paper, section 4.2) and record how.

    Args:
        builder: One of :data:`BUILDERS`.
        sets: Response sets (or lists of texts, numbered from 0).
        seed: Seed of every random draw (and of the generator).
        generator: A :class:`~divmeter.perturb.generator.Generator` (``para``, ``nonsensical``).
        k: Para-k's k (1, 2 or 3).
        within: RndShuff's unit (``sentence`` or ``response``).
        pos: NounShuff's POS tags (default nouns, proper nouns, pronouns).
        template: A prompt template file replacing the packaged one (generator builders).
        temperature: Generator temperature (default 0.7 for para, 1.0 for nonsensical).
        max_tokens: Generator token limit.

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
    from divmeter.perturb import generated, shuffle

    if builder not in BUILDERS:
        raise InvalidInputError(
            f"unknown builder {builder!r}; expected one of {', '.join(BUILDERS)}."
        )
    sources = [shuffle._as_set(s, i) for i, s in enumerate(sets)]
    v = _version()
    if builder == "rndshuff":
        out = shuffle.rnd_shuff(sources, seed=seed, within=within)
        return Built(builder, f"rndshuff|within:{within}|seed:{seed}|v:{v}", out, sources)
    if builder == "nounshuff":
        tags = tuple(pos) if pos is not None else shuffle.NOUN_POS
        out = shuffle.noun_shuff(sources, seed=seed, pos=tags)
        sig = f"nounshuff|pos:{'+'.join(tags)}|tagger:{shuffle.tagger_id()}|seed:{seed}|v:{v}"
        return Built(builder, sig, out, sources)
    if generator is None:
        raise InvalidInputError(
            f"{builder} needs a generator (a model or server to write "
            f"{'paraphrases' if builder == 'para' else 'sentences'}); got none."
        )
    from divmeter.perturb.generator import load_template

    tpl = load_template("paraphrase" if builder == "para" else "nonsensical", template)
    if builder == "para":
        temp = 0.7 if temperature is None else temperature
        out = generated.para_k(sources, generator, k=k, seed=seed, temperature=temp,
                               max_tokens=max_tokens, template=tpl)
        name = f"para-{k}"
    else:
        temp = 1.0 if temperature is None else temperature
        out = generated.nonsensical(sources, generator, seed=seed, temperature=temp,
                                    max_tokens=max_tokens, template=tpl)
        name = "nonsensical"
    sig = (f"{name}|gen:{generator.signature}|template:{tpl.sha}|temp:{temp}|"
           f"max_tokens:{max_tokens}|seed:{seed}|v:{v}")
    return Built(name, sig, out, sources)


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write rows as JSON Lines (UTF-8, one object per line); returns the number written."""
    n = 0
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise InvalidInputError(f"output folder {str(p.parent)!r} does not exist.")
    with open(p, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
