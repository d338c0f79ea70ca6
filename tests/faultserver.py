"""A small OpenAI-shaped HTTP server on 127.0.0.1 that misbehaves on purpose, for fault tests.

Each request body carries an ``id`` (or, for generation payloads, a ``seed``: then the prompt
and seed identify it); the server counts attempts per (path, id) and answers by the
path's script: a list of behaviours for attempt 1, 2, ... (the last one repeats). Behaviours:

* ``"ok"``: 200 with ``{"id": ..., "attempt": k, "choices": [...], "usage": {...}}``
* ``"429"``: 429 with ``Retry-After: 0``
* ``"500"``: 500 with a plain-text body
* ``"drop"``: close the connection without answering
* ``"garbage"``: 200 with a body that is not JSON
* ``"truncated"``: 200 with a JSON body cut in the middle
* ``"slow"``: sleep 2 s, then answer ok (longer than the tests' time-outs)
* ``"400"``: 400 with an OpenAI-style error object
* ``"echo-auth"``: 500 whose plain-text body repeats the request's ``Authorization`` header (a
  server that echoes the API key back)
* ``"drip"``: 200 with a valid answer sent one byte every 0.25 s (each read is quick, the whole
  answer takes minutes: only a whole-request deadline stops it)
* ``"say:TEXT"``: 200 with a chat answer whose message content is ``TEXT`` (for judge tests:
  refusals, unparseable or out-of-range ratings, valid JSON ratings)
* a callable ``f(body) -> dict``: 200 with ``json.dumps(f(body))`` (NaN written as ``NaN``, as
  Python servers do), e.g. an embeddings answer of a chosen shape

A body without an ``id`` (real OpenAI-shaped requests) is counted under its prompt and seed when
it has a seed (generation), else under the SHA-256 of its canonical JSON, so identical bodies
share one script position.

Bounded by construction: it only answers the requests the tests send, on loopback, and stops when
the test's fixture closes it.

As a script, ``python faultserver.py PORT ANSWERS`` serves on 127.0.0.1:PORT, answers the first
ANSWERS POST requests ok and then exits on the next one without answering it: its port closes
and every open connection drops, as when a real server process dies. It prints ``ready`` once it
listens.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FaultServer"]


class FaultServer:
    """Start with ``FaultServer(scripts)``; ``.url`` is the ``/v1`` base; ``.close()`` stops it.

    ``scripts`` maps an endpoint path below ``/v1/`` to its list of behaviours.
    """

    def __init__(self, scripts: dict[str, list[Any]], port: int = 0) -> None:
        self.scripts = scripts
        self.attempts: Counter[tuple[str, Any]] = Counter()
        self.total = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None
                      ) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                with outer.lock:
                    outer.total += 1
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"data": [{"id": "fault-model"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "no such path"}}')

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("/v1/", 1)[-1]
                # requests without an ``id`` (generation payloads, judge prompts) are told apart
                # by their prompt and seed, else by the hash of the whole body
                ident = body.get("id")
                if ident is None and "seed" in body:
                    ident = f"{json.dumps(body.get('prompt', body.get('messages')))}#{body['seed']}"
                elif ident is None:
                    ident = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
                with outer.lock:
                    outer.total += 1
                    outer.attempts[(path, ident)] += 1
                    k = outer.attempts[(path, ident)]
                script = outer.scripts.get(path, ["ok"])
                how = script[min(k, len(script)) - 1]
                ok = json.dumps({
                    "id": body.get("id"), "attempt": k,
                    "auth": self.headers.get("Authorization") is not None,
                    "choices": [{"text": f"answer {body.get('id', body.get('seed'))}",
                                 "index": 0,
                                 "message": {"role": "assistant",
                                             "content": f"reply {body.get('seed')}"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                }).encode()
                if callable(how):
                    self._send(200, json.dumps(how(body)).encode())
                elif how == "ok":
                    self._send(200, ok)
                elif how.startswith("say:"):
                    self._send(200, json.dumps({
                        "choices": [{"index": 0, "message": {"role": "assistant",
                                                             "content": how[4:]}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                    }).encode())
                elif how == "429":
                    self._send(429, b'{"error": "slow down"}', {"Retry-After": "0"})
                elif how == "500":
                    self._send(500, b"internal error")
                elif how == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                elif how == "garbage":
                    self._send(200, b"<html>not json</html>")
                elif how == "truncated":
                    self._send(200, ok[: len(ok) // 2])
                elif how == "slow":
                    time.sleep(2.0)
                    self._send(200, ok)
                elif how == "echo-auth":
                    self._send(500, f"invalid key {self.headers.get('Authorization')}".encode())
                elif how == "drip":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(ok)))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    try:
                        for i in range(len(ok)):
                            self.wfile.write(ok[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.25)
                    except OSError:  # the client gave up: stop dripping
                        return
                elif how == "400":
                    self._send(400, b'{"error": {"message": "model \'nope\' not found"}}')

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _dies_after(answers: int) -> Any:
    """A behaviour that answers ``answers`` requests ok, then ends the process on the next."""
    import os
    import time

    count = [0]
    lock = threading.Lock()

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            count[0] += 1
            last = count[0] > answers
        if last:
            # let the answers already given finish writing (another handler thread may still be
            # sending the last one; on a loaded machine os._exit cut it, and 4 of 5 arrived)
            time.sleep(0.5)
            os._exit(0)
        return {"choices": [{"text": f"answer {body.get('seed')}", "index": 0,
                             "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}

    return answer


if __name__ == "__main__":
    import sys

    port, answers = int(sys.argv[1]), int(sys.argv[2])
    behaviour = _dies_after(answers)
    srv = FaultServer({p: [behaviour] for p in ("completions", "chat/completions", "embeddings")},
                      port=port)
    print("ready", flush=True)
    srv.thread.join()
