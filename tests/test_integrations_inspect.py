"""The inspect-ai entry (issue 25): a sample's epochs scored with divmeter metrics.

A real inspect-ai evaluation (``inspect_ai.eval``) with inspect's own mock model
(``mockllm/model``, local: no network, no key; its outputs carry their token usage, else it
would count tokens with tiktoken, which downloads its encoding), whose outputs are given: one
sample, four epochs, answering the same thing four times or four different things. The sample's
reduced score must equal divmeter's score of the same texts, with its signature and details;
the log's metric is the mean over samples.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="needs inspect-ai (pip install -e '.[inspect]')")

import divmeter  # noqa: E402
from divmeter.apps.integrations.inspect import diversity, sequence_logprob  # noqa: E402
from divmeter.core.errors import InvalidInputError  # noqa: E402

SAME = ["Paris is the capital of France."] * 4
DIFFERENT = ["Paris is the capital of France.", "Stocks fell sharply on Monday.",
             "She baked bread for her grandmother.", "The volcano erupted at dawn."]


def _run(tmp_path: Path, metrics: tuple[str, ...], outputs: list[str]):
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    def output(text: str) -> ModelOutput:
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        # with usage given, the mock model does not count tokens with tiktoken (whose encoding
        # file would be downloaded): the run stays offline
        out.usage = ModelUsage(input_tokens=3, output_tokens=len(text), total_tokens=3)
        return out

    model = get_model("mockllm/model", custom_outputs=[output(t) for t in outputs])
    task = Task(dataset=[Sample(input="Say something.", id="s1")], solver=generate(),
                **diversity(*metrics, epochs=4))
    logs = eval(task, model=model, log_dir=str(tmp_path), display="none", max_connections=1,
                max_samples=1)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.mark.embed
@pytest.mark.parametrize(("texts", "distinct"), [(SAME, 1), (DIFFERENT, 4)])
def test_epochs_are_scored_with_divmeter(tmp_path: Path, texts: list[str], distinct: int
                                         ) -> None:
    log = _run(tmp_path, ("distinct-k", "ngram-cosine"), texts)
    red = {r.reducer: r.samples[0] for r in log.reductions}
    dk = red["divmeter/distinct-k"]
    want = divmeter.score(texts, "distinct-k", prompt="Say something.")
    assert dk.value == want.value == distinct / 4
    assert dk.metadata["signature"] == want.signature
    assert dk.metadata["details"]["distinct"] == distinct
    assert sorted(dk.metadata["epochs"]) == [1, 2, 3, 4]
    ng = red["divmeter/ngram-cosine"]
    assert ng.value == pytest.approx(divmeter.score(texts, "ngram-cosine").value)
    scores = {s.reducer: s for s in log.results.scores}
    assert scores["divmeter/distinct-k"].metrics["mean"].value == pytest.approx(distinct / 4)


@pytest.mark.embed
def test_undefined_metric_is_nan_with_the_reason(tmp_path: Path) -> None:
    log = _run(tmp_path, ("distinct-k",), ["", "", "", "only one"])
    dk = log.reductions[0].samples[0]
    assert math.isnan(dk.value)
    assert dk.metadata["reason"] == "fewer than two non-blank responses (got 1)"


def test_bad_metric_or_epochs_refused_before_running() -> None:
    with pytest.raises(InvalidInputError, match="`n` of distinct-n must be an integer >= 1"):
        diversity("distinct-n:n=0")
    with pytest.raises(InvalidInputError, match="`epochs` must be an integer >= 2"):
        diversity("distinct-n", epochs=1)


def test_sequence_logprob_of_model_output() -> None:
    from inspect_ai.model import ModelOutput
    from inspect_ai.model._model_output import Logprob, Logprobs

    out = ModelOutput.from_content(model="m", content="ab")
    assert sequence_logprob(out) is None
    out.choices[0].logprobs = Logprobs(content=[Logprob(token="a", logprob=-0.5),
                                                Logprob(token="b", logprob=-1.25)])
    assert sequence_logprob(out) == -1.75
