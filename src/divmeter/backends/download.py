"""Downloading one file over HTTP(S): the one place divmeter fetches data (``divmeter data``).

:func:`download` streams a URL to a file, hashing it as it goes, and stops with one line when
the answer is not the whole file: an HTTP error status, a connection that cannot be made or
times out, or a body cut short (fewer bytes than ``Content-Length`` or than the caller
expects). It uses ``httpx`` (the HTTP client of :mod:`divmeter.backends.http`) when the
``http`` extra is installed, else the standard library's ``urllib``; both give the same
answers and the same messages. The caller decides where the file goes (a temporary folder that
is renamed into place once every file is verified: :mod:`divmeter.studies.datasets`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable

from divmeter.core.errors import DivmeterError

__all__ = ["DownloadError", "download"]

#: Bytes read and written at a time.
CHUNK = 1 << 16


class DownloadError(DivmeterError):
    """A file could not be downloaded whole (the message is one line naming the URL)."""


def _client(prefer: str | None) -> str:
    if prefer in ("httpx", "urllib"):
        return prefer
    return "httpx" if importlib.util.find_spec("httpx") is not None else "urllib"


def download(url: str, dest: str | os.PathLike[str], *, timeout: float = 60.0,
             expected_bytes: int | None = None, on_bytes: Callable[[int], None] | None = None,
             client: str | None = None) -> tuple[int, str]:
    """Stream ``url`` into ``dest`` (created or truncated) and hash it.

    Args:
        url: An ``http://`` or ``https://`` URL.
        dest: The file to write.
        timeout: Seconds to wait for the connection and for each read.
        expected_bytes: The size the file must have (a shorter or longer body is an error).
        on_bytes: Called with the number of bytes of each chunk written (progress bars).
        client: ``httpx`` or ``urllib`` (default: httpx when installed).

    Returns:
        ``(bytes written, sha256 hex digest)``.

    Raises:
        DownloadError: An HTTP status other than 200, no connection, a time-out, or a body
            shorter than announced / expected.
    """
    if not url.startswith(("http://", "https://")):
        raise DownloadError(f"{url}: only http:// and https:// URLs can be downloaded.")
    h = hashlib.sha256()
    written = 0

    def sink(chunk: bytes, fh: object) -> None:
        nonlocal written
        fh.write(chunk)  # type: ignore[attr-defined]
        h.update(chunk)
        written += len(chunk)
        if on_bytes is not None:
            on_bytes(len(chunk))

    with open(dest, "wb") as fh:
        announced = (_httpx_get if _client(client) == "httpx" else _urllib_get)(
            url, timeout, lambda chunk: sink(chunk, fh), lambda: written)
    want = expected_bytes if expected_bytes is not None else announced
    if want is not None and written != want:
        if written < want:
            raise DownloadError(f"{url}: the server stopped after {written} of {want} bytes; "
                                "try again (nothing was kept).")
        raise DownloadError(f"{url}: got {written} bytes, expected {want}.")
    return written, h.hexdigest()


def _httpx_get(url: str, timeout: float, sink: Callable[[bytes], None],
               count: Callable[[], int]) -> int | None:
    import httpx

    length: str | None = None
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as resp:
            if resp.status_code != 200:
                raise DownloadError(f"{url}: the server answered HTTP {resp.status_code}.")
            length = resp.headers.get("content-length")
            for chunk in resp.iter_raw(CHUNK):
                sink(chunk)
            return int(length) if length and length.isdigit() else None
    except httpx.TimeoutException:
        raise DownloadError(f"{url}: timed out after {timeout:g} s (after {count()} bytes)."
                            ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        if length and length.isdigit():  # httpx drops the partial chunk it could not finish
            raise DownloadError(f"{url}: the server stopped before the end of the file "
                                f"({length} bytes announced); try again (nothing was kept)."
                                ) from None
        raise DownloadError(f"{url}: the connection broke after {count()} bytes ({exc}); try "
                            "again (nothing was kept).") from None
    except httpx.TransportError as exc:
        raise DownloadError(f"{url}: cannot connect ({exc or type(exc).__name__}).") from None


def _urllib_get(url: str, timeout: float, sink: Callable[[bytes], None],
                count: Callable[[], int]) -> int | None:
    import http.client
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            if resp.status != 200:
                raise DownloadError(f"{url}: the server answered HTTP {resp.status}.")
            length = resp.headers.get("content-length")
            while True:
                try:
                    chunk = resp.read(CHUNK)
                except http.client.IncompleteRead as exc:
                    if exc.partial:
                        sink(exc.partial)
                    break
                if not chunk:
                    break
                sink(chunk)
            return int(length) if length and length.isdigit() else None
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url}: the server answered HTTP {exc.code}.") from None
    except TimeoutError:
        raise DownloadError(f"{url}: timed out after {timeout:g} s (after {count()} bytes)."
                            ) from None
    except urllib.error.URLError as exc:
        raise DownloadError(f"{url}: cannot connect ({exc.reason}).") from None
    except (ConnectionError, http.client.HTTPException) as exc:
        raise DownloadError(f"{url}: the connection broke after {count()} bytes ({exc}); try "
                            "again (nothing was kept).") from None

