"""On-disk embedding cache keyed by model signature + text hash.

Re-scoring a file must not re-embed it. Vectors are stored per model signature in a folder of
append-only shards: ``.npz`` files holding ``keys`` (16-byte BLAKE2b digests of the texts, as
``(m, 16)`` uint8 rows) and ``vecs`` (float32 rows). A process reads the shards of a model once,
keeps them in memory, and appends a new shard when it has embedded enough new texts (or on
:meth:`EmbeddingCache.flush` and at interpreter exit), written on a background thread while the
caller goes on (one shard at a time; ``flush`` waits for it). Shards are written to a temporary name
and renamed, so a crashed or concurrent writer never leaves a half-written shard behind; two
writers at worst store the same vector twice.

The location is ``$DIVMETER_CACHE`` if set, else ``~/.cache/divmeter``; ``DIVMETER_CACHE=off``
disables the disk cache (the in-memory one stays).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

__all__ = ["EmbeddingCache", "cache_root", "text_key", "get_cache"]

#: Pending vectors written to disk as one shard once this many accumulate.
FLUSH_EVERY = 4096


def cache_root() -> Path | None:
    """The cache folder (``$DIVMETER_CACHE`` or ``~/.cache/divmeter``); ``None`` when disabled.

    Example:
        >>> root = cache_root()
        >>> root is None or root.name in {"divmeter"} or "DIVMETER_CACHE" in os.environ
        True
    """
    env = os.environ.get("DIVMETER_CACHE")
    if env is not None and env.strip().lower() in {"off", "0", "no", "none", "false"}:
        return None
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "divmeter"


def text_key(text: str) -> bytes:
    """16-byte BLAKE2b digest of a text (UTF-8), the per-text cache key.

    Example:
        >>> text_key("a").hex()[:8]
        '27c35e6e'
    """
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _slug(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()[:32]


class EmbeddingCache:
    """Vectors of texts for one model signature, in memory and (optionally) on disk.

    Args:
        signature: The model signature (name, revision/fingerprint, pooling, ...). Any change in it
            starts a fresh store.
        root: Cache folder; ``None`` keeps vectors in memory only.

    Example:
        >>> c = EmbeddingCache("toy-model|v:1", root=None)
        >>> c.put(["x"], np.array([[1.0, 2.0]], dtype=np.float32))
        >>> found, missing = c.get(["x", "y"])
        >>> missing, found[0].tolist()
        ([1], [1.0, 2.0])
    """

    def __init__(self, signature: str, root: Path | None) -> None:
        self.signature = signature
        self.folder = None if root is None else Path(root) / "embeddings" / _slug(signature)
        self._mem: dict[bytes, np.ndarray] = {}
        self._pending_keys: list[bytes] = []
        self._pending_vecs: list[np.ndarray] = []
        self._lock = threading.Lock()
        #: The shard being written (one at a time, in order), and the error of the last write.
        self._writer: threading.Thread | None = None
        self._write_error: OSError | None = None
        self._loaded = False
        self.hits = 0
        self.misses = 0

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.folder is None or not self.folder.is_dir():
            return
        for shard in sorted(self.folder.glob("*.npz")):
            try:
                with np.load(shard) as z:
                    keys, vecs = z["keys"], z["vecs"]
            except (OSError, ValueError, KeyError):  # unreadable shard: ignore it, re-embed
                continue
            if keys.dtype.kind == "S" and keys.dtype.itemsize == 16 and keys.ndim == 1:
                keys = keys.view(np.uint8).reshape(-1, 16)  # early shards: full bytes kept
            if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 16:
                continue  # not a shard this version wrote
            for k, v in zip(keys, vecs, strict=True):
                self._mem.setdefault(k.tobytes(), v)

    def get(self, texts: Sequence[str], keys: Sequence[bytes] | None = None
            ) -> tuple[dict[int, np.ndarray], list[int]]:
        """Look texts up: (``{position: vector}`` for hits, positions of misses); ``keys``:
        their :func:`text_key` values when the caller has them (each text is hashed once)."""
        if keys is None:
            keys = [text_key(t) for t in texts]
        with self._lock:
            self._load()
            found: dict[int, np.ndarray] = {}
            missing: list[int] = []
            for i, k in enumerate(keys):
                v = self._mem.get(k)
                if v is None:
                    missing.append(i)
                else:
                    found[i] = v
            self.hits += len(found)
            self.misses += len(missing)
            return found, missing

    def vectors(self, texts: Sequence[str],
                compute: Callable[[list[str], dict[int, np.ndarray]], np.ndarray],
                dim: Callable[[], int]) -> np.ndarray:
        """The ``(len(texts), d)`` float32 vectors of ``texts``: cached ones looked up, the
        others computed once per distinct text by ``compute(texts, hits)`` (``hits``: the
        cached ``{position: vector}``, for checks) and stored; ``dim()`` shapes an empty answer.

        Example:
            >>> c = EmbeddingCache("toy-model|v:1", root=None)
            >>> twice = lambda ts, hits: np.array([[2.0 * len(t)] for t in ts])
            >>> c.vectors(["ab", "c", "ab"], twice, lambda: 1).ravel().tolist(), c.misses
            ([4.0, 2.0, 4.0], 3)
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, dim()), dtype=np.float32)
        keys = [text_key(t) for t in texts]  # each text hashed once, for the lookup and the store
        hits, missing = self.get(texts, keys)
        if missing:
            todo = {texts[i]: keys[i] for i in missing}  # each distinct text once, in order
            uniq = list(todo)
            # may raise: nothing of this call is stored then
            fresh = np.asarray(compute(uniq, hits), dtype=np.float32)
            self.put(uniq, fresh, list(todo.values()))  # (the store keeps rows of `fresh`)
            if len(uniq) == len(texts):  # every text new and distinct: rows in input order
                return fresh.copy()
            row = dict(zip(uniq, fresh, strict=True))
            hits.update((i, row[texts[i]]) for i in missing)
        return np.stack([hits[i] for i in range(len(texts))]).astype(np.float32, copy=False)

    def put(self, texts: Sequence[str], vectors: np.ndarray,
            keys: Sequence[bytes] | None = None) -> None:
        """Store vectors (rows aligned with ``texts``; ``keys`` as in :meth:`get`); written to
        disk in batches."""
        vecs = np.asarray(vectors, dtype=np.float32)
        if keys is None:
            keys = [text_key(t) for t in texts]
        with self._lock:
            self._load()
            new: list[int] = []
            for i, (k, v) in enumerate(zip(keys, vecs, strict=True)):
                if k not in self._mem:
                    self._mem[k] = v
                    if self.folder is not None:
                        self._pending_keys.append(k)
                        new.append(i)
            if new:  # pending rows as one block per call (stacked once at the flush)
                self._pending_vecs.append(vecs if len(new) == len(vecs) else vecs[new])
            if len(self._pending_keys) >= FLUSH_EVERY:
                self._flush_locked()

    def flush(self) -> None:
        """Write pending vectors to disk as one shard, and wait for every shard write."""
        with self._lock:
            self._flush_locked()
            self._wait_locked()

    def _flush_locked(self) -> None:
        """Start writing the pending vectors as one shard on a writer thread (the caller goes on
        with its work; :meth:`flush` and the next shard wait for it). The folder is made here,
        so a cache that cannot be written fails in the call that filled it, as before; a failed
        write is raised by the next flush or shard."""
        if self.folder is None or not self._pending_keys:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        sig_file = self.folder / "signature.txt"
        if not sig_file.exists():
            sig_file.write_text(self.signature + "\n", encoding="utf-8")
        # raw digest bytes as uint8 rows: a fixed-width bytes dtype would drop trailing NULs
        keys = np.frombuffer(b"".join(self._pending_keys), dtype=np.uint8).reshape(-1, 16)
        vecs = (self._pending_vecs[0] if len(self._pending_vecs) == 1
                else np.concatenate(self._pending_vecs))
        self._pending_keys.clear()
        self._pending_vecs.clear()
        self._wait_locked()
        self._writer = threading.Thread(target=self._write, args=(self.folder, keys, vecs),
                                        name="divmeter-cache-writer")
        self._writer.start()

    def _write(self, folder: Path, keys: np.ndarray, vecs: np.ndarray) -> None:
        name = uuid.uuid4().hex
        tmp = folder / f".{name}.tmp.npz"
        try:
            np.savez(tmp, keys=keys, vecs=vecs)
            os.replace(tmp, folder / f"{name}.npz")
        except OSError as exc:
            self._write_error = exc

    def _wait_locked(self) -> None:
        """Wait for the shard being written; raise its error, if it had one."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        if self._write_error is not None:
            exc, self._write_error = self._write_error, None
            raise exc

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._mem)


_CACHES: dict[tuple[str, str | None], EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def get_cache(signature: str, root: Path | None | str = "default") -> EmbeddingCache:
    """The process-wide cache object of a model signature (flushed at interpreter exit).

    Args:
        signature: Model signature.
        root: ``"default"`` for :func:`cache_root`, a folder, or ``None`` for memory only.
    """
    resolved = cache_root() if root == "default" else (None if root is None else Path(root))
    key = (signature, None if resolved is None else str(resolved))
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = EmbeddingCache(signature, resolved)
        return cache


@atexit.register
def _flush_all() -> None:  # pragma: no cover - runs at exit
    for cache in list(_CACHES.values()):
        try:
            cache.flush()
        except OSError:
            pass
