"""Response sets, readers and writers."""

from divmeter.data.io import (
    FORMATS,
    RecordWriter,
    detect_format,
    open_record_writer,
    read_records,
    read_sets,
    write_sets,
)
from divmeter.data.model import ResponseSet, as_texts

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
]
