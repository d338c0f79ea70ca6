"""Response sets, readers and writers."""

from divmeter.data.model import ResponseSet, as_texts

__all__ = ["ResponseSet", "as_texts"]
