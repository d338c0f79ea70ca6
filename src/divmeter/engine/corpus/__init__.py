"""Corpus mode: a metric over every response of many shards taken as one corpus.

:mod:`divmeter.engine.corpus.stats` holds the generic merge machinery (each metric declares its own
accumulator in its module); :mod:`divmeter.engine.corpus.shards` reads one shard into accumulators;
:mod:`divmeter.engine.corpus.run` streams files (shards) through them, with checkpoints.
"""

from divmeter.engine.corpus.stats import (
    Accumulator,
    ExactSum,
    OneWorker,
    ResponseMean,
    TwoPass,
    make_accumulator,
    merge_kind,
)

__all__ = ["Accumulator", "ExactSum", "OneWorker", "ResponseMean", "TwoPass", "make_accumulator",
           "merge_kind"]
