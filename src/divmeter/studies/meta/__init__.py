"""Meta-evaluation: how well a diversity metric tracks a known aspect of diversity.

Stable interface: :func:`oca`, :func:`spearman`, :func:`paired_contrast` (and the rest of
:mod:`divmeter.studies.meta.stats`); protocols (conTest, decTest, McDiv_nuggets re-sampling, paired,
pairwise preference, length bias) live in :mod:`divmeter.studies.meta.protocols`; the Decan confound
check (appendix E of Khoriaty et al. 2026) in :mod:`divmeter.studies.meta.confound`.
"""

from __future__ import annotations

from divmeter.studies.meta.confound import decan_confound
from divmeter.studies.meta.stats import (
    adjust_pvalues,
    bootstrap_ci,
    cohen_kappa,
    kappa_matrix,
    kendall,
    oca,
    paired_contrast,
    pearson,
    preference_accuracy,
    preferences,
    roc_auc,
    spearman,
)

# In the order of the imports above: the Decan confound check, then the statistics.
__all__ = [
    "decan_confound",
    "adjust_pvalues",
    "bootstrap_ci",
    "cohen_kappa",
    "kappa_matrix",
    "kendall",
    "oca",
    "paired_contrast",
    "pearson",
    "preference_accuracy",
    "preferences",
    "roc_auc",
    "spearman",
]
