"""`divmeter generate` against a server that dies mid-run (issue 21, part 4).

The server is tests/faultserver.py run as its own process on loopback: it answers the first
requests, then exits (its port closes and open connections drop, as when llama.cpp's server
crashed). The run must stop within seconds, keep the complete sets it wrote, say that the server
stopped answering, exit non-zero, and a rerun with --resume must finish once the server is back.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="needs divmeter[http]")
pytest.importorskip("tenacity", reason="needs divmeter[http]")

FAULTSERVER = Path(__file__).with_name("faultserver.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(port: int, answers: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(FAULTSERVER), str(port), str(answers)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _generate(prompts: Path, out: Path, url: str, env: dict[str, str],
              *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "generate",
         str(prompts),
         "--model", "openai:fault-model", "--base-url", url, "-n", "2", "--max-tokens", "4",
         "-o", str(out), "--quiet", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_generate_stops_when_the_server_dies_and_resumes(tmp_path: Path) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"c{i}", "prompt": f"prompt {i}"}) + "\n"
                               for i in range(10)), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    env = {**os.environ, "DIVMETER_CACHE": str(tmp_path / "cache")}
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = _server(port, 6)  # 6 of the 20 samples are answered, then the process exits
    run = _generate(prompts, out, url, env)
    try:
        server.wait(timeout=120)
        died = time.monotonic()
        _, err = run.communicate(timeout=120)
        # the bound: the run ends within 20 s of the server closing its port (with the
        # client's default retries: 5 attempts, back-off from 0.5 s)
        assert time.monotonic() - died < 20
    finally:
        run.kill()
        server.kill()
    assert run.returncode == 1, err
    assert (f"divmeter: error: the server at {url} stopped answering (connection refused) "
            "after 6 of 20 requests; rerun with --resume.") in err
    kept = out.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in kept.splitlines()]
    assert 1 <= len(rows) <= 3 and all(len(r["responses"]) == 2 for r in rows)

    server = _server(port, 1000)  # back on the same port
    try:
        run = _generate(prompts, out, url, env, "--resume")
        _, err = run.communicate(timeout=120)
    finally:
        run.kill()
        server.kill()
    assert run.returncode == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.startswith(kept)  # rows of the first run untouched
    rows = [json.loads(line) for line in text.splitlines()]
    assert sorted(r["set_id"] for r in rows) == sorted(f"c{i}@temperature=1" for i in range(10))
    assert all(len(r["responses"]) == 2 for r in rows)
