"""Run the ``divmeter`` command line in process, for the tests that check its exit code and
output (shared by the CLI tests of several modules)."""

from __future__ import annotations

import sys

import pytest


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
             ) -> tuple[int, str, str]:
    """Run ``divmeter ARGS`` through :func:`divmeter.apps.cli.main`: (exit code, stdout, stderr)."""
    from divmeter.apps.cli import main

    monkeypatch.setattr(sys, "argv", ["divmeter", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
