"""`divmeter list` in family sections (issue 24) and the catalogue's metric table, generated from
the registry so that it cannot drift."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from divmeter.apps.cli.listing import (
    FAMILIES,
    LEVELS,
    README_MARKERS,
    markdown_table,
    write_readme_table,
)
from divmeter.core.errors import InvalidInputError
from divmeter.engine.registry import list_metrics

REPO = Path(__file__).resolve().parents[1]
DIVMETER = Path(sys.executable).parent / "divmeter"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)


def _sections(out: str) -> list[tuple[str, str, list[str]]]:
    """(family heading, level heading, metric names) of each table, in order."""
    found: list[tuple[str, str, list[str]]] = []
    family = ""
    names = {s.name for s in list_metrics()}
    for line in out.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0].endswith(":") and words[0][:-1] in FAMILIES:
            family = words[0][:-1]
        elif len(words) == 3 and words[1] == "level":
            found.append((family, words[0], []))
        elif words[0] in names:
            found[-1][2].append(words[0])
    return found


def test_list_is_grouped_by_family_then_level_at_80_columns() -> None:
    proc = run("list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(ln.rstrip()) for ln in lines) <= 80
    specs = {s.name: s for s in list_metrics()}
    assert len(specs) >= 40
    sections = _sections(proc.stdout)
    # every metric once, under its own family and level; families in order, levels in order
    listed = [n for _, _, names in sections for n in names]
    assert sorted(listed) == sorted(specs)
    for family, level, names in sections:
        assert names and names == sorted(names)
        assert all(specs[n].family == family and specs[n].granularity == level for n in names)
    order = [(FAMILIES.index(f), LEVELS.index(lv)) for f, lv, _ in sections]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert f"{len(specs)} metrics in {len({s.family for s in specs.values()})} families" in lines[0]
    # a section heading counts its metrics
    for family in {f for f, _, _ in sections}:
        n = sum(len(names) for f, _, names in sections if f == family)
        assert any(ln.startswith(f"{family}: ") and ln.rstrip().endswith(f"({n})")
                   for ln in lines)


def test_list_one_family() -> None:
    proc = run("list", "--family", "form")
    assert proc.returncode == 0, proc.stderr
    sections = _sections(proc.stdout)
    assert {f for f, _, _ in sections} == {"form"}
    assert {lv for _, lv, _ in sections} >= {"set", "response"}
    form = sorted(s.name for s in list_metrics("form"))
    assert sorted(n for _, _, names in sections for n in names) == form
    assert "yule-k" in form and "vocd-d" in form
    assert proc.stdout.startswith(f"divmeter {_version()}: {len(form)} form metrics")


def _version() -> str:
    from divmeter import __version__

    return __version__


def test_markdown_table_rows_come_from_the_registry() -> None:
    table = markdown_table()
    rows = table.splitlines()[2:]
    specs = list_metrics()
    assert len(rows) == len(specs)
    by_name = {row.split("|")[1].strip().strip("`"): row for row in rows}
    for s in specs:
        cells = [c.strip() for c in by_name[s.name].split("|")[1:-1]]
        assert cells[1:4] == [s.family, s.granularity,
                              f"{'higher' if s.higher_is_more_diverse else 'lower'} = more "
                              "diverse"]
        assert cells[5] == (f"`{s.extra}` extra" if s.extra else "core")


def test_catalogue_table_is_generated_from_the_registry() -> None:
    """The documentation's metric catalogue is this table, made from the registry when the site
    is built (docs/gen_pages.py; issue 33 moved it out of README), so it cannot drift."""
    import runpy

    gen = runpy.run_path(str(REPO / "docs" / "gen_pages.py"), run_name="docs_gen_pages")
    index = gen["catalogue_page"](list(list_metrics()))
    assert markdown_table() in re.sub(r"\[`([^`]+)`\]\([^)]+\)", r"`\1`", index)


def test_markdown_format_and_update(tmp_path: Path) -> None:
    proc = run("list", "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == markdown_table()
    one = run("list", "yule-k", "--format", "markdown").stdout.splitlines()
    assert len(one) == 3 and one[2].startswith("| `yule-k` | form | response | lower")
    path = tmp_path / "DOC.md"
    path.write_text("# x\n\n" + README_MARKERS[0] + "\nSTALE\n" + README_MARKERS[1] + "\nend\n",
                    encoding="utf-8")
    proc = run("list", "--format", "markdown", "--update", str(path))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    text = path.read_text(encoding="utf-8")
    assert "STALE" not in text and text.endswith(README_MARKERS[1] + "\nend\n")
    assert markdown_table() in text
    with pytest.raises(InvalidInputError, match="markers are missing"):
        write_readme_table("# no markers\n")
    bad = run("list", "--update", str(path))
    assert bad.returncode == 2
    assert "--update goes with --format markdown" in bad.stderr
