"""Layer 0, the foundation: errors, the version, lazy optional imports, secrets kept out of
output, declared parameters, results and signatures, the rule for degenerate sets, memory and
cost limits, large symmetric eigenvalues. Imports nothing else of divmeter."""
