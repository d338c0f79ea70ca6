"""PATTR paper section 3.1: a prompt grid whose responses vary in length, for
``divmeter meta length-bias``.

The model input has four parts in a fixed order: a fixed task description, the first ``k`` of
ten formatting instructions (``k`` = 0..9, so longer instruction lists ask for longer, more
structured scripts), a style (one audience, one mood, one video type, each drawn from five
values) and the topic (the user's request). The paper crosses 10 instruction levels with 10
sampled styles per topic; :func:`pattr_grid` does the same for any topics and sizes, and
:func:`pattr_pools` sends the grid through a generator and groups the responses by topic: one
pool per topic, the input of ``meta length-bias``. Task description, instructions and style
values are divmeter's own wording (the paper's appendix A lists its exact ones).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet
from divmeter.studies.perturb.gate import Gate
from divmeter.studies.perturb.gate import generate as gated_generate
from divmeter.studies.perturb.generated import Outcome, _check_decoding, _check_generator
from divmeter.studies.perturb.generator import Generator, Template, load_template

__all__ = ["INSTRUCTIONS", "MAX_STYLES", "STYLES", "GridPrompt", "pattr_grid", "pattr_pools"]

#: Ten formatting instructions, introduced incrementally (level k uses the first k).
INSTRUCTIONS = (
    "Start by restating the request in one sentence.",
    "Write the script scene by scene, numbering each scene.",
    "Give every scene a short title.",
    "Describe what the camera shows before each line of dialogue.",
    "Name the speaker before every line of dialogue.",
    "Add a suggestion for background music in each scene.",
    "Include at least one on-screen text caption.",
    "End with a call to action for the viewer.",
    "Add an estimated duration in seconds for each scene.",
    "Finish with a one-paragraph summary of the whole video.",
)
#: Style categories and their five values each; one value per category makes a style.
STYLES = {
    "audience": ("children", "teenagers", "students", "professionals", "retirees"),
    "mood": ("cheerful", "serious", "mysterious", "calm", "energetic"),
    "video type": ("tutorial", "documentary", "advertisement", "vlog", "short film"),
}
#: The most styles sampled per topic (the paper: 10; styles are drawn with replacement).
MAX_STYLES = 10_000


@dataclass(frozen=True)
class GridPrompt:
    """One cell of the grid.

    Attributes:
        topic_id: Which topic (its index, or the given id).
        level: Number of formatting instructions (0..10).
        style: ``{"audience", "mood", "video type"}`` values.
        prompt: The full model input.
    """

    topic_id: str
    level: int
    style: dict[str, str] = field(hash=False)
    prompt: str


def _style_text(style: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in style.items())


def pattr_grid(
    topics: Sequence[str],
    *,
    levels: Sequence[int] = tuple(range(10)),
    n_styles: int = 10,
    seed: int = 0,
    template: Template | None = None,
    topic_ids: Sequence[str] | None = None,
) -> list[GridPrompt]:
    """The section 3.1 grid: every topic x instruction level x sampled style.

    Args:
        topics: The user requests (the paper: 120).
        levels: Instruction counts to use (the paper: 0..9, ten levels).
        n_styles: Styles sampled per topic (the paper: 10), one value per category, drawn
            with ``random.Random(f"pattr|{seed}|{topic_id}")``.
        seed: Seed of the style draws.
        template: Prompt template with ``{instructions}``, ``{style}``, ``{topic}`` (default
            ``pattr.txt``).
        topic_ids: Ids of the topics (default their indices).

    Returns:
        ``len(topics) * len(levels) * n_styles`` prompts, topic-major, then level, then style.

    Raises:
        InvalidInputError: Empty topics, a level outside 0..10, a bad ``n_styles``.

    Example:
        >>> g = pattr_grid(["rain in the city"], levels=[0, 2], n_styles=1)
        >>> [p.level for p in g], g[1].prompt.count("\\n- ")
        ([0, 2], 2)
    """
    if isinstance(topics, str) or not topics or not all(
            isinstance(t, str) and t.strip() for t in topics):
        raise InvalidInputError(
            "`topics` must be a non-empty list of non-empty strings; got "
            f"{topics!r:.60}."
        )
    if not levels or any(isinstance(k, bool) or not isinstance(k, int) or not
                         0 <= k <= len(INSTRUCTIONS) for k in levels):
        raise InvalidInputError(
            f"`levels` must be integers in 0..{len(INSTRUCTIONS)}; got {list(levels)}."
        )
    if isinstance(n_styles, bool) or not isinstance(n_styles, int) or n_styles < 1:
        raise InvalidInputError(f"`n_styles` must be an integer >= 1; got {n_styles!r}.")
    if n_styles > MAX_STYLES:  # every style is one more prompt per topic and level
        got = f"{n_styles:,}" if n_styles < 10**15 else "more"
        raise InvalidInputError(f"`n_styles` must be at most {MAX_STYLES:,}; got {got}.")
    ids = [str(i) for i in range(len(topics))] if topic_ids is None else [str(i) for i in
                                                                            topic_ids]
    if len(ids) != len(topics):
        raise InvalidInputError(
            f"`topic_ids` must have one id per topic ({len(topics)}); got {len(ids)}."
        )
    tpl = template or load_template("pattr")
    out = []
    for tid, topic in zip(ids, topics, strict=True):
        rng = random.Random(f"pattr|{seed}|{tid}")
        styles = [{c: rng.choice(v) for c, v in STYLES.items()} for _ in range(n_styles)]
        for k in levels:
            instr = "" if k == 0 else "Follow these formatting instructions:\n" + "\n".join(
                f"- {line}" for line in INSTRUCTIONS[:k])
            for st in styles:
                prompt = tpl.fill(instructions=instr, style=_style_text(st), topic=topic.strip())
                out.append(GridPrompt(tid, k, st, "\n".join(
                    ln for ln in prompt.splitlines() if ln.strip()) if k == 0 else prompt))
    return out


def pattr_pools(
    grid: Sequence[GridPrompt],
    generator: Generator,
    *,
    n: int = 1,
    seed: int = 0,
    temperature: float = 1.0,
    max_tokens: int = 256,
    gate: Gate | None = None,
) -> Outcome:
    """Generate the grid's responses and pool them per topic (section 3.1: temperature 1.0,
    seed 0).

    Every response passes the quality gate (:mod:`divmeter.studies.perturb.gate`: not blank, no
    template or special token, not an echo of its prompt; no length check, since the grid asks for
    responses of every length); one that still fails after the gate's retries leaves its topic's
    pool out (in :attr:`~divmeter.studies.perturb.generated.Outcome.rejected`).

    Args:
        grid: :func:`pattr_grid` output.
        generator: A :class:`~divmeter.studies.perturb.generator.Generator`.
        n: Responses per prompt.
        seed: Generator seed.
        temperature: Sampling temperature.
        max_tokens: Longest response in tokens.
        gate: The quality gate (default :class:`~divmeter.studies.perturb.gate.Gate()`).

    Returns:
        An :class:`~divmeter.studies.perturb.generated.Outcome` whose ``sets`` are the pools, one
        per topic (``set_id`` = topic id), the responses in grid order; ``metadata`` holds per
        response its ``levels`` and ``styles`` and the generator ``signature``.

    Raises:
        InvalidInputError: Bad settings or no generator.
    """
    _check_decoding(temperature, max_tokens)
    _check_generator(generator)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInputError(f"`n` must be an integer >= 1; got {n!r}.")
    gate = gate or Gate()
    prompts = [g.prompt for g in grid]
    got = gated_generate(generator, prompts, n, gate=gate, seed=seed, clean=lambda t: t,
                         check=lambda q, text: gate.check(text, instruction=prompts[q]),
                         temperature=temperature, max_tokens=max_tokens)
    pools: dict[str, dict[str, list[Any]]] = {}
    failed: dict[str, list[dict[str, str]]] = {}
    for q, g in enumerate(grid):
        p = pools.setdefault(g.topic_id, {"responses": [], "levels": [], "styles": []})
        p["responses"] += got.texts[q]
        p["levels"] += [g.level] * n
        p["styles"] += [_style_text(g.style)] * n
        failed.setdefault(g.topic_id, []).extend(
            {"text": t, "reason": r} for _, r, t in got.failed(q))
    sig = (f"pattr-grid|gen:{generator.signature}|n:{n}|temp:{temperature}|"
           f"max_tokens:{max_tokens}|{gate.signature()}|seed:{seed}")
    out = Outcome(retried=got.retried)
    for tid, p in pools.items():
        if failed[tid]:
            out.rejected.append({"set_id": tid, "status": "rejected",
                                 "reason": f"{failed[tid][0]['reason']} (after every retry)",
                                 "texts": failed[tid]})
            continue
        out.sets.append(ResponseSet(tid, p["responses"], metadata={
            "levels": p["levels"], "styles": p["styles"], "signature": sig}))
    return out
