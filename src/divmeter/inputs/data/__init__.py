"""Response sets, readers and writers.

:mod:`~divmeter.inputs.data.lines` opens sources and reads JSON lines (one wording for every error),
:mod:`~divmeter.inputs.data.records` and :mod:`~divmeter.inputs.data.items` validate record shapes,
:mod:`~divmeter.inputs.data.readers` and :mod:`~divmeter.inputs.data.writers` read and write files,
and :mod:`~divmeter.inputs.data.tables` loads the inputs of meta-evaluation (score tables, pair
files).
"""

from divmeter.inputs.data.lines import FORMATS, detect_format
from divmeter.inputs.data.model import ResponseSet, as_texts
from divmeter.inputs.data.readers import (
    read_cdm_jsonl,
    read_instantiation_sets,
    read_records,
    read_sets,
)
from divmeter.inputs.data.writers import RecordWriter, open_record_writer, write_sets

__all__ = [
    "ResponseSet",
    "as_texts",
    "FORMATS",
    "detect_format",
    "read_sets",
    "write_sets",
    "RecordWriter",
    "open_record_writer",
    "read_records",
    "read_cdm_jsonl",
    "read_instantiation_sets",
]
