"""The documentation site (issue 33) builds and its examples run.

* The site builds with ``mkdocs build --strict`` (a broken link, anchor or API reference fails),
  offline, and holds a page per registered metric and the reference of every command.
* Every example of every hand-written page runs as a reader would run it, in a fresh copy of
  ``examples/``: the commands of ``bash`` blocks one by one in a shell (each must exit 0), the
  ``python`` blocks of a page in order as one script. A block that cannot run here says why on
  the line before it (``<!-- docs-test: skip REASON -->``); the test reports it as skipped with
  that reason, never silently.
* The examples of the generated metric pages run for every metric (a command and a Python call),
  in this process, so that a model loads once.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BIN = Path(sys.executable).parent
GEN = runpy.run_path(str(DOCS / "gen_pages.py"), run_name="docs_gen_pages")

#: Pages written by hand (the generated ones are made at build time).
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->")


def blocks(text: str) -> list[tuple[str, str, str | None]]:
    """``(language, code, skip reason or None)`` of every fenced block at the start of a line;
    the reason comes from a ``<!-- docs-test: skip REASON -->`` (or ``generated``) comment on the
    last non-blank line before the block.

    Example:
        >>> mark = "<!-- docs-test: skip needs a GPU -->\\n"
        >>> blocks(mark + "```bash\\nx\\n```\\n```python\\ny\\n```\\n")
        [('bash', 'x\\n', 'needs a GPU'), ('python', 'y\\n', None)]
    """
    out = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip().rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        reason = None
        if mark is not None:
            reason = mark.group(2) or mark.group(1)
            if mark.group(1) == "generated":
                reason = f"generated: {mark.group(2)}"
        out.append((m.group(1), m.group(2), reason))
    return out


def commands(code: str) -> list[str]:
    """The commands of a ``bash`` block: continuation lines joined, comment lines dropped.

    Example:
        >>> commands("a \\\\\\n  b   # note\\n# c\\n\\nd\\n")
        ['a b   # note', 'd']
    """
    joined = re.sub(r"\\\n\s*", "", code)
    return [ln.strip() for ln in joined.splitlines()
            if ln.strip() and not ln.strip().startswith("#")]


def _workdir(tmp: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp / "examples")
    return tmp


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "COLUMNS": "80", "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}


#: The public copy of Tevet & Berant's files, byte for byte (read-only shared input).
UPSTREAM = REPO.parent / "shared" / "data" / "upstream" / "icl-diversity"


def _fetched_tevet(tmp: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with a cache of its own that holds the tevet data set, fetched ``--from`` the
    local copy (the page's ``divmeter data fetch tevet`` then finds it there, as on a machine
    that fetched it before); skips without the copy."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"needs the local copy of the tevet data ({UPSTREAM})")
    env = {**env, "DIVMETER_CACHE": str(tmp / "cache")}
    proc = subprocess.run(["divmeter", "data", "fetch", "tevet", "--from", str(UPSTREAM), "-q"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return env


def test_every_page_is_in_the_nav_and_placeholders_say_so() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert f": {page}\n" in nav, f"{page} is not in the nav of mkdocs.yml"
    for page in ("reproduce.md", "data.md", "scale.md", "reliability.md"):
        assert (DOCS / page).exists(), page


@pytest.mark.parametrize("page", [p for p in PAGES
                                  if any(b[0] in ("bash", "python")
                                         for b in blocks((DOCS / p).read_text("utf-8")))])
def test_page_examples_run(page: str, tmp_path: Path) -> None:
    """The page's blocks in order, as a reader runs them, in a fresh copy of examples/."""
    work = _workdir(tmp_path)
    text = (DOCS / page).read_text(encoding="utf-8")
    env = _env()
    if "divmeter data fetch tevet" in text:  # no network here: the cache holds the data already
        env = _fetched_tevet(tmp_path, env)
    skipped, python = [], []
    for lang, code, reason in blocks(text):
        if lang not in ("bash", "python"):
            continue
        if reason is not None:
            skipped.append(reason)
            continue
        if lang == "python":
            python.append(code)
            continue
        for cmd in commands(code):
            proc = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], cwd=work,
                                  env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"{page}: {cmd}\n{proc.stderr[-2000:]}"
    if python:
        script = work / "page_examples.py"
        script.write_text("\n".join(python), encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{page}: python blocks\n{proc.stderr[-3000:]}"
    if skipped and not python and not any(lang == "bash" and reason is None
                                          for lang, _, reason in blocks(text)):
        pytest.skip("; ".join(skipped))


def test_skip_marks_give_a_reason() -> None:
    for page in PAGES:
        for _, _, reason in blocks((DOCS / page).read_text(encoding="utf-8")):
            if reason is not None:
                assert len(reason) > 10, f"{page}: a docs-test mark without a reason"


# --------------------------------------------------------------------------------------------
# generated pages


def test_catalogue_has_a_page_per_metric_with_its_facts() -> None:
    import divmeter
    from divmeter.apps.cli.listing import markdown_table

    pages = GEN["metric_pages"]()
    specs = divmeter.list_metrics()
    index = pages["reference/metrics/index.md"]
    for s in specs:
        page = pages[f"reference/metrics/{s.name}.md"]
        d = s.to_dict()
        assert page.startswith(f"# `{s.name}`")
        assert d["citation"] in page and f"`{d['merge']}`" in page
        assert ("higher = more diverse" if s.higher_is_more_diverse
                else "lower = more diverse") in page
        for k in d["parameters"]:
            assert f"| `{k}` |" in page, (s.name, k)
        assert "## Evidence" in page
        assert f"[`{s.name}`]({s.name}.md)" in index
    # the overview is the registry's table, names linked
    plain = re.sub(r"\[`([^`]+)`\]\([^)]+\)", r"`\1`", index)
    assert markdown_table() in plain


def test_evidence_hook_renders_what_the_spec_provides() -> None:
    hook = GEN["evidence_markdown"]
    assert hook("distinct-n", {}) is None
    table = hook("x", {"evidence": [{"dataset": "conTest", "spearman": 0.68}]})
    assert table.splitlines()[0] == "| dataset | spearman |" and "| conTest | 0.68 |" in table
    assert hook("x", {"evidence": "Spearman 0.68 on conTest."}) == "Spearman 0.68 on conTest."


def test_cli_reference_covers_every_command_and_option() -> None:
    import typer

    from divmeter.apps.cli import app

    page = GEN["cli_page"]()
    root = typer.main.get_command(app)
    for path, cmd in GEN["_commands"](root, []):
        if not path:
            continue
        assert f"`divmeter {' '.join(path)}`" in page, path
        for p in cmd.params:
            for opt in getattr(p, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}`" in page, (path, opt)
    assert "'divmeter\\[dist\\]'" in page  # help text as written (brackets kept, escaped)


def _metric_cases() -> list[str]:
    import divmeter

    return [s.name for s in divmeter.list_metrics()]


#: Metrics whose generated examples cannot run here, and why.
METRIC_SKIP = {
    "judge": "needs a judge model behind a server (tests/test_judge*.py)",
    "decan": "loads a language model and reads 50 permutations per set: minutes on a CPU "
    "(tests/test_decan_lm.py runs it on small inputs)",
}


@pytest.mark.parametrize("name", _metric_cases())
def test_metric_page_examples_run(name: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated command and Python example of a metric's page, in this process."""
    from typer.testing import CliRunner

    import divmeter
    from divmeter.apps.cli import app

    if name in METRIC_SKIP:
        pytest.skip(METRIC_SKIP[name])
    spec = divmeter.get_metric(name)
    if spec.extra:
        pytest.importorskip({"embed": "sentence_transformers", "lm": "transformers",
                             "judge": "httpx"}.get(spec.extra, "numpy"))
    page = GEN["metric_page"](spec)
    runnable = [(lang, code) for lang, code, reason in blocks(page) if lang in ("bash", "python")]
    assert [lang for lang, _ in runnable] == ["bash", "python"]
    monkeypatch.chdir(_workdir(tmp_path))
    (cmd,) = commands(runnable[0][1])
    assert cmd.startswith("divmeter score ")
    res = CliRunner().invoke(app, cmd.split()[1:] + ["-f", "jsonl"])
    assert res.exit_code == 0, res.output
    assert getattr(res, "stdout", res.output).count('"set_id"') >= 2
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(runnable[1][1], f"<{name} page>", "exec"), {})
    assert out.getvalue().strip()


# --------------------------------------------------------------------------------------------
# the build


@pytest.mark.docs
@pytest.mark.slow
def test_site_builds_strict_and_offline(tmp_path: Path) -> None:
    mkdocs = BIN / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("needs divmeter[docs]: pip install -e '.[docs]'")
    site = tmp_path / "site"
    proc = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(site)], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]
    import divmeter

    for s in divmeter.list_metrics():
        assert (site / "reference" / "metrics" / s.name / "index.html").is_file(), s.name
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "divmeter compare" in cli and "divmeter meta contest" in cli
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "score_many" in api and "check_metric" in api
    # nothing is fetched from another host when a page opens: no web font, no CDN
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:[^"]+)"', text):
            pytest.fail(f"{page.relative_to(site)} loads {m.group(1)}")
