"""Score many response sets with many metrics, streaming, optionally over several processes.

:func:`score_sets` is what ``divmeter score`` runs. It yields one flat record per set, in input
order::

    {"set_id": "s1", "row": 0, "label": 1, "distinct-n": 0.71, "self-bleu:n=3": null,
     "reasons": {"self-bleu:n=3": "one response: self-BLEU needs at least two"}}

* ``row`` is the 0-based position of the set in the input. Set ids are kept as read, so files with
  repeated ids (the Tevet conTest and McDiv_nuggets files) stay unambiguous: ``row`` is the key.
* One key per metric, named by :func:`divmeter.engine.registry.column_name` (the metric name plus
  its non-default parameters, e.g. ``self-bleu:n=3``), holding a float or ``None``.
* ``reasons`` maps every ``None`` column to why: the metric's own reason for a degenerate set
  (empty set, one response, texts shorter than n), or the message of an
  :class:`~divmeter.core.errors.InvalidInputError` the metric raised on that set. Such a set does
  not stop the run.
* ``per_response`` (only when a response-granularity metric is requested) maps its column to the
  list of per-response values.
* ``signatures`` (with ``with_signatures=True``) maps each column to the result's signature.

Metrics with a ``prompt`` parameter (Decan) get each set's prompt unless the run fixes one;
metrics with a ``fields`` parameter (novelty-utility, semantic-entropy) get the set's other fields
(``ResponseSet.metadata``: a JSONL record's extra keys, e.g. per-response qualities).

One core, :func:`evaluate`, scores a chunk of sets with every metric, for
:func:`divmeter.score_many` and for :func:`score_sets` (in this process or in workers): each
metric's formula scores a whole chunk in one call (``Metric.score`` on many sets), with results
identical to per-set calls (metrics declared ``batched = False`` run set by set).
Records are still yielded one per set, in input order.

One rule for degenerate sets, for every metric, applied here (the core every metric's scoring
passes through, :func:`divmeter.score` included): a set with fewer than two non-blank responses
(a response is blank when it is empty or whitespace only) is null before the metric's kernel
runs, with the reason ``"fewer than two non-blank responses (got k)"`` (``"empty set"`` for a set
with no response at all). Diversity is a property of two texts or more. Metrics of
``granularity="response"`` (TTR, MATTR, MTLD, HD-D, PATTR, length, response compression) are
defined on one text, so for them the rule asks for one non-blank response
(``"no non-blank response"``). See :func:`divmeter.core.degenerate.degenerate_reason`.

Parameter mistakes are not set problems: every parameter of every metric is checked against the
metric's declaration (:mod:`divmeter.core.params`) before the first set, for every family and any
number of workers, so a bad ``n`` fails the run at once instead of filling a file with nulls.

The package, one reason to change per module: :mod:`~divmeter.engine.batch.plan` (resolve the
metrics), :mod:`~divmeter.engine.batch.models` (resolve their models),
:mod:`~divmeter.engine.batch.evaluate` (the core, the rule applied first),
:mod:`~divmeter.engine.batch.records` (one record per set), :mod:`~divmeter.engine.batch.summary`
(running aggregates, progress), :mod:`~divmeter.engine.batch.pool` (the driver and its worker
processes), :mod:`~divmeter.engine.batch.resume` (what an earlier run wrote); the rule itself is
:mod:`divmeter.core.degenerate`.
"""

from divmeter.core.degenerate import degenerate_reason
from divmeter.engine.batch.evaluate import Outcome, evaluate
from divmeter.engine.batch.models import check_model
from divmeter.engine.batch.plan import MetricArg, MetricPlan, resolve_metrics
from divmeter.engine.batch.pool import BATCH_SIZE, score_sets, unscored
from divmeter.engine.batch.records import RECORD_KEYS, score_chunk
from divmeter.engine.batch.resume import completed_rows, metric_columns
from divmeter.engine.batch.summary import ProgressFn, Summary, Tally

__all__ = [
    "BATCH_SIZE",
    "MetricArg",
    "MetricPlan",
    "Outcome",
    "ProgressFn",
    "RECORD_KEYS",
    "Summary",
    "Tally",
    "check_model",
    "completed_rows",
    "degenerate_reason",
    "evaluate",
    "metric_columns",
    "resolve_metrics",
    "score_chunk",
    "score_sets",
    "unscored",
]
