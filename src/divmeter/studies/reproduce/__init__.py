"""Published numbers recomputed from the fetched data (``divmeter reproduce``), and the
evidence table of what the benchmarks say about each metric (``divmeter reproduce
--evidence``, shipped as ``evidence.json``, shown by ``divmeter list``)."""

from divmeter.studies.reproduce.published import Claim, claims
from divmeter.studies.reproduce.run import Reproduction, Row, reproduce

__all__ = ["Claim", "claims", "Reproduction", "Row", "reproduce"]
