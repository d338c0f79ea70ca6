"""Diversity in an inspect-ai evaluation: score the epochs of each sample with divmeter metrics.

inspect-ai (``pip install 'divmeter[inspect]'``) runs every sample of a task ``epochs`` times and
reduces the per-epoch scores of a sample with a *score reducer*. Diversity is a property of the
set of a sample's generations, so divmeter enters at the reduction:

* :func:`generation_recorder`, a scorer, keeps each epoch's completion (``answer``), its epoch,
  the sample's input text (the prompt of metrics that take one) and, when the model returned
  log-probabilities, the completion's sequence log-probability (for
  ``semantic-entropy:estimator=weighted``); its own value is NaN (unscored);
* :func:`diversity_reducer` scores the sample's completions, in epoch order, with one divmeter
  metric (any registered name, with parameters) and returns its value (NaN with the reason when
  the metric is undefined, e.g. fewer than two non-blank completions), the signature and the
  details as the score's metadata;
* :func:`diversity` gives both in one line::

      Task(dataset=..., solver=generate(), **diversity("distinct-k", "vendi-embedding", epochs=5))

  and the log's results hold, per metric, the mean and standard error over samples (one
  result per reducer, ``reducer="divmeter/distinct-k"``: the metric's column name), and its
  ``reductions`` each sample's value, signature and details.

Only this module imports inspect-ai, inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from divmeter.core._optional import require

__all__ = ["generation_recorder", "diversity_reducer", "diversity", "sequence_logprob"]


def sequence_logprob(output: Any) -> float | None:
    """The sum of the generated tokens' log-probabilities of an inspect ``ModelOutput``'s first
    choice, or ``None`` when the model returned none."""
    try:
        content = output.choices[0].logprobs.content
    except (AttributeError, IndexError, TypeError):
        return None
    if not content:
        return None
    return float(sum(t.logprob for t in content))


def generation_recorder() -> Any:
    """An inspect-ai scorer that records each epoch's completion for :func:`diversity_reducer`.

    Returns:
        A scorer (value NaN; ``answer`` = the completion; metadata ``epoch``, ``input`` and,
        when available, ``logprob``).
    """
    scorer_api = require("inspect_ai.scorer", extra="inspect", package="inspect-ai")

    @scorer_api.scorer(metrics=[scorer_api.mean(), scorer_api.stderr()],
                       name="divmeter_generations")
    def divmeter_generations() -> Any:
        async def score(state: Any, target: Any) -> Any:
            meta: dict[str, Any] = {"epoch": int(state.epoch), "input": state.input_text}
            lp = sequence_logprob(state.output)
            if lp is not None:
                meta["logprob"] = lp
            return scorer_api.Score(value=math.nan, answer=state.output.completion,
                                    metadata=meta)

        return score

    return divmeter_generations()


def diversity_reducer(metric: str, **params: Any) -> Any:
    """An inspect-ai score reducer: a divmeter metric over a sample's epochs.

    Args:
        metric: A registered metric, optionally with parameters (``"distinct-k:threshold=0.5"``).
        **params: More parameters of the metric. The sample's input text is passed as ``prompt``
            to metrics that take one, unless given here; the completions' sequence
            log-probabilities, when every epoch has one, as the field ``logprobs``.

    Returns:
        A reducer named ``divmeter/<column>`` (the column name ``divmeter score`` would use),
        whose score's value is the metric's (NaN when undefined) and whose metadata holds
        ``signature``, ``reason``, ``details`` and ``epochs``.

    Raises:
        InvalidInputError: An unknown metric or a bad parameter (before any sample runs).
    """
    from divmeter.api import score
    from divmeter.engine.registry import check_params, column_name, get_metric, parse_metric_arg

    name, inline = parse_metric_arg(metric)
    spec = get_metric(name)
    merged = {**inline, **params}
    check_params(spec, merged)
    column = column_name(name, merged)
    reducer_api = require("inspect_ai.scorer", extra="inspect", package="inspect-ai")

    @reducer_api.score_reducer(name=f"divmeter/{column}")
    def divmeter_reducer() -> Any:
        def reduce(scores: list[Any]) -> Any:
            ordered = sorted(scores, key=lambda s: (s.metadata or {}).get("epoch", 0))
            texts = [s.answer or "" for s in ordered]
            kwargs = dict(merged)
            meta0 = ordered[0].metadata or {} if ordered else {}
            if "prompt" in spec.params and "prompt" not in kwargs and meta0.get("input"):
                kwargs["prompt"] = meta0["input"]
            lps = [(s.metadata or {}).get("logprob") for s in ordered]
            if "fields" in spec.params and "fields" not in kwargs and lps and all(
                    lp is not None for lp in lps):
                kwargs["fields"] = {"logprobs": lps}
            r = score(texts, name, **kwargs)
            out = r.to_dict(with_details=True)
            value = math.nan if r.value is None else float(r.value)
            return reducer_api.Score(
                value=value, answer=None,
                explanation=r.reason or r.signature,
                metadata={"signature": r.signature, "reason": r.reason,
                          "details": out.get("details", {}),
                          "epochs": [(s.metadata or {}).get("epoch") for s in ordered]})

        return reduce

    return divmeter_reducer()


def diversity(*metrics: str, epochs: int = 5, **params: Any) -> dict[str, Any]:
    """The scorer and epochs of an inspect-ai ``Task`` that scores each sample's ``epochs``
    generations with divmeter ``metrics``: ``Task(..., **diversity("distinct-k", epochs=5))``.

    Args:
        *metrics: Registered metrics with parameters (default ``distinct-k``).
        epochs: Generations per sample (at least 2: diversity needs two texts).
        **params: Parameters given to every metric (e.g. ``model="minilm"``).

    Returns:
        ``{"scorer": generation_recorder(), "epochs": Epochs(epochs, [reducers])}``.
    """
    from divmeter.core.errors import InvalidInputError

    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 2:
        raise InvalidInputError(f"`epochs` must be an integer >= 2 (diversity needs two "
                                f"generations); got {epochs!r}.")
    names: Sequence[str] = metrics or ("distinct-k",)
    inspect_ai = require("inspect_ai", extra="inspect", package="inspect-ai")
    reducers = [diversity_reducer(m, **params) for m in names]
    return {"scorer": generation_recorder(), "epochs": inspect_ai.Epochs(epochs, reducers)}
