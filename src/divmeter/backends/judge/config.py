"""The settings of a judge run (:class:`JudgeConfig`): what is asked, how often, how the answer
is read, and the signature that records them.

This is the judge's lowest module with the other rating-core modules (``prompts``, ``parse``,
``results``, ``logprobs``, ``requests``, ``ask``, ``run``): they need only the HTTP client
below them, so the ``judge`` metric (:mod:`divmeter.metrics.judge`) can use them without
importing anything above the metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from divmeter.backends.judge.prompts import FewShot, Template, load_fewshot, load_template
from divmeter.core.errors import InvalidInputError
from divmeter.core.result import make_signature

__all__ = ["ANSWERS", "CAPS", "COMMONSENSE", "JudgeConfig", "ORDERS"]

COMMONSENSE = (
    "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in Commonsense "
    "Generation "
    "(commonsense meta-evaluation; LLM annotator protocol, section 4.1 and appendices D-F)"
)
ORDERS = ("both", "ab")
#: How the judge's answer becomes a rating (see :class:`JudgeConfig`).
ANSWERS = ("text", "logprobs", "schema")
#: Upper bounds of the counts that multiply requests, time or memory (the judge metric's
#: declared caps: ``divmeter list judge``).
CAPS = {"samples": 100, "max_tokens": 10**6, "retries": 100, "concurrency": 1024,
        "max_attempts": 100, "top_logprobs": 100}


@dataclass(frozen=True)
class JudgeConfig:
    """Settings of a judge run (validated by :meth:`check`).

    Attributes:
        model: ``openai:NAME`` (any OpenAI-compatible server) or ``NAME``; the server sees
            ``NAME``.
        base_url: API root (default ``$DIVMETER_BASE_URL`` / ``$OPENAI_BASE_URL``).
        api_key: Bearer token (default ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``); never in
            signatures, output, logs or the cache.
        samples: Answers per item (N), averaged (the paper: 5).
        temperature: Sampling temperature (the paper: 1.0, appendix E).
        max_tokens: Longest answer per request (``text`` and ``schema`` answers).
        template: ``default`` or a path (see :mod:`divmeter.backends.judge.prompts`); the
            ``logprobs`` answer mode takes a completion-style template.
        fewshot: ``default``, ``none`` or a path to a JSONL file.
        retries: Re-asks per sample after an unparseable answer (bounded; ``text`` and
            ``schema`` answers).
        seed: Sent as ``seed`` (+ sample index, + 1000 x re-ask) when set, for servers that
            honour it; ``None`` sends none. In ``logprobs`` mode it seeds the draws of the
            samples from the rating distribution (``None``: 0).
        orders: Pairwise only: ``both`` (A/B then B/A) or ``ab``.
        concurrency: Requests in flight.
        timeout: Seconds per request.
        max_attempts: HTTP attempts per request (429 / 5xx / time-outs retried with back-off).
        cache: ``default``, a folder, or ``None``.
        answer: How an answer becomes a rating. ``text`` (the paper's protocol): a chat answer
            in the template's JSON format, parsed strictly (:mod:`divmeter.backends.judge.parse`); a
            model that does not follow the format gives unparseable answers. ``logprobs``: a
            completion-style prompt cut where the rating goes, sent to ``/completions`` with
            ``logprobs``; the rating is read from the log-probabilities of the tokens ``1`` to
            ``5`` (:mod:`divmeter.backends.judge.logprobs`), so every answer that lists one of them
            among its ``top_logprobs`` most likely tokens is valid (llama.cpp, vLLM and TGI return
            them). ``schema``: a chat answer constrained by a JSON schema (``response_format``;
            OpenAI, vLLM, llama.cpp), parsed as ``text``.
        top_logprobs: ``logprobs`` mode: how many most likely tokens the server lists.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    samples: int = 5
    temperature: float = 1.0
    max_tokens: int = 256
    template: str = "default"
    fewshot: str | None = "default"
    retries: int = 2
    seed: int | None = None
    orders: str = "both"
    concurrency: int = 4
    timeout: float = 60.0
    max_attempts: int = 5
    cache: str | None = "default"
    answer: str = "text"
    top_logprobs: int = 20

    @property
    def model_name(self) -> str:
        """The name sent to the server (``openai:`` prefix removed)."""
        return self.model[len("openai:"):] if self.model.startswith("openai:") else self.model

    @property
    def style(self) -> str:
        """The template style the answer mode needs: ``completion`` or ``chat``."""
        return "completion" if self.answer == "logprobs" else "chat"

    def check(self) -> JudgeConfig:
        """Validate every field; one-line :class:`InvalidInputError` naming the bad one."""
        if not isinstance(self.model, str) or not self.model_name.strip():
            raise InvalidInputError(
                "`model` of judge is required, e.g. model=openai:gpt-4o (or the name a local "
                f"server serves); got {self.model!r}.")
        for name, low in (("samples", 1), ("max_tokens", 1), ("retries", 0), ("concurrency", 1),
                          ("max_attempts", 1), ("top_logprobs", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InvalidInputError(f"`{name}` of judge must be an integer >= {low}; got "
                                        f"{v!r}.")
            if name in CAPS and v > CAPS[name]:  # the count multiplies requests or memory
                got = f"{v:,}" if v < 10**15 else "more"
                raise InvalidInputError(f"`{name}` of judge must be at most {CAPS[name]:,}; "
                                        f"got {got}.")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2:
            raise InvalidInputError(f"`temperature` of judge must be a number from 0 to 2; got "
                                    f"{t!r}.")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed,
                                                                                     int)):
            raise InvalidInputError(f"`seed` of judge must be an integer or none; got "
                                    f"{self.seed!r}.")
        if self.orders not in ORDERS:
            raise InvalidInputError(f"`orders` of judge must be both or ab; got {self.orders!r}.")
        if self.answer not in ANSWERS:
            raise InvalidInputError(f"`answer` of judge must be text, logprobs or schema; got "
                                    f"{self.answer!r}.")
        to = self.timeout
        if isinstance(to, bool) or not isinstance(to, (int, float)) or not to > 0:
            raise InvalidInputError(f"`timeout` of judge must be a number > 0; got {to!r}.")
        return self

    def client(self) -> Any:
        """The shared :class:`~divmeter.backends.http.HttpClient` for these settings."""
        from divmeter.backends.http import HttpClient

        return HttpClient(self.base_url, self.api_key, concurrency=self.concurrency,
                          timeout=float(self.timeout), max_attempts=self.max_attempts,
                          cache=self.cache)

    def prompts(self, task: str) -> tuple[Template, FewShot]:
        """The template (in the style the answer mode needs) and few-shot examples of
        ``task``."""
        return (load_template(task, self.template, style=self.style),
                load_fewshot(task, self.fewshot))

    def signature(self, task: str, template: Template, fewshot: FewShot) -> str:
        """``judge|task:...|model:...|template:name@hash|fewshot:...|answer:...|n:5|temp:1|...|v:X``.

        ``logprobs`` answers add ``top`` (the ``top_logprobs`` asked for) and leave out
        ``max_tokens`` and ``retries``, which they do not use.
        """
        model = self.model if self.model.startswith("openai:") else f"openai:{self.model}"
        lp = self.answer == "logprobs"
        return make_signature(
            "judge", task=task, model=model, template=template.id, fewshot=fewshot.id,
            answer=self.answer, top=self.top_logprobs if lp else None,
            n=self.samples, temp=float(self.temperature),
            max_tokens=None if lp else self.max_tokens, retries=None if lp else self.retries,
            seed=self.seed,
            orders=("ab+ba" if self.orders == "both" else "ab") if task == "pairwise" else None,
            agg="mean")
