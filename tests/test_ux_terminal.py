"""What a person sees on an 80-column terminal (issue 15, "Terminal"): `divmeter list`,
`divmeter list NAME`, errors on stderr with exit code 2, help text, column names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from divmeter.engine.registry import column_name, get_metric, list_metrics
from divmeter.report.metric_text import example_command, range_text, short_description

REPO = Path(__file__).resolve().parents[1]
DIVMETER = Path(sys.executable).parent / "divmeter"


def run(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50"}
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)


def assert_fits(text: str, width: int = 80) -> None:
    """Every line fits the terminal and no column is squeezed to one word per line (two
    consecutive indented lines holding a single word each)."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    assert max(len(ln) for ln in lines) <= width, max(lines, key=len)
    lone = [len(ln.split()) == 1 and ln.startswith("  ") for ln in lines]
    for i in range(1, len(lines)):
        if lone[i] and lone[i - 1]:
            pytest.fail(f"one word per line: {lines[i - 1]!r}, {lines[i]!r}")


def test_list_fits_80_columns_one_row_per_metric() -> None:
    proc = run("list")
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout)
    specs = list_metrics()
    lines = proc.stdout.splitlines()
    for s in specs:
        row = [ln for ln in lines if ln.split() and ln.split()[0] == s.name]
        assert len(row) == 1, s.name  # one line per metric, the full name never cut
        cells = row[0].split()
        assert cells[1] == ("↑" if s.higher_is_more_diverse else "↓")
        # the description keeps at least its first 20 characters on that same line
        assert short_description(s.description)[:20] in row[0]
        # under its family's heading, then its level's (sections: tests/test_cli_listing.py)
        at = lines.index(row[0])
        assert any(ln.startswith(f"{s.family}: ") for ln in lines[:at]), s.name
    assert "details: divmeter list NAME" in proc.stdout


def test_list_family_filters_and_bogus_family_is_an_error() -> None:
    proc = run("list", "--family", "lm")
    assert proc.returncode == 0
    assert "decan" in proc.stdout and "distinct-n" not in proc.stdout
    proc = run("list", "--family", "bogus")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("divmeter: error: --family must be one of form, content, lm, judge; "
                           "got 'bogus'.\n")


@pytest.mark.parametrize("name", ["self-bleu", "decan", "vendi-embedding", "cdm"])
def test_list_name_details(name: str) -> None:
    """Parameters with type, default and constraint (from the declared Params), citation,
    an example command; readable at 80 columns."""
    proc = run("list", name)
    assert proc.returncode == 0, proc.stderr
    # signatures are identifiers printed whole on their own lines (copied, never broken)
    sigs = [ln for ln in proc.stdout.splitlines() if len(ln.split()) == 1 and "|v:" in ln]
    assert all(ln.split("|", 1)[0] in (name, "evidence") for ln in sigs)
    assert_fits("\n".join(ln for ln in proc.stdout.splitlines() if ln not in sigs))
    spec = get_metric(name)
    out = proc.stdout
    params = out.split("\nparameters")[1].split("\ncitation")[0]
    for k, p in spec.schema.items():
        row = [ln for ln in params.splitlines() if ln.split() and ln.split()[0] == k]
        assert row, k
        assert p.type_name() in row[0]
    assert "citation" in out and spec.citation.split()[0] in out
    assert example_command(spec) in out.replace("\n", " ") or example_command(spec) in out


def test_list_name_self_bleu_rows_exact() -> None:
    out = run("list", "self-bleu").stdout
    assert "direction    lower = more diverse" in out
    assert "range        [0, 1]" in out
    assert "n          int       4             an integer >= 1 and <= 100." in out
    assert "example\ndivmeter score examples/stories.jsonl -m self-bleu:n=4\n" in out


def test_list_unknown_name_suggests() -> None:
    proc = run("list", "distinct")
    assert proc.returncode == 2
    assert "Did you mean 'distinct-n'" in proc.stderr  # (or 'distinct-k': both are near)


@pytest.mark.parametrize(
    ("bounds", "text"),
    [((0.0, 1.0), "[0, 1]"), ((1.0, None), "[1, ∞)"), ((-1.0, 2.0), "[-1, 2]"),
     ((None, None), "(-∞, ∞)"), ((0.5, 1.0), "[0.5, 1]")],
)
def test_range_text(bounds: tuple[float | None, float | None], text: str) -> None:
    assert range_text(bounds) == text


def test_example_command_is_runnable(tmp_path: Path) -> None:
    cmd = example_command(get_metric("distinct-n"))
    assert cmd == "divmeter score examples/stories.jsonl -m distinct-n:n_max=5"
    proc = run(*cmd.split()[1:], "-o", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("params", "column"),
    [({"variant": "sentence", "n": 3}, "self-bleu:n=3,variant=sentence"),
     ({"n": 3, "variant": "sentence"}, "self-bleu:n=3,variant=sentence"),
     ({"n": 4, "variant": "corpus"}, "self-bleu"),
     ({"lowercase": True, "n": 2}, "self-bleu:n=2,lowercase=True")],
)
def test_column_name_independent_of_parameter_order(params: dict, column: str) -> None:
    assert column_name("self-bleu", params) == column


def test_resume_finds_column_written_in_other_order(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    ex = str(REPO / "examples" / "stories.jsonl")
    assert run("score", ex, "-m", "self-bleu:variant=sentence,n=3", "-o", str(out)).returncode == 0
    proc = run("score", ex, "-m", "self-bleu:n=3,variant=sentence", "-o", str(out), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "(8 already there)" in proc.stderr


def test_help_shows_exit_codes_and_metavars() -> None:
    top = run("--help").stdout
    assert "Exit codes: 0 ok; 1 the run produced nothing usable" in " ".join(top.split())
    score = " ".join(run("score", "--help").stdout.split())
    assert "NAME[:k=v,...]" in score
    assert "<bool>" not in score and "<list[str]>" not in score


def test_quiet_silences_model_libraries() -> None:
    """-q sets the switches transformers / huggingface_hub / tqdm read (inherited by workers)."""
    code = ("import os; from divmeter.apps.cli.progress import quiet_libraries; quiet_libraries(); "
            "import transformers; print(transformers.logging.get_verbosity(), "
            "os.environ['HF_HUB_DISABLE_PROGRESS_BARS'], os.environ['TQDM_DISABLE'])")
    pytest.importorskip("transformers")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items()
                                          if k not in ("TRANSFORMERS_VERBOSITY", "TQDM_DISABLE")})
    assert out.stdout.split() == ["40", "1", "1"]  # logging.ERROR


@pytest.mark.skipif(not Path("/usr/bin/script").exists(), reason="needs util-linux script")
def test_quiet_on_a_terminal_prints_nothing_but_results(tmp_path: Path) -> None:
    """On a real terminal (a pty from `script`) the progress bar shows without -q, not with."""
    out = tmp_path / "s.jsonl"
    base = f"{DIVMETER} score examples/stories.jsonl -m distinct-n -o {out}"
    loud = subprocess.run(["script", "-qec", base, "/dev/null"], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert "divmeter: scored 8 sets" in loud.stdout
    quiet = subprocess.run(["script", "-qec", base + " -q", "/dev/null"], capture_output=True,
                           text=True, cwd=REPO, timeout=300)
    assert quiet.returncode == 0
    assert quiet.stdout == ""
