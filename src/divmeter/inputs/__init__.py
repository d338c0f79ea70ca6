"""Layer 1, inputs: readers and writers of every file divmeter takes or makes (``data/``),
tokenizers and n-gram keys (``text/``), Decan's synthetic scenarios (``scenarios.py``)."""
