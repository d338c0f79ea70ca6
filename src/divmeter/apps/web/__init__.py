"""Human Diversity Score (HDS) annotation: a small, local web app (``divmeter[web]``).

* :mod:`divmeter.apps.web.store`: the SQLite study database (schema, assignment, answers, export).
  Needs only the standard library, so ``status`` and ``export`` work without the web extra.
* :mod:`divmeter.apps.web.app`: the Starlette application that serves the questionnaires.
* :mod:`divmeter.apps.web.analysis`: Krippendorff's alpha and Tevet & Berant's Figure 5 resampling.

Questionnaires follow Tevet & Berant (2021), section 4, section 6.2 and appendix A (absHDS,
aspHDS, simHDS, rnkHDS, each preceded by the warm-up of Figure 7), plus the commonsense
meta-evaluation paper's form (section 4.1.2: a 1-5 rating per set and a ranking that breaks ties).
"""

from __future__ import annotations

KINDS = ("abs", "asp", "sim", "rnk", "cs")

__all__ = ["KINDS"]
