"""Distributed engines: ``ray`` (:mod:`divmeter.engines.ray`, ``divmeter[dist]``)."""
