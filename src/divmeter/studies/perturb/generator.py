"""The text-generator interface the generator-based builders (Para-k, Nonsensical, CDM fillers)
are written against, prompt templates, and a small chat-server adapter.

:class:`Generator` is the protocol of ``divmeter.studies.generation.get_generator(...)`` objects:
``generate(prompts, n, *, temperature, max_tokens, seed) -> list[list[str]]`` (``n`` samples per
prompt, in prompt order) plus a ``signature`` string. Until that module is merged,
:class:`ChatServerGenerator` implements the protocol over the shared
:class:`divmeter.backends.http.HttpClient` and an OpenAI-compatible ``/chat/completions``
endpoint (llama.cpp's server, vLLM, a hosted API). Any object with that shape works.
"""

from __future__ import annotations

import hashlib
import os
import string
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import read_text

__all__ = [
    "COMPLETION_TEMPLATES",
    "ChatServerGenerator",
    "Generator",
    "Template",
    "clean_output",
    "is_chat",
    "load_template",
]


@runtime_checkable
class Generator(Protocol):
    """What a builder needs from a generator (``divmeter.studies.generation`` objects have this
    shape).

    Attributes:
        signature: Model and decoding identity, recorded in every built set's signature.
    """

    signature: str

    def generate(self, prompts: list[str], n: int, *, temperature: float, max_tokens: int,
                 seed: int) -> list[list[str]]:
        """``n`` samples for each prompt, as one list per prompt in input order."""
        ...


class Template:
    """A prompt template with named ``{fields}`` (``str.format`` syntax; ``{{``/``}}`` for a
    literal brace).

    Args:
        text: The template text.
        name: Where it came from (a package template name or a file path), for messages.
        fields: The fields it must contain, e.g. ``("sentence",)``.

    Raises:
        InvalidInputError: A required field is missing, or an unknown field is used.

    Example:
        >>> Template("Say {sentence} again.", "t", ("sentence",)).fill(sentence="hi")
        'Say hi again.'
    """

    def __init__(self, text: str, name: str, fields: tuple[str, ...]) -> None:
        try:
            used = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
        except ValueError as exc:
            raise InvalidInputError(f"template {name}: {exc}; use {{{{ and }}}} for braces.")\
                from None
        missing = [f for f in fields if f not in used]
        unknown = sorted(used - set(fields))
        if missing or unknown:
            raise InvalidInputError(
                f"template {name} must use the fields {{{'}, {'.join(fields)}}}; "
                f"got {', '.join('{' + f + '}' for f in sorted(used)) or 'none'}."
            )
        self.text = text
        self.name = name
        self.fields = fields
        self.sha = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def fill(self, **values: str) -> str:
        """The prompt with every field replaced."""
        return self.text.format(**values)


#: Builders with a completion-style (few-shot) packaged template for base models.
COMPLETION_TEMPLATES = ("paraphrase", "nonsensical")


def is_chat(generator: Any) -> bool:
    """Whether a generator wraps prompts as chat messages: its ``chat`` attribute (divmeter's
    generators set it: a local model with a chat template, or ``--chat``), else ``True`` (an
    object that does not say is taken to answer instructions)."""
    chat = getattr(generator, "chat", True)
    return True if chat is None else bool(chat)


def load_template(builder: str, path: str | os.PathLike[str] | None = None, *,
                  style: str = "chat") -> Template:
    """The packaged template of a builder, or the user's template file at ``path`` with the
    same fields: ``paraphrase`` ``{sentence}``, ``nonsensical`` ``{concepts}``, ``cdm``
    ``{reference}`` and ``{domain}``, ``pattr`` ``{topic}``, ``{style}`` and ``{instructions}``.

    ``style="completion"`` picks the few-shot completion template of ``paraphrase`` and
    ``nonsensical`` (``*_completion.txt``: worked examples the model continues, ending with the
    label its answer follows), written for base models that continue text rather than follow
    an instruction; the other builders have one template. A user's file is used as it is.

    Raises:
        InvalidInputError: Unknown builder or style, or a template without its field.
        FileNotFoundError: ``path`` does not exist.
    """
    if style not in ("chat", "completion"):
        raise InvalidInputError(f"`style` of a template must be chat or completion; got "
                                f"{style!r}.")
    fields = {"paraphrase": ("sentence",), "nonsensical": ("concepts",),
              "cdm": ("domain", "reference"), "pattr": ("instructions", "style", "topic")}
    if builder not in fields:
        raise InvalidInputError(
            f"no template for {builder!r}; expected one of {', '.join(fields)}."
        )
    if path is None:
        name = f"{builder}_completion.txt" if (
            style == "completion" and builder in COMPLETION_TEMPLATES) else f"{builder}.txt"
        text = resources.files("divmeter.studies.perturb").joinpath(
            "templates", name).read_text(encoding="utf-8")
        if name.endswith("_completion.txt"):
            text = text.rstrip()  # the model continues right after the answer's label
        return Template(text, name, fields[builder])
    return Template(read_text(path, "a template"), str(path), fields[builder])


_LABELS = ("paraphrase:", "paraphrased:", "sentence:", "answer:", "output:")


def clean_output(text: str) -> str:
    """The first non-empty line of a generation, without a leading label (``Paraphrase:``,
    ``Paraphrased:``, ``Sentence:``, ``Answer:``, ``Output:``) or enclosing quotes.

    Example:
        >>> clean_output('\\n Paraphrase: "The dog ran."\\nMore text')
        'The dog ran.'
        >>> clean_output("   ")
        ''
    """
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if line.lower().startswith(_LABELS):
        line = line.split(":", 1)[1].strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
        line = line[1:-1].strip()
    return line


class ChatServerGenerator:
    """Adapter: the :class:`Generator` protocol over an OpenAI-compatible chat endpoint.

    Each sample is one ``/chat/completions`` request with the prompt as the user message and
    ``seed + j`` as the seed of sample ``j``; requests go through the shared
    :class:`~divmeter.backends.http.HttpClient` (retries, concurrency, cache).

    Args:
        model: Model name the server serves.
        base_url: The API root ending in ``/v1`` (or ``$DIVMETER_BASE_URL``).
        api_key: Bearer token (or ``$DIVMETER_API_KEY``).
        client: An existing client (``base_url``/``api_key``/``cache`` are then ignored).
        cache: Response cache of a new client (see ``HttpClient``).
        concurrency: Requests in flight of a new client.
        timeout: Seconds per request of a new client.

    Raises:
        ServerError: A request fails for good (one line).
    """

    def __init__(self, model: str, base_url: str | None = None, *, api_key: str | None = None,
                 client: Any = None, cache: str | Path | None = None,
                 concurrency: int = 4, timeout: float = 60.0) -> None:
        from divmeter.backends.http import HttpClient

        self.model = model
        self.client = client if client is not None else HttpClient(
            base_url, api_key, cache=cache, concurrency=concurrency, timeout=timeout)
        self.signature = f"chat:{model}"
        self.chat = True

    def generate(self, prompts: list[str], n: int, *, temperature: float = 1.0,
                 max_tokens: int = 64, seed: int = 0) -> list[list[str]]:
        """``n`` chat samples per prompt (raw message contents, in prompt order)."""
        from divmeter.backends.http import Failure, ServerError

        payloads = [
            {"model": self.model, "messages": [{"role": "user", "content": p}],
             "temperature": temperature, "max_tokens": max_tokens, "seed": seed + j}
            for p in prompts for j in range(n)
        ]
        answers = self.client.post_many("chat/completions", payloads)
        texts = []
        for a in answers:
            if isinstance(a, Failure):
                raise ServerError(self.client._failure_line(a))
            try:
                texts.append(str(a["choices"][0]["message"]["content"] or ""))
            except (KeyError, IndexError, TypeError):
                raise ServerError(
                    f"{self.client.base_url}: chat answer without choices[0].message.content."
                ) from None
        return [texts[i * n:(i + 1) * n] for i in range(len(prompts))]
