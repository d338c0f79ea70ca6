"""CLI smoke tests: every command and subcommand starts and prints its help, and the core
commands run end to end on the examples, whatever typer / click / rich version pyproject.toml
allows (``.ci/run`` runs this file in a second venv holding the lowest core versions too: the
CLI once patched a typer hook that most allowed typers lack, and died at start).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_util import run_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _commands() -> list[list[str]]:
    import typer

    from divmeter.apps.cli import app

    root = typer.main.get_command(app)
    out: list[list[str]] = [[]]

    def walk(cmd, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out.append([*path, name])
            walk(sub, [*path, name])

    walk(root, [])
    return out


COMMANDS = _commands()


def test_every_command_is_mounted() -> None:
    names = {" ".join(c) for c in COMMANDS}
    assert {"list", "score", "report", "judge", "meta", "meta agreement", "meta contest",
            "annotate", "annotate export", "build", "build rndshuff"} <= names


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "divmeter")
def test_help_of_every_command(cmd: list[str], monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(monkeypatch, capsys, *cmd, "--help")
    assert code == 0, err
    assert "Usage" in out and "Exit codes: 0 ok" in " ".join(out.split())


def test_version_and_list(monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    from divmeter import __version__

    assert run_main(monkeypatch, capsys, "--version")[:2] == (0, f"divmeter {__version__}\n")
    code, out, _ = run_main(monkeypatch, capsys, "list", "--family", "form")
    assert code == 0 and "distinct-n" in out and "self-bleu" in out


def test_score_then_meta_on_the_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLES / "stories.jsonl"), "-m",
                            "distinct-n", "-m", "self-bleu", "-o", str(out), "-q")
    assert code == 0, err
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 8
    assert all(0 <= r["distinct-n"] <= 1 for r in recs if r["distinct-n"] is not None)
    code, text, err = run_main(monkeypatch, capsys, "meta", "contest", str(out), "-c",
                               "distinct-n", "--nan", "omit", "-f", "json")
    assert code == 0, err
    assert json.loads(text)["distinct-n"]["n"] == 7


def test_bad_option_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLES / "stories.jsonl"),
                            "-m", "distinct-n:n=0")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("divmeter: error: ")
