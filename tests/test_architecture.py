"""Layers that hold (issue 22): the layer table of docs/ARCHITECTURE.md against every import.

The table (section "The layers, from the bottom") places every module of ``src/divmeter`` in one
layer: its ``where`` column names files (``result.py``, ``corpus/run.py``, ``__init__.py`` for
the package itself) or folders (``metrics/``: every module under it); a file named explicitly
wins over its folder. Every ``import`` and ``from ... import`` of every module is read from its
source (``ast``), module level and inside functions alike; imports under ``if TYPE_CHECKING:``
name types only and never run, so they are not edges. A test per module then checks that

* the table places it;
* it imports nothing further down the table (a higher layer number);
* it is on no import cycle (a module that reaches itself through its imports);
* it takes no underscore name (``from x import _name``, ``x._name``, or a ``_module``) from a
  module of another package (``divmeter.core._version`` and ``divmeter.core._optional`` are the
  library's own and open to all);
* it imports no shim (a former module name kept for old imports:
  ``metrics/lexical.py``, ``response.py``, ``icl.py``).

The modules a helper of issue 22 is still reshaping are marked ``xfail(strict=True)`` with the
owner's name: once their fix is merged, the mark fails (XPASS) and comes off.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "divmeter"
DOC = REPO / "docs" / "ARCHITECTURE.md"
#: Private modules of the library as a whole (any package may import them).
LIBRARY_PRIVATE = {"divmeter.core._version", "divmeter.core._optional"}
#: Former module names kept for old imports (re-exports); no module of the library imports them.
SHIMS = {"divmeter.metrics.lexical", "divmeter.metrics.response",
         "divmeter.metrics.icl"}

#: Modules whose fix belongs to another helper of issue 22 (test -> (owner, what remains)).
PENDING: dict[tuple[str, str], str] = {}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    imports: dict[str, int] = field(default_factory=dict)  # imported module -> first line
    private: list[str] = field(default_factory=list)  # underscore names taken elsewhere

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (they never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else (
                test.attr if isinstance(test, ast.Attribute) else "")
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skip.update(id(n) for n in ast.walk(child))
    return skip


@cache
def modules() -> dict[str, Module]:
    """Every module of the package with the divmeter modules it imports."""
    found: dict[str, Module] = {}
    for path in sorted(SRC.rglob("*.py")):
        name, is_pkg = _module_name(path)
        found[name] = Module(name, path, is_pkg)

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in found:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for mod in found.values():
        tree = ast.parse(mod.path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        aliases: dict[str, str] = {}  # local name -> imported module
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[tuple[str, str | None, str]] = []  # (module, name, local alias)
            if isinstance(node, ast.Import):
                targets = [(a.name, None, a.asname or a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [(base, a.name, a.asname or a.name) for a in node.names]
            for dotted, name, local in targets:
                if not dotted.startswith("divmeter"):
                    continue
                full = f"{dotted}.{name}" if name else dotted
                target = full if full in found else resolve(dotted)
                if target is None or target == mod.name:
                    continue
                mod.imports.setdefault(target, node.lineno)
                if full in found:
                    aliases[local] = full
                if name and name.startswith("_") and not name.startswith("__") \
                        and full not in found:
                    _check_private(mod, found[target], f"{target}.{name}")
                _check_private_module(mod, target, found)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                owner = found[aliases[node.value.id]]
                if f"{owner.name}.{node.attr}" not in found:
                    _check_private(mod, owner, f"{owner.name}.{node.attr}")
    return found


def _check_private(mod: Module, owner: Module, what: str) -> None:
    """An underscore name defined in ``owner`` is for ``owner``'s own package only."""
    if owner.name in LIBRARY_PRIVATE:
        return
    if mod.package != owner.package and what not in mod.private:
        mod.private.append(what)


def _check_private_module(mod: Module, target: str, found: dict[str, Module]) -> None:
    """A ``_module`` (``metrics/_common.py``) is for the modules of its own package."""
    if target in LIBRARY_PRIVATE:
        return
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            home = ".".join(parts[:i])
            if not (mod.name == home or mod.name.startswith(home + ".")) and \
                    target not in mod.private:
                mod.private.append(target)
            return


# --------------------------------------------------------------------------------------------
# the table


@cache
def layer_table() -> list[tuple[int, str, list[str]]]:
    """``(number, layer, where items)`` rows of the doc's table."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The layers, from the bottom", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1], re.findall(r"`([^`]+)`", cells[2])))
    return rows


def layer_of(name: str) -> tuple[int, str] | None:
    """The layer the table places module ``name`` in (a named file wins over its folder)."""
    rel = name.split(".")[1:]
    best: tuple[int, int, str] | None = None  # (specificity, number, layer)
    for number, layer, items in layer_table():
        for item in items:
            if item.endswith("/"):
                folder = item.rstrip("/").split("/")
                if rel[: len(folder)] == folder:
                    cand = (len(folder), number, layer)
                else:
                    continue
            else:
                path = item.removesuffix(".py").split("/")
                if path[-1] == "__init__":
                    path = path[:-1]
                if path != rel:
                    continue
                cand = (1000, number, layer)
            if best is None or cand[0] > best[0]:
                best = cand
    return None if best is None else (best[1], best[2])


def _cycle_through(name: str) -> list[str] | None:
    """A shortest import cycle from ``name`` back to itself, or ``None``."""
    found = modules()
    prev: dict[str, str] = {}
    queue = [name]
    seen = {name}
    while queue:
        cur = queue.pop(0)
        for nxt in sorted(found[cur].imports):
            if nxt == name:
                path = [cur]
                while path[-1] != name:
                    path.append(prev[path[-1]])
                return [name, *reversed(path[:-1]), name]
            if nxt not in seen:
                seen.add(nxt)
                prev[nxt] = cur
                queue.append(nxt)
    return None


def _params(check: str) -> list[object]:
    out: list[object] = []
    for name in sorted(modules()):
        why = PENDING.get((check, name))
        marks = [pytest.mark.xfail(strict=True, reason=f"issue 22, helper {why}")] if why else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


# --------------------------------------------------------------------------------------------
# the checks


#: The package's public face: the only modules outside a layer folder.
ROOT_FILES = {"__init__.py", "api.py", "testing.py"}


def test_table_rows_are_the_layers_in_order() -> None:
    rows = layer_table()
    assert [n for n, _, _ in rows] == list(range(len(rows))), "layers must be numbered 0, 1, ..."
    assert len(rows) >= 8


def test_folders_are_the_layers() -> None:
    """One layer a folder (issue 30): every row but the public face names one folder, each
    folder of ``src/divmeter`` is one row, and the only files at the root are the public face."""
    rows = layer_table()
    folders = sorted(p.name + "/" for p in SRC.iterdir()
                     if p.is_dir() and (p / "__init__.py").exists())
    named = []
    for _, layer, items in rows:
        if set(items) <= ROOT_FILES:
            continue
        assert len(items) == 1 and items[0].endswith("/") and items[0].count("/") == 1, (
            f"layer {layer!r} must be one top-level folder; got {items}")
        named.append(items[0])
    assert sorted(named) == folders
    root = sorted(p.name for p in SRC.glob("*.py"))
    assert set(root) <= ROOT_FILES, f"modules at the root outside the public face: {root}"


def test_every_table_entry_exists() -> None:
    for _, layer, items in layer_table():
        for item in items:
            assert (SRC / item).exists(), f"{layer}: `{item}` is not in src/divmeter"


@pytest.mark.parametrize("name", _params("placed"))
def test_module_is_placed(name: str) -> None:
    assert layer_of(name) is not None, f"{name}: add it to the layer table of ARCHITECTURE.md"


@pytest.mark.parametrize("name", _params("layers"))
def test_no_import_goes_down_the_table(name: str) -> None:
    mod = modules()[name]
    here = layer_of(name)
    assert here is not None
    bad = []
    for target, line in sorted(mod.imports.items()):
        there = layer_of(target)
        assert there is not None, f"{target} is not in the layer table"
        if there[0] > here[0]:
            bad.append(f"{mod.path.relative_to(REPO)}:{line}: {name} ({here[1]}, layer "
                       f"{here[0]}) imports {target} ({there[1]}, layer {there[0]})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", _params("cycles"))
def test_no_import_cycle(name: str) -> None:
    cycle = _cycle_through(name)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("name", _params("private"))
def test_no_underscore_name_of_another_package(name: str) -> None:
    mod = modules()[name]
    assert not mod.private, f"{name} takes private names of other packages: {mod.private}"


@pytest.mark.parametrize("name", _params("shims"))
def test_no_import_of_a_shim(name: str) -> None:
    used = sorted(set(modules()[name].imports) & SHIMS)
    assert not used, f"{name} imports the shim(s) {used}: import the module they point to"


def test_the_shims_exist() -> None:
    assert SHIMS <= set(modules())


def test_the_checks_see_function_level_imports() -> None:
    """The reader finds an import inside a function (api.score's core is imported at module
    level, the registry's families lazily): an import test that missed them would pass
    vacuously."""
    found = modules()
    assert "divmeter.engine.batch" in found["divmeter.api"].imports or any(
        t.startswith("divmeter.engine.batch") for t in found["divmeter.api"].imports)
    lazy = [n for n, m in found.items() for t in m.imports
            if t.startswith("divmeter.backends.lm") and n.startswith("divmeter.metrics.decan")]
    assert lazy, "metrics.decan imports backends.lm inside functions"
