"""In-context-learning diversity: the Decan metric D = C x a_n (progressive conditional surprise).

Khoriaty, Williams-King & Feng 2026, "I've Seen How This Goes": Characterizing the Diversity of
LLM Generations and Human Writing via Progressive Conditional Surprise (arXiv:2606.01811).

Two layers (the same split as vectors/encoders for the content metrics):

* The **pure layer** (numpy only) turns surprise measurements into the metric:
  :func:`decan_from_surprisal` takes, for every sampled permutation, each position's total bits and
  byte count, plus each response's unconditional bits/byte, and returns the per-byte curve
  a_1..a_n (eq. 6: mean over permutations of per-position *ratios*), a_n, the coherence
  C = 2^(-mean_i h(r_i|p)) (eq. 4), its spread sigma, D = C x a_n (eq. 5) and the excess entropies
  E (bits, eq. 8) and E_rate (bits/byte, eq. 12), and the appendix-D derived outputs: C x E and
  C x E_rate (eq. 13) and the four-parameter sigmoid fit of the per-byte curve (eq. 9,
  :func:`fit_sigmoid_curve`) with its floor a_inf, E_fit and D_fit = C x E_fit.
  :func:`decan_over_prompts` and :func:`decan_difference` aggregate across prompts (appendix F,
  eqs. 14-15).
* The **scoring layer** (the definition :class:`Decan`, registered as ``decan``; its public
  function :func:`decan`) formats the responses (instruct or completion format, appendix A.1),
  runs a causal LM (:mod:`divmeter.backends.lm`) once per permutation and once per response
  alone, attributes tokens to responses by character-span overlap, and calls the pure layer.

Length matching (section 6): per-byte surprise falls with response length, so compare policies on
responses cut to a common UTF-8 byte length: :func:`truncate_utf8`, :func:`common_byte_length` and
the ``max_bytes`` parameter of :func:`decan`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from divmeter.backends.device import DEVICE
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.definition import Metric, SetContext
from divmeter.engine.public import public_function, register
from divmeter.inputs.data.model import as_texts
from divmeter.metrics._common import check_int

__all__ = [
    "Decan",
    "DecanSurprisal",
    "decan_from_surprisal",
    "SigmoidFit",
    "fit_sigmoid_curve",
    "sigmoid_curve",
    "SIGMOID_RECIPE",
    "decan",
    "decan_surprisal",
    "decan_over_prompts",
    "decan_difference",
    "format_responses",
    "response_label",
    "sample_permutations",
    "truncate_utf8",
    "common_byte_length",
]

DECAN = (
    "Khoriaty, Williams-King & Feng 2026, \"I've Seen How This Goes\": Characterizing the "
    "Diversity of LLM Generations and Human Writing via Progressive Conditional Surprise "
    "(arXiv:2606.01811)"
)
FORMATS = ("instruct", "completion")
#: The default template. ``completion`` (appendix A.1: the prompt repeated before each response)
#: is what the paper uses on its human-grounded benchmark (section 5, Tevet & Berant's sets), and
#: it fits a *base* model such as the default Gemma-3-270m, which continues text rather than
#: answering ``Response A:`` headers; ``instruct`` is the paper's choice for its synthetic
#: scenarios (appendix B.2/B.3) and the OLMo-2 stages (section 6): pass ``format="instruct"``.
DEFAULT_FORMAT = "completion"


# ------------------------------------------------------------------------------------------------
# Pure layer
# ------------------------------------------------------------------------------------------------


#: Fixed recipe of the appendix-D sigmoid fit (eq. 9), echoed as ``fit_recipe`` in the details.
SIGMOID_RECIPE = (
    "sigmoid-eq9|a_k=a_inf+alpha/(1+exp(beta*(k-k0)))|k=1..n|curve:per-byte|"
    "p0:a_n,a_1-a_n,1,n/2|bounds:a_inf[0,inf),alpha[0,inf),beta[0.01,50],k0[-10,3n]|"
    "min_n:5|method:trf|max_nfev:10000|E_fit:sum_k(a_k-a_inf)"
)
#: The fit needs more points than its four parameters (appendix D.5: it "fails to converge on only
#: five points" in the paper's runs; with four or fewer it is not attempted).
SIGMOID_MIN_N = 5


def sigmoid_curve(k: Any, a_inf: float, alpha: float, beta: float, k0: float) -> np.ndarray:
    """The sigmoid of appendix D, eq. 9: a_k = a_inf + alpha / (1 + e^(beta (k - k0))).

    Computed as ``a_inf + alpha * expit(-beta (k - k0))`` (no overflow for steep curves).

    Example:
        >>> sigmoid_curve([1.0, 3.0], 0.5, 1.0, 2.0, 3.0).tolist()
        [1.4820137900379085, 1.0]
    """
    from scipy.special import expit

    kk = np.asarray(k, dtype=np.float64)
    return np.asarray(a_inf + alpha * expit(-beta * (kk - k0)), dtype=np.float64)


@dataclass(frozen=True)
class SigmoidFit:
    """Least-squares fit of eq. 9 to an a_k curve (appendix D.1), or why there is none.

    Attributes:
        a_inf: Fitted asymptotic floor (same unit as the curve), ``None`` when the fit failed.
        alpha: Fitted total drop from the plateau to the floor.
        beta: Fitted steepness (> 0).
        k0: Fitted inflection point (k0 < 1: pure exponential decay; the paper's Qwen fits sit
            at the lower bound -10, Table 6).
        rmse: Root mean squared residual of the fit.
        r_squared: 1 - SS_res / SS_tot (``None`` for a constant curve, SS_tot = 0).
        reason: Why the fit is missing (``None`` when it succeeded).
    """

    a_inf: float | None
    alpha: float | None
    beta: float | None
    k0: float | None
    rmse: float | None
    r_squared: float | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when the fit converged to finite parameters."""
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dict of the fitted parameters and fit quality (the fields, in order)."""
        return asdict(self)


def _failed_fit(reason: str) -> SigmoidFit:
    return SigmoidFit(None, None, None, None, None, None, reason)


def fit_sigmoid_curve(curve: Any) -> SigmoidFit:
    """Fit the sigmoid of eq. 9 (appendix D.1) to a curve a_1..a_n by bounded least squares.

    The recipe is fixed (:data:`SIGMOID_RECIPE`): ``scipy.optimize.curve_fit`` with the trust-region
    reflective method over k = 1..n, starting from a_inf = a_n (clipped at 0), alpha = a_1 - a_n
    (clipped at 0), beta = 1, k0 = n / 2, within the bounds a_inf >= 0, alpha >= 0,
    0.01 <= beta <= 50 (the paper requires beta > 0), -10 <= k0 <= 3n (the paper's fitted k0 sits
    at the lower bound -10, Table 6), at most 10000 evaluations. The fit is not attempted for
    n < 5 (no more points than parameters); a fit that does not converge, or that ends on
    non-finite values, is reported as missing with the optimiser's message, never replaced by
    another number.

    Args:
        curve: The curve a_1..a_n (1-D, finite).

    Returns:
        A :class:`SigmoidFit` (``reason`` set and every parameter ``None`` when there is no fit).

    Raises:
        InvalidInputError: If ``curve`` is not a finite 1-D numeric array.

    Example:
        >>> k = np.arange(1, 11)
        >>> f = fit_sigmoid_curve(sigmoid_curve(k, 0.8, 1.2, 1.5, 4.0))
        >>> round(f.a_inf, 6), round(f.alpha, 6), round(f.beta, 6), round(f.k0, 6)
        (0.8, 1.2, 1.5, 4.0)
        >>> fit_sigmoid_curve([2.0, 1.5, 1.2]).reason
        'the 4-parameter sigmoid fit (eq. 9) needs n >= 5 points; got n = 3'
    """
    y = _finite_array(curve, "curve", 1, "1-D array")
    n = int(y.size)
    if n < SIGMOID_MIN_N:
        return _failed_fit(
            f"the 4-parameter sigmoid fit (eq. 9) needs n >= {SIGMOID_MIN_N} points; got n = {n}"
        )
    import warnings

    from scipy.optimize import OptimizeWarning, curve_fit

    k = np.arange(1, n + 1, dtype=np.float64)
    lower = [0.0, 0.0, 0.01, -10.0]
    upper = [np.inf, np.inf, 50.0, 3.0 * n]
    p0 = [max(float(y[-1]), 0.0), max(float(y[0] - y[-1]), 0.0), 1.0, n / 2.0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            popt, _ = curve_fit(
                sigmoid_curve, k, y, p0=p0, bounds=(lower, upper), method="trf", max_nfev=10000
            )
    except (RuntimeError, ValueError) as exc:
        return _failed_fit(f"sigmoid fit (eq. 9) did not converge: {exc}")
    if not np.all(np.isfinite(popt)):
        return _failed_fit("sigmoid fit (eq. 9) ended on non-finite parameters")
    a_inf, alpha, beta, k0 = (float(v) for v in popt)
    resid = y - sigmoid_curve(k, a_inf, alpha, beta, k0)
    ss_res = float(np.sum(resid**2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return SigmoidFit(
        a_inf=a_inf,
        alpha=alpha,
        beta=beta,
        k0=k0,
        rmse=float(np.sqrt(ss_res / n)),
        r_squared=1.0 - ss_res / ss_tot if ss_tot > 0 else None,
    )



@dataclass(frozen=True)
class DecanSurprisal:
    """The Decan quantities of one response set (all per-byte unless stated).

    Attributes:
        D: Diversity score C x a_n (bits/byte, eq. 5).
        a_n: Last point of the per-byte curve (bits/byte).
        C: Coherence 2^(-mean_i h(r_i|p)), in (0, 1] (eq. 4).
        sigma: Coherence spread, the population standard deviation (ddof=0) of the unconditional
            bits/byte h(r_i|p) (appendix B.2; a diagnostic, not a diversity signal).
        E: Excess entropy sum_k (a_k - a_n) on the total-bits curve (bits, eq. 8).
        E_rate: Per-byte excess entropy sum_k (a_k - a_n) on the per-byte curve (bits/byte,
            eq. 12).
        curve: The per-byte curve a_1..a_n, mean over permutations of per-position bits/byte
            (eq. 6), shape (n,).
        curve_bits: Mean over permutations of each position's total bits, shape (n,).
        a_1: First point of the per-byte curve.
        unconditional_bpb: h(r_i|p) of each response, shape (n,).
        perm_bpb: Per-permutation bits/byte curves, shape (permutations, n).
        CxE: C x E (bits; appendix D.3, eq. 13, left).
        CxE_rate: C x E_rate (bits/byte; eq. 13, right; the "C x E" column of Table 5, whose E
            is per-byte).
        fit: The sigmoid fit (eq. 9) of the per-byte curve, :class:`SigmoidFit`.
        a_inf: Fitted floor of the per-byte curve (bits/byte), ``None`` without a fit.
        E_fit: sum_k (a_k - a_inf) over the observed k = 1..n of the per-byte curve: eq. 12 with
            the fitted floor in place of a_n (bits/byte), ``None`` without a fit.
        D_fit: C x E_fit (bits/byte; appendix D.5, Figure 12), ``None`` without a fit.
        fit_reason: Why a_inf, E_fit and D_fit are ``None`` (``None`` when the fit succeeded).
    """

    D: float
    a_n: float
    C: float
    sigma: float
    E: float
    E_rate: float
    curve: np.ndarray
    curve_bits: np.ndarray
    a_1: float
    unconditional_bpb: np.ndarray
    perm_bpb: np.ndarray = field(repr=False)
    CxE: float
    CxE_rate: float
    fit: SigmoidFit
    a_inf: float | None
    E_fit: float | None
    D_fit: float | None
    fit_reason: str | None

    @property
    def n(self) -> int:
        """Number of responses."""
        return int(self.curve.shape[0])

    @property
    def permutations(self) -> int:
        """Number of permutations averaged."""
        return int(self.perm_bpb.shape[0])

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dict (lists for arrays)."""
        return {
            "D": self.D,
            "a_n": self.a_n,
            "C": self.C,
            "sigma": self.sigma,
            "E": self.E,
            "E_rate": self.E_rate,
            "a_1": self.a_1,
            "curve": self.curve.tolist(),
            "curve_bits": self.curve_bits.tolist(),
            "unconditional_bpb": self.unconditional_bpb.tolist(),
            "n": self.n,
            "permutations": self.permutations,
            "CxE": self.CxE,
            "CxE_rate": self.CxE_rate,
            "a_inf": self.a_inf,
            "E_fit": self.E_fit,
            "D_fit": self.D_fit,
            "fit_reason": self.fit_reason,
            "fit": self.fit.to_dict(),
            "fit_recipe": SIGMOID_RECIPE,
        }


def _finite_array(x: Any, name: str, ndim: int, shape: str) -> np.ndarray:
    """``x`` as a finite float64 array with ``ndim`` non-empty axes (``shape`` names the
    expected shape in messages)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"`{name}` must be a numeric {shape}; got {type(x).__name__}."
        ) from exc
    if arr.ndim != ndim or 0 in arr.shape:
        raise InvalidInputError(f"`{name}` must be a non-empty {shape}; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"`{name}` must be finite; got NaN or inf.")
    return arr


def _as_2d(x: Any, name: str) -> np.ndarray:
    return _finite_array(x, name, 2, "array of shape (permutations, n)")


def decan_from_surprisal(
    perm_bits: Any, perm_bytes: Any, unconditional_bpb: Any
) -> DecanSurprisal:
    """Decan quantities from surprise measurements (no model involved).

    Row ``s`` of ``perm_bits`` / ``perm_bytes`` is one permutation: entry ``k`` is the total bits
    -log2 theta(r_sigma(k) | r_sigma(<k), p) of the response in position ``k`` and that response's
    UTF-8 byte count. The per-byte curve is the mean over permutations of the per-position ratios
    (paper eq. 6), never the ratio of the mean bits to the mean bytes.

    Args:
        perm_bits: Shape (permutations, n), total bits per position.
        perm_bytes: Shape (permutations, n), byte count per position (integers >= 1).
        unconditional_bpb: Shape (n,), h(r_i | p) of each response alone, in bits/byte.

    Returns:
        A :class:`DecanSurprisal` with ``D``, ``a_n``, ``C``, ``sigma``, ``E``, ``E_rate``,
        ``curve``, and the appendix-D outputs ``CxE``, ``CxE_rate`` (eq. 13), the sigmoid ``fit``
        of the per-byte curve (eq. 9, :func:`fit_sigmoid_curve`), ``a_inf``, ``E_fit`` and
        ``D_fit`` (``None`` with ``fit_reason`` when the fit is missing, e.g. n < 5).

    Raises:
        InvalidInputError: On wrong shapes, non-finite values, or a zero-byte response (its
            per-byte surprise is undefined).

    Example:
        >>> r = decan_from_surprisal([[10, 4], [6, 6]], [[10, 2], [2, 10]], [1.0, 2.0])
        >>> r.curve.tolist(), round(r.C, 4), round(r.D, 4)
        ([2.0, 1.3], 0.3536, 0.4596)
    """
    bits = _as_2d(perm_bits, "perm_bits")
    nbytes = _as_2d(perm_bytes, "perm_bytes")
    if bits.shape != nbytes.shape:
        raise InvalidInputError(
            f"`perm_bits` and `perm_bytes` must have the same shape; got {bits.shape} and "
            f"{nbytes.shape}."
        )
    if np.any(nbytes != np.round(nbytes)) or np.any(nbytes < 0):
        raise InvalidInputError("`perm_bytes` must hold non-negative integer byte counts.")
    if np.any(nbytes == 0):
        s, k = (int(v) for v in np.argwhere(nbytes == 0)[0])
        raise InvalidInputError(
            f"zero-byte response at permutation {s}, position {k}: per-byte surprise is "
            "undefined for empty responses; drop or replace them before scoring."
        )
    h = np.asarray(unconditional_bpb, dtype=np.float64)
    n = bits.shape[1]
    if h.shape != (n,):
        raise InvalidInputError(
            f"`unconditional_bpb` must have shape (n,) = ({n},) to match `perm_bits`; got "
            f"shape {h.shape}."
        )
    if not np.all(np.isfinite(h)):
        raise InvalidInputError("`unconditional_bpb` must be finite; got NaN or inf.")
    rates = bits / nbytes  # per-permutation, per-position bits/byte
    curve = rates.mean(axis=0)  # eq. 6: mean of ratios
    curve_bits = bits.mean(axis=0)
    a_n = float(curve[-1])
    C = float(2.0 ** (-h.mean()))  # eq. 4
    E = float(np.sum(curve_bits - curve_bits[-1]))  # eq. 8 (bits)
    E_rate = float(np.sum(curve - curve[-1]))  # eq. 12 (bits/byte)
    fit = fit_sigmoid_curve(curve)  # eq. 9 on the per-byte curve
    E_fit = None if fit.a_inf is None else float(np.sum(curve - fit.a_inf))
    return DecanSurprisal(
        D=C * a_n,  # eq. 5
        a_n=a_n,
        C=C,
        sigma=float(h.std(ddof=0)),
        E=E,
        E_rate=E_rate,
        curve=curve,
        curve_bits=curve_bits,
        a_1=float(curve[0]),
        unconditional_bpb=h,
        perm_bpb=rates,
        CxE=C * E,  # eq. 13 (bits)
        CxE_rate=C * E_rate,  # eq. 13 (bits/byte)
        fit=fit,
        a_inf=fit.a_inf,
        E_fit=E_fit,
        D_fit=None if E_fit is None else C * E_fit,  # appendix D.5
        fit_reason=fit.reason,
    )


def _d_values(results: Iterable[Any], what: str) -> np.ndarray:
    vals = []
    for i, r in enumerate(results):
        v: Any
        if isinstance(r, DecanSurprisal):
            v = r.D
        else:
            v = r.value if isinstance(r, MetricResult) else r
        if v is None or not np.isfinite(float(v)):
            raise InvalidInputError(f"`{what}[{i}]` has no Decan value (undefined set).")
        vals.append(float(v))
    if not vals:
        raise InvalidInputError(f"`{what}` must hold at least one prompt's result; got none.")
    return np.asarray(vals)


def decan_over_prompts(results: Sequence[Any]) -> dict[str, Any]:
    """Mean Decan score of a policy over a prompt suite (appendix F, eq. 14).

    Args:
        results: One result per prompt: :class:`DecanSurprisal`, a ``decan``
            :class:`~divmeter.core.result.MetricResult`, or a plain D value.

    Returns:
        ``{"D": mean D, "D_std": population std, "n_prompts": M, "curve": mean per-byte curve}``
        (``curve`` only when every result carries a curve of the same length).

    Example:
        >>> decan_over_prompts([0.25, 0.75])["D"]
        0.5
    """
    d = _d_values(results, "results")
    out: dict[str, Any] = {"D": float(d.mean()), "D_std": float(d.std()), "n_prompts": len(d)}
    curves = []
    for r in results:
        if isinstance(r, DecanSurprisal):
            curves.append(r.curve)
        elif isinstance(r, MetricResult) and "curve" in r.details:
            curves.append(np.asarray(r.details["curve"], dtype=np.float64))
    if len(curves) == len(d) and len({c.shape for c in curves}) == 1:
        out["curve"] = np.mean(curves, axis=0).tolist()
    return out


def decan_difference(results_1: Sequence[Any], results_2: Sequence[Any]) -> float:
    """Delta D = mean D of policy 1 - mean D of policy 2 over prompts (appendix F, eq. 15).

    No division is involved, so the difference is stable when either score is near zero.

    Example:
        >>> decan_difference([0.5, 0.75], [0.25, 0.25])
        0.375
    """
    d1 = _d_values(results_1, "results_1")
    d2 = _d_values(results_2, "results_2")
    return float(d1.mean() - d2.mean())


# ------------------------------------------------------------------------------------------------
# Formatting, permutations, length matching
# ------------------------------------------------------------------------------------------------


def response_label(index: int) -> str:
    """Label of the ``index``-th response (0-based): A..Z, AA, AB, ... (bijective base 26).

    Example:
        >>> [response_label(i) for i in (0, 25, 26, 27, 51, 52, 701, 702)]
        ['A', 'Z', 'AA', 'AB', 'AZ', 'BA', 'ZZ', 'AAA']
    """
    letters = string.ascii_uppercase
    out = ""
    i = index + 1
    while i > 0:
        i, rem = divmod(i - 1, 26)
        out = letters[rem] + out
    return out


def format_responses(
    prompt: str, responses: Sequence[str], fmt: str = DEFAULT_FORMAT
) -> tuple[str, list[tuple[int, int]]]:
    """Build the conditioning context and the character span of each response (appendix A.1).

    * ``instruct``: ``{prompt}\\n\\nResponse A: {r1}\\n\\nResponse B: {r2}...`` (an empty prompt
      starts directly with ``Response A:``).
    * ``completion``: ``1. {prompt} {r1}\\n\\n2. {prompt} {r2}...``, the prompt repeated before
      each response (an empty prompt gives ``1. {r1}``); only response characters are spans.

    Example:
        >>> format_responses("Rain", ["a", "bc"], "instruct")
        ('Rain\\n\\nResponse A: a\\n\\nResponse B: bc', [(18, 19), (33, 35)])
        >>> format_responses("It", ["x", "y"])
        ('1. It x\\n\\n2. It y', [(6, 7), (15, 16)])
    """
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    for k, r in enumerate(responses):
        if fmt == "instruct":
            head = (prompt if k == 0 and prompt else "") + (
                "\n\n" if (k > 0 or prompt) else ""
            ) + f"Response {response_label(k)}: "
        else:
            head = ("\n\n" if k > 0 else "") + f"{k + 1}. " + (f"{prompt} " if prompt else "")
        parts.append(head)
        pos += len(head)
        parts.append(r)
        spans.append((pos, pos + len(r)))
        pos += len(r)
    return "".join(parts), spans


def sample_permutations(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` uniformly random orderings of ``n`` items (with replacement), seeded.

    Example:
        >>> sample_permutations(3, 2, 0).tolist()
        [[2, 0, 1], [2, 1, 0]]
    """
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(count)]).astype(np.int64)


def truncate_utf8(text: str, max_bytes: int) -> str:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes, never splitting a character (section 6).

    Same as ``text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")``.

    Example:
        >>> truncate_utf8("héllo", 2), truncate_utf8("héllo", 3)
        ('h', 'hé')
    """
    check_int(max_bytes, "max_bytes", "truncate_utf8", minimum=0)
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def common_byte_length(response_sets: Iterable[Sequence[str]]) -> int:
    """The shortest UTF-8 byte length over all responses of several sets (the paper's common
    per-prompt length: truncate every compared set to it before scoring).

    Example:
        >>> common_byte_length([["abc", "de"], ["héllo"]])
        2
    """
    lengths = [len(r.encode("utf-8")) for s in response_sets for r in as_texts(s)]
    if not lengths:
        raise InvalidInputError("`response_sets` must contain at least one response; got none.")
    return min(lengths)


# ------------------------------------------------------------------------------------------------
# Scoring layer
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _model_signature(model: str, dtype: str, base_url: str | None = None) -> str:
    from divmeter.backends.server import get_completions_scorer, server_model_name

    if server_model_name(model) is not None:
        return get_completions_scorer(model, base_url).signature
    from divmeter.backends.lm import resolve_lm

    src = resolve_lm(model)
    return f"{src.name}@{src.revision}" + ("/bf16" if dtype == "bfloat16" else "")


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[str, str]:
    """torch's and transformers' versions for the signature (read once per process:
    ``importlib.metadata`` parses the METADATA files on every call, ~1.3 ms per scored set)."""

    def v(p: str) -> str:
        try:
            return importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            return "none"

    return v("torch"), v("transformers")


def decan_surprisal(
    responses: Sequence[str],
    *,
    prompt: str = "",
    permutations: int = 50,
    format: str = DEFAULT_FORMAT,
    model: str = "gemma-3-270m",
    seed: int = 0,
    threads: int | None = None,
    dtype: str = "float32",
    sharing: str | None = None,
    batch: bool = True,
    base_url: str | None = None,
    device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the LM: per-permutation bits and bytes, and unconditional bits/byte of each response.

    All permutation passes and the n unconditional passes go through one call of the scorer: every
    token prefix they share (the prompt; in instruct format also the responses that open several
    permutations, and each response's unconditional pass) runs once (``sharing="tree"``, the
    default on the CPU), the rest in right-padded batches; on an accelerator the default is
    ``sharing="none"`` (whole texts in few large batches: there the host's work per forward pass
    costs more than the shared tokens; see ``CausalLMScorer.default_sharing``).
    ``sharing="none", batch=False`` is the one-at-a-time baseline.
    With ``model="openai:NAME"`` the texts go to ``base_url``'s ``/v1/completions`` instead
    (echo + logprobs, :class:`divmeter.backends.server.CompletionsScorer`), one request each.

    Returns:
        ``(perm_bits, perm_bytes, unconditional_bpb, perms)`` with shapes (P, n), (P, n), (n,),
        (P, n); feed the first three to :func:`decan_from_surprisal`.

    Example:
        >>> bits, nbytes, h, perms = decan_surprisal(["Rain.", "Snow fell."], permutations=3)
        >>> bits.shape, h.shape, nbytes[0].tolist() == [[5, 10][i] for i in perms[0]]
        ((3, 2), (2,), True)
    """
    from divmeter.backends.server import get_completions_scorer, server_model_name

    scorer: Any
    if server_model_name(model) is not None:
        scorer = get_completions_scorer(model, base_url)
    else:
        from divmeter.backends.lm import get_scorer

        scorer = get_scorer(model, threads=threads, dtype=dtype, device=device)
    texts, spans, nbytes, perms = _surprisal_inputs(responses, prompt, permutations, format, seed)
    bits = scorer.span_bits(texts, spans, sharing=sharing, batch=batch)
    return _surprisal_outputs(bits, permutations, nbytes, perms)


def _surprisal_inputs(responses: Sequence[str], prompt: str, permutations: int, format: str,
                      seed: int) -> tuple[list[str], list[list[tuple[int, int]]], np.ndarray,
                                          np.ndarray]:
    """The texts (permutations, then each response alone) and spans :func:`decan_surprisal`
    scores, the responses' bytes and the permutations."""
    n = len(responses)
    nbytes = np.array([len(r.encode("utf-8")) for r in responses], dtype=np.int64)
    perms = sample_permutations(n, permutations, seed)
    texts: list[str] = []
    spans: list[list[tuple[int, int]]] = []
    for perm in perms:
        t, s = format_responses(prompt, [responses[i] for i in perm], format)
        texts.append(t)
        spans.append(s)
    for r in responses:
        t, s = format_responses(prompt, [r], format)
        texts.append(t)
        spans.append(s)
    return texts, spans, nbytes, perms


def _surprisal_outputs(bits: Sequence[np.ndarray], permutations: int, nbytes: np.ndarray,
                       perms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray]:
    perm_bits = np.stack(bits[:permutations])
    uncond = np.array([b[0] for b in bits[permutations:]]) / nbytes
    return perm_bits, nbytes[perms], uncond, perms


def _device_relation(value: Any, params: Mapping[str, Any]) -> str | None:
    from divmeter.backends.server import server_model_name

    if value != "cpu" and server_model_name(params["model"]) is not None:
        return (f"applies to local models; server model {params['model']!r} runs on its "
                f"server; got device={value!r}.")
    return None


def _base_url_relation(value: Any, params: Mapping[str, Any]) -> str | None:
    from divmeter.backends.server import server_model_name

    if value is not None and server_model_name(params["model"]) is None:
        return f"applies to server models ('openai:NAME'); got model {params['model']!r}."
    return None


#: Decan on a GPU: sets whose texts go through the scorer together (one prefix tree and one set
#: of padded batches), which keeps the card busy where one set's 10-50 texts cannot.
SETS_PER_CALL = 64
#: Sets per call of a scorer on the CPU (or a server): one, since there batching sets does not
#: pay (a larger value still gives each set's value, as tests/test_decan_lm.py checks).
CPU_SETS_PER_CALL = 1


@register
class Decan(Metric):
    """Decan diversity D = C x a_n of a response set under a base language model.

    For ``permutations`` seeded random orderings, the responses are concatenated in the chosen
    format and scored in one forward pass each; the bits of the tokens of the response in slot k
    (tokens attributed by character-span overlap) divided by its UTF-8 bytes, averaged over
    permutations, give the per-byte curve a_1..a_n (eq. 6). Each response is also scored alone
    after the prompt, giving h(r_i|p) and the coherence C (eq. 4). D = C x a_n (eq. 5).

    Many sets: on a GPU (a local model on a ``device`` other than the CPU) the texts of up to
    :data:`SETS_PER_CALL` sets go to the scorer in one call (its prefix tree and length-sorted
    padded batches span the sets), so a set's value agrees with its value alone on the same
    device to float rounding of the batch shapes; on the CPU and for server models the sets go
    one at a time (the same numbers).

    Args:
        responses: The response set (n >= 2).
        prompt: The prompt the responses answer (or continue, in completion format); by default
            the set's own (``divmeter score`` passes each set's), else none.
        permutations: Number of random orderings averaged (paper: 50; 100 for scenarios).
        format: ``completion`` (default: the prompt repeated before each response, appendix
            A.1, the paper's format for Tevet & Berant's sets in section 5, and the one that fits
            a base model) or ``instruct`` (``Response A: ...``, the paper's format for the
            synthetic scenarios of appendix B.2/B.3 and the OLMo-2 stages of section 6).
        model: Scoring LM (see :func:`divmeter.backends.lm.resolve_lm`); default Gemma-3-270m
            base (Q4_K_M GGUF, dequantized), the paper used Qwen2.5-3B base.
        seed: Seed of the permutations.
        max_bytes: Truncate every response to this many UTF-8 bytes first (length matching,
            section 6); ``None`` scores them whole.
        threads: torch CPU threads (``None``: torch's default).
        dtype: ``float32`` or ``bfloat16`` (faster on CPUs with bf16 support, less exact).
        device: Where the local LM runs: ``cpu`` (default), ``auto``, ``cuda``, ``cuda:N``,
            ``mps`` (not in the signature; see :mod:`divmeter.backends.device`).
        base_url: With ``model="openai:NAME"``: the API root of an OpenAI-compatible server whose
            ``/v1/completions`` returns prompt log-probabilities (``echo`` + ``logprobs``; the
            llama.cpp server, vLLM); the model then runs there (``threads``/``dtype`` unused) and
            the signature names ``openai:NAME@host`` instead of a model fingerprint.

    Returns:
        MetricResult with ``value`` = D (bits/byte) and ``details`` D, a_n, C, sigma, E (bits),
        E_rate, a_1, curve (per-byte a_k), curve_bits, unconditional_bpb, bytes, n, permutations,
        and the appendix-D outputs CxE (bits), CxE_rate, a_inf, E_fit, D_fit (bits/byte; ``None``
        with fit_reason when the sigmoid fit is missing), fit (eq. 9 parameters) and fit_recipe.
        ``value`` is ``None`` (with a reason) for an empty set, a single response, or an empty
        response.

    Example:
        >>> r = decan(["It rained all day.", "The sun came out."], prompt="Describe the weather.",
        ...           permutations=2)
        >>> r.signature.split("|")[:5]
        ['decan', 'fmt:completion', 'perms:2', 'seed:0', 'model:gemma-3-270m@a5fd3b62230a']
        >>> 0 < r.details["C"] < 1 and r.value > 0
        True
    """

    name = "decan"
    family = "lm"
    granularity = "set"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = DECAN
    description = ("Decan D = C x a_n: residual per-byte surprise of a base LM after in-context "
                   "reading of the other responses, weighted by coherence")
    extra = "lm"
    order_invariant = False  # seeded permutations of the responses as given
    context = ("prompt",)
    params = {
        "prompt": Param(str, allow_none=True, default="", doc="the prompt (default: the set's)",
                        alternative="Describe the weather."),
        "permutations": Param(int, ge=1, cap=10**4, default=50, doc="response orders averaged"),
        "format": Param(str, choices=FORMATS, default=DEFAULT_FORMAT,
                        doc="prompt template (appendix A.1)"),
        "model": Param(str, default="gemma-3-270m",
                       doc="base LM: alias, GGUF path, or openai:NAME on base_url",
                       alternative="smollm2-135m-instruct"),
        "base_url": Param(str, allow_none=True, default=None, runtime=True,
                          relation=_base_url_relation,
                          doc="server API root for model='openai:NAME' (completions, echo)"),
        "seed": Param(int, ge=0, default=0, doc="seed of the permutations"),
        "max_bytes": Param(int, ge=1, cap=2**50, allow_none=True, default=None,
                           doc="truncate each response to this many UTF-8 bytes"),
        "threads": Param(int, ge=1, cap=1024, allow_none=True, default=None, runtime=True,
                         doc="torch threads"),
        "dtype": Param(str, choices=("float32", "bfloat16"), default="float32",
                       doc="LM weights' dtype"),
        "device": replace(DEVICE, relation=_device_relation),
    }

    def setup(self) -> None:
        from divmeter.backends.server import server_model_name

        self.remote = server_model_name(self.p["model"]) is not None

    def signature(self) -> str:
        p = self.p
        torch_v: str | None
        tf_v: str | None
        torch_v, tf_v = (None, None) if self.remote else _versions()
        return make_signature(
            "decan",
            fmt=p["format"],
            perms=p["permutations"],
            seed=p["seed"],
            model=_model_signature(p["model"], p["dtype"], p["base_url"]),
            max_bytes=p["max_bytes"],
            torch=torch_v,
            transformers=tf_v,
        )

    def score(self, sets: Sequence[Any], context: Sequence[SetContext] | None = None
              ) -> list[MetricResult]:
        p = self.p
        out: list[MetricResult | None] = [None] * len(sets)
        ready: list[tuple[int, list[str], Any]] = []
        for i, s in enumerate(sets):
            texts = self._texts(s)
            if isinstance(texts, str):
                out[i] = self.result(None, texts)
                continue
            prompt = self._prompt(None if context is None else context[i])
            ready.append((i, texts, _surprisal_inputs(texts, prompt, p["permutations"],
                                                      p["format"], p["seed"])))
        if ready:
            scorer = self._scorer()
            # the texts of several sets in one call of the scorer on a GPU (see the docstring);
            # on the CPU (device="auto" included, where it finds none) one set a call
            per_call = CPU_SETS_PER_CALL if self.remote or scorer.device == "cpu" \
                else SETS_PER_CALL
            for a in range(0, len(ready), per_call):
                group = ready[a:a + per_call]
                bits = scorer.span_bits([t for *_, inp in group for t in inp[0]],
                                        [sp for *_, inp in group for sp in inp[1]])
                k = 0
                for i, texts, (tx, _, nbytes, perms) in group:
                    part = bits[k:k + len(tx)]
                    k += len(tx)
                    perm_bits, perm_bytes, uncond, _ = _surprisal_outputs(
                        part, p["permutations"], nbytes, perms)
                    out[i] = self._decan_result(texts, perm_bits, perm_bytes, uncond)
        return [r for r in out if r is not None]

    def _prompt(self, ctx: SetContext | None) -> str:
        """The prompt of a set: the one given, else the set's own, else none."""
        prompt = self.p["prompt"]
        if "prompt" not in self.given and ctx is not None and ctx.get("prompt") is not None:
            prompt = ctx["prompt"]
        return "" if prompt is None else str(prompt)

    def _texts(self, responses: Sequence[str]) -> list[str] | str:
        """The texts to score (cut to ``max_bytes``), or why the set has no value."""
        texts = list(responses)
        if self.p["max_bytes"] is not None:
            texts = [truncate_utf8(t, self.p["max_bytes"]) for t in texts]
        if not texts:
            return "empty set"
        if len(texts) < 2:
            return "needs at least 2 responses; got 1"
        empty = [i for i, t in enumerate(texts) if not t]
        if empty:
            return f"response {empty[0]} is empty (0 bytes): per-byte surprise undefined"
        return texts

    def _scorer(self) -> Any:
        """The causal LM (local) or the server's completions endpoint that scores spans."""
        p = self.p
        if self.remote:
            from divmeter.backends.server import get_completions_scorer

            return get_completions_scorer(p["model"], p["base_url"])
        from divmeter.backends.lm import get_scorer

        return get_scorer(p["model"], threads=p["threads"], dtype=p["dtype"],
                          device=p["device"])

    def _decan_result(self, texts: list[str], perm_bits: np.ndarray, perm_bytes: np.ndarray,
                      uncond: np.ndarray) -> MetricResult:
        res = decan_from_surprisal(perm_bits, perm_bytes, uncond)
        details = res.to_dict()
        details["bytes"] = [len(t.encode("utf-8")) for t in texts]
        details["perm_bpb"] = res.perm_bpb.tolist()
        return self.result(res.D, details=details)


decan = public_function(Decan)
