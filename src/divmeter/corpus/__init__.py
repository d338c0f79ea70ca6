"""Corpus mode: a metric over every response of many shards taken as one corpus.

:mod:`divmeter.corpus.stats` holds each metric's sufficient statistics and their exact merge;
:mod:`divmeter.corpus.run` streams files (shards) through them, with checkpoints.
"""

from divmeter.corpus.stats import MERGE_KINDS, Accumulator, ExactSum, make_accumulator, merge_kind

__all__ = ["MERGE_KINDS", "Accumulator", "ExactSum", "make_accumulator", "merge_kind"]
