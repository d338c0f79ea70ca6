"""Controlled perturbation builders: sets whose diversity moves in a known direction.

The commonsense paper's section 4.2 builders: RndShuff and NounShuff
(:mod:`divmeter.studies.perturb.shuffle`), Para-k and Nonsensical through a text generator
(:mod:`divmeter.studies.perturb.generated`, :mod:`divmeter.studies.perturb.generator`), all behind
:func:`build`, which records each run's signature and writes the pairs file
``divmeter meta pairwise`` reads. Every text a model writes passes the quality gate
(:mod:`divmeter.studies.perturb.gate`) first. Nothing heavy is imported here (spaCy loads on first
use).
"""

from divmeter.studies.perturb.build import BUILDERS, MAX_REJECTED, PREFER, Built, build, write_jsonl
from divmeter.studies.perturb.gate import CHECKS, Gate
from divmeter.studies.perturb.generated import Outcome, nonsensical, para_k, para_layout
from divmeter.studies.perturb.generator import (
    ChatServerGenerator,
    Generator,
    Template,
    load_template,
)
from divmeter.studies.perturb.shuffle import noun_shuff, rnd_shuff

__all__ = [
    "BUILDERS",
    "CHECKS",
    "MAX_REJECTED",
    "PREFER",
    "Built",
    "ChatServerGenerator",
    "Gate",
    "Generator",
    "Outcome",
    "Template",
    "build",
    "load_template",
    "noun_shuff",
    "nonsensical",
    "para_k",
    "para_layout",
    "rnd_shuff",
    "write_jsonl",
]
