"""The data-set registry (``manifests.json``) and the atomic, verified fetcher.

See :mod:`divmeter.studies.datasets` for the layout and the guarantees.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError

__all__ = [
    "DataFile",
    "Dataset",
    "DatasetError",
    "FetchResult",
    "data_root",
    "dataset_path",
    "fetch",
    "get_dataset",
    "list_datasets",
    "status",
    "verify",
]

#: The file a fetched data set's folder holds beside its data: what was fetched, from where.
MARKER = "divmeter-dataset.json"
#: Bytes read at a time when hashing or copying.
CHUNK = 1 << 16
#: Temporary folders of fetches older than this (seconds) were left by a killed process.
STALE_AFTER = 3600.0

ProgressFn = Callable[[int, int], None]


class DatasetError(DivmeterError):
    """A data set could not be fetched, found or verified (one line, naming the file)."""


@dataclass(frozen=True)
class DataFile:
    """One file of a data set: its path in the source repository, size and SHA-256."""

    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Dataset:
    """A known data set (one entry of ``manifests.json``).

    Attributes:
        name: What ``divmeter data fetch`` takes.
        title: What it holds, in one line.
        citation: The paper to cite.
        source: Where it comes from (and its terms, as stated upstream).
        repository: ``owner/name`` of the public repository holding the files.
        commit: The pinned commit.
        url_template: The raw-file URL, with ``{commit}`` and ``{path}``.
        strip: Prefix of the repository paths left out in the local folder.
        files: Every file, with size and hash.
    """

    name: str
    title: str
    citation: str
    source: str
    repository: str
    commit: str
    url_template: str
    strip: str
    files: tuple[DataFile, ...]

    def local(self, f: DataFile) -> str:
        """A file's path inside the fetched folder (its repository path without ``strip``)."""
        return f.path.removeprefix(self.strip)

    def url(self, f: DataFile, mirror: str | None = None) -> str:
        """Where a file is downloaded from: the pinned raw URL, or ``mirror`` + its path."""
        if mirror is not None:
            return mirror.rstrip("/") + "/" + f.path
        return self.url_template.format(commit=self.commit, path=f.path)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def fingerprint(self) -> str:
        """SHA-256 of the file list: a cached folder fetched for another manifest is stale."""
        text = json.dumps([[f.path, f.bytes, f.sha256] for f in self.files])
        return hashlib.sha256(text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "citation": self.citation,
                "source": self.source, "repository": self.repository, "commit": self.commit,
                "files": len(self.files), "bytes": self.total_bytes}


@cache
def _manifests() -> dict[str, Dataset]:
    text = resources.files("divmeter.studies.datasets").joinpath("manifests.json").read_text(
        encoding="utf-8")
    out: dict[str, Dataset] = {}
    for name, e in json.loads(text).items():
        files = tuple(DataFile(f["path"], int(f["bytes"]), f["sha256"]) for f in e["files"])
        out[name] = Dataset(name, e["title"], e["citation"], e["source"], e["repository"],
                            e["commit"], e["url_template"], e.get("strip", ""), files)
    return out


def list_datasets() -> list[Dataset]:
    """Every known data set, by name.

    Example:
        >>> [d.name for d in list_datasets()]
        ['tevet']
    """
    return [d for _, d in sorted(_manifests().items())]


def get_dataset(name: str) -> Dataset:
    """The data set ``name``.

    Raises:
        InvalidInputError: An unknown name (the message lists the known ones).
    """
    known = _manifests()
    if name not in known:
        raise InvalidInputError(f"unknown data set {name!r}; known: {', '.join(sorted(known))} "
                                "(see divmeter data list).")
    return known[name]


def data_root() -> Path:
    """The folder holding fetched data sets: ``<divmeter cache>/data``.

    Raises:
        DatasetError: The cache is off (``DIVMETER_CACHE=off``): data sets live in it.
    """
    from divmeter.backends.cache import cache_root

    root = cache_root()
    if root is None:
        raise DatasetError("the divmeter cache is off (DIVMETER_CACHE=off), and data sets are "
                           "kept in it; set DIVMETER_CACHE to a folder.")
    return root / "data"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _marker(folder: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def verify(name: str, folder: str | os.PathLike[str] | None = None) -> list[str]:
    """Check every file of a fetched data set (size and SHA-256): one line per problem.

    Args:
        name: The data set.
        folder: Where it is (default: the cache's folder for it).

    Returns:
        The problems (empty: every file is the manifest's, byte for byte).

    Raises:
        DatasetError: It was never fetched.
    """
    ds = get_dataset(name)
    where = Path(folder) if folder is not None else data_root() / name
    if not where.is_dir():
        raise DatasetError(f"data set {name!r} is not fetched ({where} does not exist); run "
                           f"divmeter data fetch {name}.")
    problems = []
    marker = _marker(where)
    if marker is None or marker.get("fingerprint") != ds.fingerprint():
        problems.append(f"{MARKER}: missing or for another manifest (fetch it again)")
    for f in ds.files:
        p = where / ds.local(f)
        if not p.is_file():
            problems.append(f"{ds.local(f)}: missing")
        elif p.stat().st_size != f.bytes:
            problems.append(f"{ds.local(f)}: {p.stat().st_size} bytes, the manifest says "
                            f"{f.bytes}")
        elif (got := _sha256(p)) != f.sha256:
            problems.append(f"{ds.local(f)}: sha256 {got[:12]}..., the manifest says "
                            f"{f.sha256[:12]}...")
    return problems


def dataset_path(name: str) -> Path:
    """The folder of a fetched data set (its files are not re-hashed here: :func:`verify`).

    Raises:
        DatasetError: It is not fetched (the message says how to fetch it).
    """
    ds = get_dataset(name)
    where = data_root() / name
    marker = _marker(where)
    if marker is None or marker.get("fingerprint") != ds.fingerprint():
        raise DatasetError(f"data set {name!r} is not fetched; run divmeter data fetch {name} "
                           f"(or, offline, divmeter data fetch {name} --from DIR with a copy).")
    return where


def status(name: str) -> dict[str, Any]:
    """``{"fetched": bool, "path": ..., "origin": ..., "fetched_at": ...}`` of a data set."""
    ds = get_dataset(name)
    where = data_root() / name
    marker = _marker(where) or {}
    fetched = marker.get("fingerprint") == ds.fingerprint()
    return {"name": name, "fetched": fetched, "path": str(where) if fetched else None,
            "origin": marker.get("origin") if fetched else None,
            "fetched_at": marker.get("fetched_at") if fetched else None}


@dataclass(frozen=True)
class FetchResult:
    """What :func:`fetch` did.

    Attributes:
        dataset: The data set.
        path: Its folder.
        cached: It was in the cache already (verified; nothing downloaded).
        origin: Where the files came from (the URL template, a mirror or a local folder).
    """

    dataset: Dataset
    path: Path
    cached: bool
    origin: str


def _copy_hashed(src: Path, dest: Path, on_bytes: Callable[[int], None]) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    with open(src, "rb") as fi, open(dest, "wb") as fo:
        while chunk := fi.read(CHUNK):
            fo.write(chunk)
            h.update(chunk)
            n += len(chunk)
            on_bytes(len(chunk))
    return n, h.hexdigest()


def _local_source(ds: Dataset, source: Path, f: DataFile) -> Path:
    """The file in a local copy: at its repository path (a checkout of the repository, or a
    copy of its files) or at its path in a fetched folder."""
    for candidate in (source / f.path, source / ds.local(f)):
        if candidate.is_file():
            return candidate
    raise DatasetError(f"{ds.name}: {ds.local(f)} is not in {source} (looked for {f.path} and "
                       f"{ds.local(f)} there).")


def _clean_stale(root: Path, name: str) -> None:
    """Remove temporary folders of fetches killed long ago (never a running one's)."""
    now = time.time()
    for p in root.glob(f".{name}.partial-*"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > STALE_AFTER:
                shutil.rmtree(p, ignore_errors=True)


def fetch(name: str, *, source: str | os.PathLike[str] | None = None,
          mirror: str | None = None, force: bool = False, timeout: float = 60.0,
          progress: ProgressFn | None = None, client: str | None = None) -> FetchResult:
    """Fetch a data set into the cache, verified file by file, all or nothing.

    Args:
        name: The data set (see :func:`list_datasets`).
        source: A local copy to take the files from instead of downloading them (a checkout
            of the source repository, or a folder laid out as a fetched one).
        mirror: A base URL holding the files at their repository paths (instead of the pinned
            raw URLs).
        force: Fetch again even when the cache holds a verified copy.
        timeout: Seconds to wait for a connection and for each read.
        progress: Called as ``progress(bytes done, bytes in all)``.
        client: ``httpx`` or ``urllib`` (default: httpx when installed).

    Returns:
        A :class:`FetchResult`.

    Raises:
        DatasetError: A file is missing, cut short or has another hash (the message names
            it); nothing is left in the cache. The copy already there (if any) is kept.
        DownloadError: The server could not be reached or stopped mid-file.
    """
    from divmeter.backends.download import download

    ds = get_dataset(name)
    if source is not None and mirror is not None:
        raise InvalidInputError("give --from DIR or --mirror URL, not both.")
    root = data_root()
    dest = root / name
    if not force and dest.is_dir() and not verify(name, dest):
        return FetchResult(ds, dest, True, str((_marker(dest) or {}).get("origin", dest)))
    src = Path(source) if source is not None else None
    if src is not None and not src.is_dir():
        raise DatasetError(f"--from {src}: not a folder; give the folder holding a copy of "
                           f"the {name} files.")
    origin = str(src.resolve()) if src is not None else (
        mirror.rstrip("/") + "/{path}" if mirror else ds.url_template.replace(
            "{commit}", ds.commit))
    root.mkdir(parents=True, exist_ok=True)
    _clean_stale(root, name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=root))
    done = [0]

    def on_bytes(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], ds.total_bytes)

    try:
        for f in ds.files:
            target = tmp / ds.local(f)
            target.parent.mkdir(parents=True, exist_ok=True)
            if src is not None:
                size, digest = _copy_hashed(_local_source(ds, src, f), target, on_bytes)
            else:
                size, digest = download(ds.url(f, mirror), target, timeout=timeout,
                                        on_bytes=on_bytes, client=client)
            if size != f.bytes:
                raise DatasetError(f"{name}: {ds.local(f)} has {size} bytes, the manifest says "
                                   f"{f.bytes} (a truncated or changed copy); nothing was "
                                   "written.")
            if digest != f.sha256:
                raise DatasetError(f"{name}: {ds.local(f)} has sha256 {digest}, the manifest "
                                   f"says {f.sha256} (a corrupted or changed copy); nothing "
                                   "was written.")
        marker = {"name": name, "fingerprint": ds.fingerprint(), "repository": ds.repository,
                  "commit": ds.commit, "origin": origin,
                  "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
                  "files": {ds.local(f): f.sha256 for f in ds.files}}
        (tmp / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        _install(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return FetchResult(ds, dest, False, origin)


def _install(tmp: Path, dest: Path) -> None:
    """Rename the verified folder into place; an older copy is moved aside first and removed
    after, so ``dest`` is at every moment either the old complete copy or the new one."""
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}-{time.time_ns()}")
        os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except OSError:
        if old is not None:
            os.rename(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
