"""Prompt templates and few-shot examples of the LLM judge, and the chat messages built from them.

The default templates (``templates/absolute.txt``, ``templates/pairwise.txt``, package data) are
written here with the structure of the commonsense meta-evaluation paper's annotator prompt
(section 4.1.1, appendix D, Figure 8): the diversity criteria (redundancy, paraphrase, and that
nonsensical or off-theme sentences do not count as diverse), an instruction to ignore the order of
sentences, a five-point scale from highly redundant (1) to exploring a wide range of aspects of the
theme (5), and a strict output format (one JSON object). Any text file can replace them, for
example the paper's own Figure 8 prompt; placeholders are replaced literally (other braces are
left alone):

* ``{{set}}`` (absolute) or ``{{set1}}`` and ``{{set2}}`` (pairwise): the sentences, one per line,
  numbered ``1.``, ``2.``, ...; required.
* ``{{context}}``: ``Input: <the prompt the set answers>`` and a blank line when the item has one,
  else nothing; optional.

Few-shot examples (section 4.1.2: the paper used 8 human-labelled pairs) come from a JSONL file,
one example a line: ``{"set": [...], "score": 4, "rationale": "...", "context": "..."}``
(absolute) or ``{"set1": [...], "set2": [...], "score1": 2, "score2": 5, ...}`` (pairwise). Each
example becomes a user turn rendered with the same template and an assistant turn that answers
in the template's JSON format. A small default set written here ships with the package; ``none``
turns few-shot prompting off.

Templates and examples are identified by name and a hash of their content: both go into the
result's signature and the request cache key.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import json_lines, read_text

__all__ = ["Template", "FewShot", "load_template", "load_fewshot", "render_set",
           "absolute_messages", "pairwise_messages", "absolute_completion",
           "pairwise_completion", "TASKS", "STYLES"]

TASKS = ("absolute", "pairwise")
#: Template styles: ``chat`` (messages for /chat/completions) or ``completion`` (a text the model
#: continues, for the log-probability answer mode).
STYLES = ("chat", "completion")
_PLACEHOLDERS = {
    ("absolute", "chat"): ("{{set}}",),
    ("pairwise", "chat"): ("{{set1}}", "{{set2}}"),
    ("absolute", "completion"): ("{{examples}}", "{{set}}", "{{score}}"),
    ("pairwise", "completion"): ("{{examples}}", "{{set1}}", "{{set2}}", "{{score1}}",
                                 "{{score2}}"),
}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _package_text(name: str) -> str:
    return resources.files("divmeter.backends.judge").joinpath("templates", name).read_text("utf-8")


def _source_text(source: str, default: str, what: str, expected: str) -> tuple[str, str]:
    """``(text, name)`` of a template or few-shot source: the package file ``default`` for
    ``"default"``, else the file at path ``source`` (named by its base name)."""
    if source == "default":
        return _package_text(default), "default"
    try:
        return read_text(source, f"a {what}"), os.path.basename(source)
    except OSError as exc:
        raise InvalidInputError(
            f"{what} {source!r} cannot be read ({exc.strerror}); expected {expected}.") from None


@dataclass(frozen=True)
class Template:
    """A prompt template: its task, name (``default`` or the file name), text, content hash and
    style (``chat`` or ``completion``)."""

    task: str
    name: str
    text: str
    style: str = "chat"

    @property
    def hash(self) -> str:
        """First 8 hex digits of the SHA-256 of the text."""
        return _hash(self.text)

    @property
    def id(self) -> str:
        """``name@hash``, as shown in signatures."""
        return f"{self.name}@{self.hash}"


@dataclass(frozen=True)
class FewShot:
    """Few-shot examples: name (``default``, ``none`` or the file name) and the examples."""

    name: str
    examples: tuple[dict[str, Any], ...]

    @property
    def id(self) -> str:
        """``none``, or ``name@hash/k`` with k the number of examples."""
        if not self.examples:
            return "none"
        blob = json.dumps(self.examples, sort_keys=True, ensure_ascii=False)
        return f"{self.name}@{_hash(blob)}/{len(self.examples)}"


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise InvalidInputError(f"`task` must be absolute or pairwise; got {task!r}.")


def load_template(task: str, template: str = "default", *, style: str = "chat") -> Template:
    """The template of ``task``: ``"default"`` (package data) or a path to a text file.

    Args:
        task: ``absolute`` or ``pairwise``.
        template: ``"default"`` or a path.
        style: ``chat`` (the default templates ``absolute.txt`` / ``pairwise.txt``) or
            ``completion`` (``absolute_completion.txt`` / ``pairwise_completion.txt``, for the
            log-probability answer mode).

    Raises:
        InvalidInputError: Unknown task or style, unreadable file, a required placeholder
            missing, or (completion) a rating placeholder before the sets.

    Example:
        >>> t = load_template("absolute")
        >>> t.name, "{{set}}" in t.text, len(t.hash)
        ('default', True, 8)
        >>> load_template("pairwise", style="completion").text.count("{{score")
        2
    """
    _check_task(task)
    if style not in STYLES:
        raise InvalidInputError(f"`style` of a judge template must be chat or completion; got "
                                f"{style!r}.")
    if not isinstance(template, str):
        raise InvalidInputError(f"`template` of judge must be 'default' or a path; got "
                                f"{template!r}.")
    default = f"{task}.txt" if style == "chat" else f"{task}_completion.txt"
    text, name = _source_text(template, default, "judge template",
                              "'default' or a path to a text file")
    need = _PLACEHOLDERS[(task, style)]
    missing = [p for p in need if p not in text]
    if missing:
        raise InvalidInputError(
            f"judge template {name!r} for the {task} task ({style} style) must contain "
            f"{' and '.join(need)}; missing {', '.join(missing)}.")
    if style == "completion":
        sets = [text.index(p) for p in need if p.startswith("{{set")]
        scores = [text.index(p) for p in need if p.startswith("{{score")]
        if min(scores) < max(sets) or scores != sorted(scores) or \
                text.index("{{examples}}") > min(sets):
            raise InvalidInputError(
                f"judge template {name!r} ({style} style) must put {{{{examples}}}} first, then "
                "the sets, then the rating placeholders in order; the prompt is cut at the "
                "rating.")
    return Template(task, name, text, style)


def _example_ok(ex: Any, task: str, where: str) -> dict[str, Any]:
    if not isinstance(ex, dict):
        raise InvalidInputError(f"{where}: expected an object; got {type(ex).__name__}.")
    need = ("set", "score") if task == "absolute" else ("set1", "set2", "score1", "score2")
    for key in need:
        if key not in ex:
            raise InvalidInputError(f"{where}: field {key!r} is missing (a {task} example needs "
                                    f"{', '.join(need)}).")
    for key in need:
        v = ex[key]
        if key.startswith("set"):
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                raise InvalidInputError(f"{where}: field {key!r} must be a list of strings.")
        elif isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 5:
            raise InvalidInputError(f"{where}: field {key!r} must be an integer from 1 to 5; "
                                    f"got {v!r}.")
    return ex


def load_fewshot(task: str, fewshot: str | None = "default") -> FewShot:
    """Few-shot examples of ``task``: ``"default"``, ``"none"`` (or ``None``) or a path to a
    JSONL file.

    Raises:
        InvalidInputError: Naming file and line for a malformed example.

    Example:
        >>> load_fewshot("absolute").id.startswith("default@")
        True
        >>> load_fewshot("pairwise", "none").id
        'none'
    """
    _check_task(task)
    if fewshot is None or fewshot == "none":
        return FewShot("none", ())
    if not isinstance(fewshot, str):
        raise InvalidInputError(f"`fewshot` of judge must be 'default', 'none' or a path; got "
                                f"{fewshot!r}.")
    text, name = _source_text(fewshot, f"fewshot_{task}.jsonl", "few-shot file",
                              "'default', 'none' or a path to a JSONL file")
    lines = text.encode("utf-8").splitlines(keepends=True)
    examples = [_example_ok(obj, task, where) for where, obj in json_lines(lines, name)]
    return FewShot(name, tuple(examples))


def render_set(texts: Sequence[str]) -> str:
    """The sentences of a set, one per line, numbered from 1 (line breaks inside a sentence
    become spaces).

    Example:
        >>> print(render_set(["A cat.", "A dog\\nbarks."]))
        1. A cat.
        2. A dog barks.
    """
    return "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(texts, 1))


def _context(context: str | None) -> str:
    return f"Input: {' '.join(context.split())}\n\n" if context else ""


def _fill(template: Template, context: str | None, **sets: Sequence[str]) -> str:
    text = template.text.replace("{{context}}", _context(context))
    for key, texts in sets.items():
        text = text.replace("{{" + key + "}}", render_set(texts))
    return text


def _answer(rationale: str | None, **scores: int) -> str:
    out: dict[str, Any] = {}
    if rationale:
        out["rationale"] = rationale
    out.update(scores)
    return json.dumps(out, ensure_ascii=False)


def absolute_messages(template: Template, fewshot: FewShot, texts: Sequence[str],
                      context: str | None = None) -> list[dict[str, str]]:
    """Chat messages asking for the absolute rating of one set (few-shot turns first).

    Example:
        >>> m = absolute_messages(load_template("absolute"), load_fewshot("absolute", "none"),
        ...                       ["A cat.", "A dog."], "pets")
        >>> [x["role"] for x in m], "Input: pets" in m[0]["content"]
        (['user'], True)
    """
    msgs: list[dict[str, str]] = []
    for ex in fewshot.examples:
        msgs.append({"role": "user", "content": _fill(template, ex.get("context"), set=ex["set"])})
        msgs.append({"role": "assistant",
                     "content": _answer(ex.get("rationale"), score=ex["score"])})
    msgs.append({"role": "user", "content": _fill(template, context, set=texts)})
    return msgs


def pairwise_messages(template: Template, fewshot: FewShot, first: Sequence[str],
                      second: Sequence[str], context: str | None = None
                      ) -> list[dict[str, str]]:
    """Chat messages asking for the ratings of two sets shown as Set 1 (``first``) and Set 2."""
    msgs: list[dict[str, str]] = []
    for ex in fewshot.examples:
        msgs.append({"role": "user", "content": _fill(template, ex.get("context"),
                                                      set1=ex["set1"], set2=ex["set2"])})
        msgs.append({"role": "assistant", "content": _answer(
            ex.get("rationale"), Diversity_Score_Set1=ex["score1"],
            Diversity_Score_Set2=ex["score2"])})
    msgs.append({"role": "user", "content": _fill(template, context, set1=first, set2=second)})
    return msgs


# ------------------------------------------------------------------------------------------------
# completion style (log-probability answers)


def _completion_parts(template: Template) -> tuple[str, str]:
    """``(head, block)``: the text before ``{{examples}}`` and the per-item block after it."""
    head, _, block = template.text.partition("{{examples}}")
    return head, block


def _fill_block(block: str, context: str | None, scores: dict[str, str], cut: str | None,
                **sets: Sequence[str]) -> str:
    """The block with context, sets and the given ratings filled, cut just before the
    placeholder ``cut`` (the rating the model writes next), or whole when ``cut`` is None."""
    if cut is not None:
        block = block[:block.index(cut)]
    text = block.replace("{{context}}", f"Input: {' '.join(context.split())}\n" if context
                         else "")
    for key, texts in sets.items():
        text = text.replace("{{" + key + "}}", render_set(texts))
    for key, value in scores.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def _examples(block: str, fewshot: FewShot, task: str) -> str:
    out = []
    for ex in fewshot.examples:
        if task == "absolute":
            done = _fill_block(block, ex.get("context"), {"score": str(ex["score"])}, None,
                               set=ex["set"])
        else:
            done = _fill_block(block, ex.get("context"), {"score1": str(ex["score1"]),
                                                          "score2": str(ex["score2"])}, None,
                               set1=ex["set1"], set2=ex["set2"])
        out.append(done.rstrip("\n") + "\n\n")
    return "".join(out)


def absolute_completion(template: Template, fewshot: FewShot, texts: Sequence[str],
                        context: str | None = None) -> str:
    """The completion prompt for the absolute rating of one set: rubric, few-shot examples with
    their ratings, then the set's block cut where its rating goes.

    Example:
        >>> p = absolute_completion(load_template("absolute", style="completion"),
        ...                         load_fewshot("absolute", "none"), ["A cat.", "A dog."])
        >>> p.endswith("1. A cat.\\n2. A dog.\\nDiversity (1 to 5): ")
        True
    """
    head, block = _completion_parts(template)
    return head + _examples(block, fewshot, "absolute") + _fill_block(
        block, context, {}, "{{score}}", set=texts)


def pairwise_completion(template: Template, fewshot: FewShot, first: Sequence[str],
                        second: Sequence[str], context: str | None = None,
                        score1: int | None = None) -> str:
    """The completion prompt for a pair: cut where Set 1's rating goes, or, given ``score1``,
    with that rating written and cut where Set 2's rating goes.

    Example:
        >>> t, f = load_template("pairwise", style="completion"), load_fewshot("pairwise", "none")
        >>> pairwise_completion(t, f, ["a"], ["b"], score1=4).endswith(
        ...     "Set 1 (1 to 5): 4\\nDiversity of Set 2 (1 to 5): ")
        True
    """
    head, block = _completion_parts(template)
    scores = {} if score1 is None else {"score1": str(score1)}
    cut = "{{score1}}" if score1 is None else "{{score2}}"
    return head + _examples(block, fewshot, "pairwise") + _fill_block(
        block, context, scores, cut, set1=first, set2=second)
