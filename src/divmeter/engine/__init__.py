"""Layer 3, the engine: the registry of metric definitions, and the one caller that validates
parameters, applies the rule for degenerate sets and runs metrics on one set, many sets,
files, DataFrames, precomputed vectors, corpora and a Ray cluster."""
