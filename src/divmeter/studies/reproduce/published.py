"""The numbers the papers print that divmeter can recompute: one definition, used by
``divmeter reproduce`` and by the tests that check the protocols against the papers.

Each table is written as printed (its metric names, its task order, its decimals); the
tolerance of a number is half a unit of its last printed decimal (plus float noise on exact
ties), except where stated. :func:`claims` turns them into one :class:`Claim` per number.

* Tevet & Berant 2021 (EACL), on their conTest / decTest / McDiv data (``tevet`` data set):
  Table 4 (conTest), Table 2 (decTest, Spearman with temperature over 100 sub-samples of two
  sets per temperature: mean and std), the section 6.3 Pearson figures, and the appendix
  Tables 8, 9 and 10 (McDiv, McDiv_nuggets, McDiv_nuggets with HDS).
* Khoriaty, Williams-King & Feng 2026 (Decan), Tables 2 and 3: the baselines on the same data
  (conTest with HDS, McDiv_nuggets, McDiv, decTest), to three decimals.
* Susilo, Suominen & Haslum (CDM), Tables 4 and 2: accuracy, sum and mean of the paired
  differences, recomputed from the per-scenario values Table 4 prints (no data needed).

Cells that the released data cannot give are listed in :data:`NOT_REPRODUCIBLE` with the
reason; ``divmeter reproduce`` prints them with their difference but does not count them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Claim",
    "claims",
    "PAPERS",
    "TEVET_TASKS",
    "DECAN_TASKS",
    "COLUMN",
    "OWN",
    "TEVET_TABLE4",
    "TEVET_TABLE2",
    "TEVET_TABLE2_ABSHDS",
    "TEVET_RESP_PEARSON",
    "TEVET_APPENDIX",
    "DECAN_TABLE2",
    "DECAN_TABLE3",
    "CDM_TABLE4",
    "CDM_TABLE2",
    "NOT_REPRODUCIBLE",
    "THREE_DEC",
    "TWO_DEC",
]

#: Half a unit of the third / second decimal, plus float noise on exact ties (0.8975).
THREE_DEC = 5e-4 + 1e-9
TWO_DEC = 5e-3 + 1e-9

#: Paper key -> (citation, the data set its numbers need, or None).
PAPERS: dict[str, tuple[str, str | None]] = {
    "tevet": ("Tevet & Berant 2021, Evaluating the Evaluation of Diversity in Natural Language "
              "Generation (EACL)", "tevet"),
    "decan": ("Khoriaty, Williams-King & Feng 2026, \"I've Seen How This Goes\": "
              "Characterizing the Diversity of LLM Generations and Human Writing via Progressive "
              "Conditional Surprise (arXiv:2606.01811)", "tevet"),
    "cdm": ("Susilo, Suominen & Haslum, Contextual Diversity Measure (CDM) for Controllable Story "
            "Generation in Large Language Models", None),
}

#: The task order of Tevet & Berant's tables, and of the Decan paper's.
TEVET_TASKS = ("story_gen", "resp_gen", "prompt_gen")
DECAN_TASKS = ("prompt_gen", "resp_gen", "story_gen")

#: Tevet's precomputed column of each metric (in every file of the data set).
COLUMN = {
    "distinct-n": "metric_averaged_distinct_ngrams",
    "cos-sim": "metric_averaged_cosine_similarity",
    "BERT-STS": "metric_bert_sts",
    "sent-BERT": "metric_sent_bert",
    "BERT-score": "metric_bert_score",
    "absHDS": "metric_abs_hds_mean",
}
#: divmeter's own metrics that recompute a column from the texts (scores rounded to three
#: decimals, as the columns are): distinct-n and Tevet's cos-sim.
OWN = {"distinct-n": "distinct-n", "cos-sim": "ngram-cosine"}

CONTEST_200 = ("conTest", "con_test_200_with_hds_{task}.csv")
MCDIV = ("McDiv", "mcdiv_all_no_hds_{task}.csv")
NUGGETS = ("McDiv_nuggets", "mcdiv_nuggets_no_hds_{task}.csv")
NUGGETS_200 = ("McDiv_nuggets", "mcdiv_nuggets_200_with_hds_{task}.csv")
DECTEST_1000 = ("decTest", "dec_test_1000_no_hds_{task}.csv")
DECTEST_200 = ("decTest", "dec_test_200_with_hds_{task}.csv")

#: Tevet Table 4 (conTest): (Spearman, OCA) per task, story / resp / prompt; None where the
#: cell is blank in the paper.
TEVET_TABLE4 = {
    "distinct-n": [(0.57, 0.77), (0.34, 0.67), (0.33, 0.68)],
    "cos-sim": [(0.56, 0.77), (0.33, 0.66), (None, 0.67)],
    "BERT-STS": [(0.6, 0.78), (0.46, 0.72), (0.65, 0.82)],
    "sent-BERT": [(0.77, 0.90), (0.59, 0.79), (0.68, 0.81)],
    "BERT-score": [(0.59, 0.77), (0.49, 0.74), (0.4, 0.69)],
    "absHDS": [(0.85, 0.95), (0.63, 0.81), (0.78, 0.89)],
}

#: Tevet Table 2 (= Tables 3, 6, 7 temperature column): mean (std) of Spearman with
#: temperature over 100 sub-samples of 2 sets per temperature, story / resp / prompt (decTest
#: 1000; Tevet's column holds 0 for prompt_gen's all-empty set, hence ``empty: zero``).
TEVET_TABLE2 = {
    "distinct-n": [(0.76, 0.03), (0.89, 0.01), (0.91, 0.01)],
    "cos-sim": [(0.71, 0.04), (0.89, 0.01), (0.87, 0.02)],
    "BERT-STS": [(0.64, 0.04), (0.81, 0.02), (0.84, 0.02)],
    "sent-BERT": [(0.65, 0.03), (0.80, 0.02), (0.74, 0.03)],
    "BERT-score": [(0.69, 0.04), (0.87, 0.01), (0.88, 0.02)],
}
#: Tevet Table 2, absHDS row: one experiment of 200 sets (the decTest *_with_hds files).
TEVET_TABLE2_ABSHDS = {"story_gen": 0.69, "resp_gen": 0.81, "prompt_gen": 0.79}
#: Tevet section 6.3: Pearson with temperature on respGen (decTest 200 with HDS).
TEVET_RESP_PEARSON = {"cos-sim": 0.60, "BERT-STS": 0.75, "absHDS": 0.77}

#: Tevet Tables 8 (McDiv), 9 (McDiv_nuggets) and 10 (200 McDiv_nuggets sets with HDS):
#: (Spearman, OCA) per task, story / resp / prompt; None where the paper's text is garbled
#: (Table 8 prints one Spearman column for the distinct-n and cos-sim rows).
TEVET_APPENDIX: dict[tuple[str, str, str], dict[str, Any]] = {
    ("Table 8", *MCDIV): {
        "distinct-n": [(0.53, 0.74), (0.52, 0.74), (0.48, 0.75)],
        "cos-sim": [(None, 0.74), (None, 0.74), (None, 0.77)],
        "BERT-STS": [(0.57, 0.74), (0.61, 0.78), (0.78, 0.89)],
        "sent-BERT": [(0.75, 0.87), (0.68, 0.83), (0.80, 0.90)],
        "BERT-score": [(0.60, 0.77), (0.56, 0.78), (0.54, 0.74)],
    },
    ("Table 9", *NUGGETS): {
        "distinct-n": [(-0.002, 0.49), (-0.002, 0.49), (-0.003, 0.49)],
        "cos-sim": [(0.04, 0.53), (0.08, 0.55), (0.22, 0.60)],
        "BERT-STS": [(0.34, 0.64), (0.39, 0.68), (0.68, 0.83)],
        "sent-BERT": [(0.63, 0.80), (0.53, 0.76), (0.73, 0.85)],
        "BERT-score": [(0.35, 0.66), (0.33, 0.65), (0.35, 0.65)],
    },
    ("Table 10", *NUGGETS_200): {
        "distinct-n": [(0.04, 0.57), (-0.01, 0.46), (0.12, 0.56)],
        "cos-sim": [(0.05, 0.54), (0.04, 0.54), (0.28, 0.62)],
        "BERT-STS": [(0.34, 0.68), (0.39, 0.69), (0.72, 0.90)],
        "sent-BERT": [(0.68, 0.85), (0.60, 0.79), (0.75, 0.88)],
        "BERT-score": [(0.37, 0.69), (0.34, 0.68), (0.38, 0.69)],
        "absHDS": [(0.78, 0.90), (0.70, 0.85), (0.84, 0.94)],
    },
}

#: Decan Table 2, baselines "from Tevet's pre-computed metrics": (Spearman, OCA) per task,
#: prompt / resp / story, three decimals. (Its own C x a_n, a_n and C rows used Qwen2.5-3B;
#: the data set's metric_icl_* columns are GPT-2's, so they are not these numbers.)
DECAN_TABLE2: dict[tuple[str, str], dict[str, Any]] = {
    CONTEST_200: {
        "sent-BERT": [(0.682, 0.815), (0.591, 0.791), (0.770, 0.896)],
        "BERT-STS": [(0.646, 0.820), (0.463, 0.714), (0.601, 0.780)],
        "distinct-n": [(0.333, 0.675), (0.346, 0.677), (0.573, 0.772)],
    },
    NUGGETS: {
        "sent-BERT": [(0.728, 0.850), (0.532, 0.758), (0.633, 0.803)],
        "BERT-STS": [(0.683, 0.830), (0.393, 0.676), (0.344, 0.638)],
        "distinct-n": [(-0.003, 0.514), (-0.002, 0.507), (-0.002, 0.510)],
    },
    MCDIV: {
        "sent-BERT": [(0.796, 0.897), (0.678, 0.830), (0.753, 0.867)],
        "BERT-STS": [(0.780, 0.893), (0.614, 0.781), (0.571, 0.740)],
        "distinct-n": [(0.476, 0.746), (0.517, 0.738), (0.535, 0.744)],
    },
}
#: Decan Table 3: Spearman with temperature, decTest 1000 (no_hds), prompt / resp / story
#: (prompt_gen without its one all-empty set).
DECAN_TABLE3 = {"distinct-n": [0.917, 0.894, 0.758]}

#: CDM Table 4 (manually curated subset, S01..S08): M(P1), M(P2) as printed, already turned
#: into dissimilarities (1 - similarity; self-BLEU printed as 1 - self-BLEU).
CDM_TABLE4 = {
    "BERTScore": ([0.066, 0.070, 0.065, 0.069, 0.074, 0.060, 0.042, 0.038],
                  [0.047, 0.036, 0.041, 0.049, 0.072, 0.041, 0.034, 0.032]),
    "Distinct-1": ([0.630, 0.571, 0.611, 0.640, 0.504, 0.553, 0.521, 0.635],
                   [0.548, 0.556, 0.574, 0.588, 0.541, 0.500, 0.510, 0.656]),
    "Distinct-2": ([0.833, 0.798, 0.769, 0.833, 0.748, 0.744, 0.670, 0.738],
                   [0.703, 0.784, 0.750, 0.755, 0.850, 0.675, 0.656, 0.774]),
    "Self-BLEU": ([0.765, 0.712, 0.585, 0.897, 0.631, 0.732, 0.452, 0.565],
                  [0.517, 0.662, 0.604, 0.645, 0.830, 0.560, 0.431, 0.669]),
    "Sentence Sim.": ([0.402, 0.318, 0.325, 0.370, 0.230, 0.326, 0.365, 0.308],
                      [0.310, 0.224, 0.306, 0.323, 0.237, 0.174, 0.222, 0.187]),
    "CDM (GloVe)": ([0.632, 0.577, 0.634, 0.672, 0.509, 0.679, 0.519, 0.591],
                    [0.505, 0.566, 0.379, 0.608, 0.408, 0.506, 0.349, 0.613]),
    "CDM (Word2Vec)": ([0.276, 0.297, 0.329, 0.472, 0.235, 0.307, 0.280, 0.388],
                       [0.219, 0.245, 0.207, 0.430, 0.184, 0.222, 0.199, 0.254]),
    "CDM (MiniLM)": ([0.738, 0.592, 0.619, 0.748, 0.628, 0.765, 0.524, 0.640],
                     [0.591, 0.575, 0.397, 0.685, 0.540, 0.559, 0.449, 0.612]),
    "CDM (FastText)": ([0.627, 0.523, 0.544, 0.644, 0.511, 0.674, 0.492, 0.607],
                       [0.451, 0.504, 0.366, 0.551, 0.456, 0.498, 0.299, 0.498]),
}
#: CDM Table 2 (and Table 4's Overall): accuracy, mean and sum of M(P1) - M(P2) on the
#: manually curated subset.
CDM_TABLE2 = {
    "BERTScore": (1.0, 0.017, 0.132),
    "Distinct-1": (0.75, 0.024, 0.192),
    "Distinct-2": (0.75, 0.023, 0.185),
    "Self-BLEU": (0.625, 0.053, 0.421),
    "Sentence Sim.": (0.875, 0.083, 0.661),
    "CDM (GloVe)": (0.875, 0.110, 0.881),
    "CDM (Word2Vec)": (1.0, 0.078, 0.624),
    "CDM (MiniLM)": (1.0, 0.106, 0.845),
    "CDM (FastText)": (1.0, 0.125, 0.998),
}
#: Each printed P1 - P2 of values rounded to three decimals is within 0.001 of the difference
#: the paper summed, so the sum of eight is within 0.008 of the printed Sum (CDM (GloVe):
#: 0.879 from the printed values, 0.881 printed), plus the Sum's own rounding; the mean, a
#: eighth of that plus its rounding.
CDM_SUM_TOL = 8 * 0.001 + THREE_DEC
CDM_MEAN_TOL = 0.001 + THREE_DEC

#: (source, file, task, metric, statistic) -> why the printed number cannot come from the
#: released data (found by ``divmeter reproduce``; the same cells, to the same decimals, agree
#: with Decan Table 2 and the data's own columns).
_T4_RESP = "conTest/con_test_200_with_hds_resp_gen.csv"
_BELOW_HALF = ("an OCA below 0.5 cannot come from an optimal threshold (OCA = max(acc, "
               "1 - acc), Tevet's own definition)")
NOT_REPRODUCIBLE: dict[tuple[str, str, str, str, str], str] = {
    ("tevet Table 4", _T4_RESP, "resp_gen", "distinct-n", "spearman"):
        "the released data give 0.346 (Decan Table 2 prints 0.346 from the same columns); "
        "0.34 is not its rounding",
    ("tevet Table 4", _T4_RESP, "resp_gen", "distinct-n", "oca"):
        "the released data give 0.677 (Decan Table 2 prints 0.677 from the same columns); "
        "0.67 is not its rounding",
    ("tevet Table 4", _T4_RESP, "resp_gen", "BERT-STS", "oca"):
        "the released column gives 0.714 (Decan Table 2 prints 0.714 from the same column); "
        "0.72 is not its rounding",
    ("tevet Table 8", "McDiv/mcdiv_all_no_hds_resp_gen.csv", "resp_gen", "BERT-score", "oca"):
        "the released column gives 0.749",
    **{("tevet Table 9", f"McDiv_nuggets/mcdiv_nuggets_no_hds_{t}.csv", t, "distinct-n",
        "oca"): _BELOW_HALF for t in TEVET_TASKS},
    ("tevet Table 10", "McDiv_nuggets/mcdiv_nuggets_200_with_hds_resp_gen.csv", "resp_gen",
     "distinct-n", "oca"): _BELOW_HALF,
}


@dataclass(frozen=True)
class Claim:
    """One published number and how divmeter recomputes it.

    Attributes:
        paper: ``tevet``, ``decan`` or ``cdm`` (:data:`PAPERS`).
        table: Where it is printed (``Table 4``, ``Section 6.3``).
        file: The data file (``conTest/con_test_200_with_hds_prompt_gen.csv``), or ``None``
            (the paper's own printed values).
        task: ``story_gen`` ... or ``None``.
        metric: The metric as the paper names it.
        statistic: ``spearman``, ``oca``, ``pearson``, ``spearman_mean``, ``spearman_std``,
            ``sign_accuracy``, ``mean_diff``, ``sum_diff``.
        published: The printed number.
        tolerance: How far the recomputed one may be.
        protocol: ``contest``, ``dectest``, ``dectest-per-temperature`` or ``paired``.
        scores: How the scores are obtained: ``("column", name)`` (a precomputed column of
            the data), ``("metric", name)`` (divmeter's metric on the texts, rounded to three
            decimals as the columns are) or ``("printed", metric)``.
        monte_carlo: The tolerance also allows three Monte Carlo standard errors of a
            100-repeat mean (std / 10 x 3).
    """

    paper: str
    table: str
    file: str | None
    task: str | None
    metric: str
    statistic: str
    published: float
    tolerance: float
    protocol: str
    scores: tuple[str, str]
    monte_carlo: bool = False

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (f"{self.paper} {self.table}", self.file or "", self.task or "", self.metric,
                self.statistic)

    @property
    def not_reproducible(self) -> str | None:
        """Why the released data cannot give this number (``None``: it can)."""
        return NOT_REPRODUCIBLE.get(self.key)

    def to_dict(self) -> dict[str, Any]:
        return {"paper": self.paper, "table": self.table, "file": self.file,
                "task": self.task, "metric": self.metric, "statistic": self.statistic,
                "published": self.published, "tolerance": self.tolerance,
                "protocol": self.protocol, "scores": f"{self.scores[0]}:{self.scores[1]}"}


def _with_own(paper: str, table: str, file: str, task: str, metric: str, stat: str,
              value: float | None, tol: float, protocol: str, mc: bool = False) -> list[Claim]:
    """The claim from Tevet's column, and from divmeter's own metric where it has one."""
    if value is None:
        return []
    out = [Claim(paper, table, file, task, metric, stat, value, tol, protocol,
                 ("column", COLUMN[metric]), mc)]
    if metric in OWN:
        out.append(Claim(paper, table, file, task, metric, stat, value, tol, protocol,
                         ("metric", OWN[metric]), mc))
    return out


def _two_stat(paper: str, table: str, where: tuple[str, str], rows: dict[str, Any],
              tasks: tuple[str, ...], tol: float) -> list[Claim]:
    folder, pattern = where
    out = []
    for metric, per_task in rows.items():
        for task, (rho, oca) in zip(tasks, per_task, strict=True):
            f = f"{folder}/{pattern.format(task=task)}"
            out += _with_own(paper, table, f, task, metric, "spearman", rho, tol, "contest")
            out += _with_own(paper, table, f, task, metric, "oca", oca, tol, "contest")
    return out


def _tevet() -> list[Claim]:
    out = _two_stat("tevet", "Table 4", CONTEST_200, TEVET_TABLE4, TEVET_TASKS, TWO_DEC)
    folder, pattern = DECTEST_1000
    for metric, per_task in TEVET_TABLE2.items():
        for task, (mean, std) in zip(TEVET_TASKS, per_task, strict=True):
            f = f"{folder}/{pattern.format(task=task)}"
            out += _with_own("tevet", "Table 2", f, task, metric, "spearman_mean", mean,
                             TWO_DEC, "dectest-per-temperature", mc=True)
            out += _with_own("tevet", "Table 2", f, task, metric, "spearman_std", std,
                             0.01 + 1e-9, "dectest-per-temperature")
    folder, pattern = DECTEST_200
    for task, rho in TEVET_TABLE2_ABSHDS.items():
        out += _with_own("tevet", "Table 2", f"{folder}/{pattern.format(task=task)}", task,
                         "absHDS", "spearman", rho, TWO_DEC, "dectest")
    for metric, r in TEVET_RESP_PEARSON.items():
        out += _with_own("tevet", "Section 6.3", f"{folder}/{pattern.format(task='resp_gen')}",
                         "resp_gen", metric, "pearson", r, TWO_DEC, "dectest")
    for (table, folder, pattern), rows in TEVET_APPENDIX.items():
        out += _two_stat("tevet", table, (folder, pattern), rows, TEVET_TASKS, TWO_DEC)
    return out


def _decan() -> list[Claim]:
    out = []
    for where, rows in DECAN_TABLE2.items():
        out += _two_stat("decan", "Table 2", where, rows, DECAN_TASKS, THREE_DEC)
    folder, pattern = DECTEST_1000
    for metric, per_task in DECAN_TABLE3.items():
        for task, rho in zip(DECAN_TASKS, per_task, strict=True):
            out += _with_own("decan", "Table 3", f"{folder}/{pattern.format(task=task)}", task,
                             metric, "spearman", rho, THREE_DEC, "dectest")
    return out


def _cdm() -> list[Claim]:
    out = []
    for metric, (acc, mean, total) in CDM_TABLE2.items():
        for stat, value, tol in (("sign_accuracy", acc, 1e-9), ("mean_diff", mean, CDM_MEAN_TOL),
                                 ("sum_diff", total, CDM_SUM_TOL)):
            out.append(Claim("cdm", "Tables 2 and 4", None, None, metric, stat, value, tol,
                             "paired", ("printed", metric)))
    return out


def claims(paper: str | None = None) -> list[Claim]:
    """Every published number divmeter recomputes, or those of one paper.

    Example:
        >>> c = claims("cdm")[0]
        >>> (c.metric, c.statistic, c.published)
        ('BERTScore', 'sign_accuracy', 1.0)
    """
    builders = {"tevet": _tevet, "decan": _decan, "cdm": _cdm}
    keys = list(builders) if paper is None else [paper]
    return [c for k in keys for c in builders[k]()]
