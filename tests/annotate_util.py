"""Helpers shared by the ``divmeter annotate`` tests and benchmarks/load_annotate.py.

* :func:`answer_fields`: valid form values for one item of any kind.
* :func:`serve`: ``divmeter annotate serve`` in a subprocess on a free loopback port.
* :class:`Annotator`: a scripted annotator speaking plain HTTP (GET page, POST warm-up, POST
  answer), retrying through server restarts and recording every answer the server acknowledged.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
ASSIGNMENT = re.compile(r'name="assignment" value="(\d+)"')
FIELD = re.compile(r'name="((?:diversity|form|content|similarity|ranking|rank)(?:_\d+)?)"')


def answer_fields(kind: str, page: str, value: int = 3) -> dict[str, str]:
    """Form values for the rating page ``page``: every 1-5 question = ``value``; cs ranks in
    order (ratings are equal, so any permutation agrees with them)."""
    names = list(dict.fromkeys(FIELD.findall(page)))
    out: dict[str, str] = {}
    for name in names:
        if name.startswith("rank_"):
            out[name] = str(int(name.split("_")[1]) + 1)
        else:
            out[name] = str(value)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """Start ``divmeter annotate serve`` and wait until it answers (raises after 30 s)."""
    import httpx

    fh = open(log, "ab")  # noqa: SIM115 (kept open for the child's lifetime)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "annotate", "serve",
         str(db), "--port", str(port)], stdout=fh, stderr=fh)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}")


@contextmanager
def serve(db: Path, log: Path) -> Iterator[tuple[str, Callable[[], None]]]:
    """Yield (base URL, restart) where ``restart()`` SIGKILLs the server and starts it again."""
    port = free_port()
    state = {"proc": start_server(db, port, log)}

    def restart() -> None:
        state["proc"].kill()
        state["proc"].wait()
        state["proc"] = start_server(db, port, log)

    try:
        yield f"http://127.0.0.1:{port}", restart
    finally:
        state["proc"].kill()
        state["proc"].wait()


class Annotator:
    """One scripted annotator; ``run()`` answers until the study says it is done.

    Attributes:
        acked: Assignment ids whose answer the server confirmed (303, or 409 "already
            answered" on a retry after a lost response).
        refused: Unexpected 4xx/5xx responses (status, text) - must stay empty.
    """

    def __init__(self, base: str, token: str, kind: str, *, value: Callable[[int], int],
                 deadline: float, limit: int | None = None) -> None:
        self.base, self.token, self.kind = base, token, kind
        self.value = value
        self.deadline = deadline
        self.limit = limit
        self.acked: list[int] = []
        self.refused: list[tuple[int, str]] = []
        self.retries = 0
        self.finished = False

    def _request(self, client: Any, method: str, path: str, **kw: Any) -> Any:
        import httpx

        while time.monotonic() < self.deadline:
            try:
                return client.request(method, self.base + path, **kw)
            except httpx.TransportError:
                self.retries += 1
                time.sleep(0.2)
        raise TimeoutError("deadline reached")

    def run(self) -> None:
        import httpx

        with httpx.Client(timeout=30, follow_redirects=False) as client:
            while time.monotonic() < self.deadline:
                if self.limit is not None and len(self.acked) >= self.limit:
                    return
                page = self._request(client, "GET", f"/a/{self.token}")
                if page.status_code != 200:
                    self.refused.append((page.status_code, page.text[:300]))
                    return
                if 'id="finished"' in page.text:
                    self.finished = True
                    return
                csrf = CSRF.search(page.text).group(1)  # type: ignore[union-attr]
                assignment = int(ASSIGNMENT.search(page.text).group(1))  # type: ignore[union-attr]
                if "warmup-form" in page.text:
                    r = self._request(client, "POST", f"/a/{self.token}/warmup", data={
                        "csrf": csrf, "assignment": str(assignment),
                        "own_response": "my own reply", "quality": "4"})
                    if r.status_code not in (303, 409):
                        self.refused.append((r.status_code, r.text[:300]))
                    continue
                fields = answer_fields(self.kind, page.text, self.value(assignment))
                r = self._request(client, "POST", f"/a/{self.token}/answer",
                                  data={"csrf": csrf, "assignment": str(assignment), **fields})
                if r.status_code == 303 or (r.status_code == 409 and "already answered" in r.text):
                    self.acked.append(assignment)
                else:
                    self.refused.append((r.status_code, r.text[:300]))
