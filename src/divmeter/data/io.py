"""Former home of the readers and writers, kept as a re-export so ``divmeter.data.io.X`` still
imports: the code now lives in :mod:`divmeter.data.lines` (sources, JSON lines, formats),
:mod:`divmeter.data.readers`, :mod:`divmeter.data.writers` and :mod:`divmeter.data.records`.
New code imports from those modules (or from :mod:`divmeter.data`).
"""

from divmeter.data.lines import FORMATS, detect_format
from divmeter.data.readers import read_records, read_sets
from divmeter.data.writers import RecordWriter, dumps, open_record_writer, write_sets

# Listed in the order of the imports above (module by module), as the shim re-exports them.
__all__ = [
    "FORMATS",
    "detect_format",
    "read_records",
    "read_sets",
    "RecordWriter",
    "dumps",
    "open_record_writer",
    "write_sets",
]
