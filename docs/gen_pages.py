"""The pages of the documentation site that are generated at build time, so they cannot drift.

Run by the ``gen-files`` plugin of ``mkdocs.yml`` (``mkdocs build``); the test
``tests/test_docs_site.py`` imports it too. It reads only public surfaces:

* the metric catalogue, one page per metric, from the registry: :func:`divmeter.list_metrics`
  and each spec's :meth:`to_dict` (what ``divmeter list NAME --format json`` prints), the
  default signature from ``divmeter.score([], NAME)`` (every metric answers an empty set at
  once), the example command ``divmeter list NAME`` shows;
* the command-line reference from the typer app's command tree (click's ``commands`` and
  ``params``): every command, argument and option with its help;
* a metric's benchmark evidence through :func:`evidence_markdown` (see there for the hook).
"""

from __future__ import annotations

import html
import importlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

#: Where the generated pages go, inside the site.
METRICS_DIR = "reference/metrics"
CLI_PAGE = "reference/cli.md"

#: Metrics whose default signature cannot be made without the user's own setting (a judge needs
#: a model behind a server): their page says what to set instead.
_SIGNATURE_NEEDS = {"judge": "model=openai:NAME and base_url=... (a server)"}

FAMILY_TITLES = {"form": "Form: words and n-grams", "content": "Content: embeddings",
                 "lm": "LM: language-model surprise", "judge": "Judge: an LLM rates the set"}
LEVELS = {"set": "one value per set", "response": "one value per response, the set's value is "
          "their mean", "corpus": "the set is scored as one corpus (texts joined)",
          "pair": "one value per pair of sets"}
MERGES = {"exact": "per-shard statistics merged exactly (`divmeter score --corpus`)",
          "exact-two-pass": "exact, in two passes over the shards",
          "none": "no exact merge: a corpus is gathered and scored once, on one worker"}


# --------------------------------------------------------------------------------------------
# metrics


def _specs() -> list[Any]:
    import divmeter

    return list(divmeter.list_metrics())


def _cell(text: Any) -> str:
    """Text for a Markdown table cell: no line break, ``|`` escaped, HTML characters escaped."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _code(text: Any) -> str:
    """Text as a code span for a table cell (nothing escaped inside: Python-Markdown's tables
    skip pipes in code spans, and brackets there are not links).

    Example:
        >>> _code("[NAME]"), _code("a`b")
        ('`[NAME]`', '``a`b``')
    """
    text = " ".join(str(text).split())
    return f"``{text}``" if "`" in text else f"`{text}`"


def _range(bounds: Any) -> str:
    from divmeter.report.metric_text import range_text

    return range_text(tuple(bounds))


def _direction(d: Mapping[str, Any]) -> str:
    return "higher = more diverse" if d["direction"] == "higher" else "lower = more diverse"


def metric_slug(name: str) -> str:
    """The page name of a metric (its registry name is already file-safe).

    Example:
        >>> metric_slug("self-bleu")
        'self-bleu'
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)


def default_signature(name: str) -> str | None:
    """The metric's signature at its defaults, from its answer on an empty set (no text is
    scored, no model is run); ``None`` when it needs a setting of the user's or an extra that is
    not installed here."""
    import divmeter

    if name in _SIGNATURE_NEEDS:
        return None
    try:
        return str(divmeter.score([], name).signature)
    except Exception:  # a missing extra: the page says where to read it instead
        return None


def evidence_markdown(name: str, spec_dict: Mapping[str, Any]) -> str | None:
    """The benchmark evidence of a metric, as Markdown, when the build has it; else ``None``.

    The hook, in order (the first that answers wins):

    1. a module ``divmeter.evidence`` with a function ``metric_evidence_markdown(name) ->
       str | None`` (Markdown written by the evidence code itself);
    2. an ``evidence`` entry in the spec's ``to_dict()`` (what ``divmeter list NAME --format
       json`` prints): a string is shown as it is, a mapping as a two-column table, a list of
       mappings as a table with their keys as columns, anything else as JSON.
    """
    try:
        module = importlib.import_module("divmeter.evidence")
    except ImportError:
        module = None
    hook: Callable[[str], str | None] | None = getattr(module, "metric_evidence_markdown", None)
    if hook is not None:
        text = hook(name)
        if text:
            return text
    found = spec_dict.get("evidence")
    if not found:
        return None
    if isinstance(found, str):
        return found
    if isinstance(found, Mapping):
        rows = ["| | |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in found.items()]
        return "\n".join(rows)
    if isinstance(found, list) and found and all(isinstance(r, Mapping) for r in found):
        keys = list(dict.fromkeys(k for r in found for k in r))
        rows = ["| " + " | ".join(_cell(k) for k in keys) + " |",
                "|" + "---|" * len(keys)]
        rows += ["| " + " | ".join(_cell(r.get(k, "")) for k in keys) + " |" for r in found]
        return "\n".join(rows)
    return "```json\n" + json.dumps(found, indent=2, default=str) + "\n```"


_GRIFFE: dict[str, Any] = {}


def _documented(path: str) -> bool:
    """Whether ``path`` (``package.module.function``) is a function with a docstring in the
    sources, read statically as mkdocstrings reads them (so that a page never asks for an
    object it cannot render)."""
    try:
        import griffe
    except ImportError:
        return False
    if "divmeter" not in _GRIFFE:
        src = Path(__file__).resolve().parents[1] / "src"
        _GRIFFE["divmeter"] = griffe.load("divmeter", search_paths=[str(src)],
                                          resolve_aliases=False)
    try:
        obj = _GRIFFE["divmeter"][path.split(".", 1)[1]]
    except Exception:  # KeyError, or griffe's own errors for a member it cannot resolve
        return False
    return bool(getattr(obj, "is_function", False) and getattr(obj, "docstring", None))


def _definition(spec: Any) -> str | None:
    """The metric's public function, rendered from its docstring (formula, paper, degenerate
    cases) by mkdocstrings, or ``None`` when the spec names no documented function."""
    fn = getattr(spec, "fn", None)
    path = None
    if fn is not None and getattr(fn, "__module__", None) and getattr(fn, "__name__", None):
        path = f"{fn.__module__}.{fn.__name__}"
    target = getattr(spec, "target", None)
    if path is None and isinstance(target, str) and ":" in target:
        path = target.replace(":", ".")
    if path is None or not path.startswith("divmeter.") or not _documented(path):
        return None
    return "\n".join([f"::: {path}", "    options:", "      show_root_heading: true",
                      "      show_root_full_path: false", "      heading_level: 3"])


def _python_example(spec: Any) -> str:
    if spec.input == "instantiations":
        return ('import divmeter\n\n# k position-aligned lists of filler phrases\n'
                'items = [["a red kite", "flew"], ["the old dog", "slept"], ["rain", "fell"]]\n'
                f'r = divmeter.score(items, "{spec.name}")\nprint(r.value, r.signature)\n')
    return ("import divmeter\n\n"
            'texts = ["The keeper had not spoken to anyone in forty days.",\n'
            '         "Every night Mara climbed the two hundred steps.",\n'
            '         "The keeper had not talked to anybody for forty days."]\n'
            f'r = divmeter.score(texts, "{spec.name}")\n'
            "print(r.value, r.reason, r.signature)\n")


def metric_page(spec: Any) -> str:
    """One metric's page: what it measures, direction and range, install, parameters,
    signature, corpus merge, citation, examples, and its evidence."""
    from divmeter.report.metric_text import example_command

    d = spec.to_dict()
    name = d["name"]
    extra = d.get("extra")
    lines = [f"# `{name}`", "", d.get("description", "") + ".", ""]
    lines += ["| | |", "|---|---|",
              f"| family | {FAMILY_TITLES.get(d['family'], d['family'])} |",
              f"| level | `{d['granularity']}`: {LEVELS.get(d['granularity'], '')} |",
              f"| direction | {_direction(d)} |",
              f"| range | {_cell(_range(d['bounds']))} |",
              "| install | " + (f"`pip install 'divmeter[{extra}]'`" if extra else "the core "
                                 "install (no extra)") + " |",
              f"| corpus merge | `{d.get('merge', 'none')}`: "
              f"{MERGES.get(d.get('merge', 'none'), '')} |",
              f"| input | {d.get('input', 'texts')} |", ""]
    params = d.get("parameters") or {}
    lines += ["## Parameters", ""]
    if params:
        lines += ["Set them inline (`-m " + name + ":k=v,...` on the command line, "
                  f'`divmeter.score(texts, "{name}:k=v")`) or as keywords in Python. Every '
                  "parameter that can change the number is in the signature.", "",
                  "| parameter | type | default | allowed | meaning |", "|---|---|---|---|---|"]
        for k, p in params.items():
            allowed = p.get("constraint", "")
            if p.get("cap") is not None:
                allowed += f" (at most {p['cap']})"
            lines.append(f"| `{k}` | {_cell(p.get('type', ''))} | "
                         f"{_code(json.dumps(p.get('default')))} | {_cell(allowed)} | "
                         f"{_cell(p.get('doc', ''))} |")
    else:
        lines.append("None.")
    definition = _definition(spec)
    if definition:
        lines += ["", "## Definition", "", definition]
    lines += ["", "## Signature", ""]
    sig = default_signature(name)
    if sig:
        lines += ["At the defaults (library versions are those of the machine that built this "
                  "page):", "", "```text", sig, "```", ""]
    elif name in _SIGNATURE_NEEDS:
        lines += [f"Needs {_SIGNATURE_NEEDS[name]}; every result carries its signature.", ""]
    else:
        lines += [f"Every result carries it (`divmeter score --signatures`); it needs the "
                  f"`{extra}` extra to be shown here.", ""]
    lines += ["## Citation", "", d.get("citation", ""), "", "## Example", "",
              "<!-- docs-test: generated (tests/test_docs_site.py runs these per metric) -->",
              "```bash", example_command(spec), "```", "",
              "```python", _python_example(spec).rstrip(), "```", "",
              f"`divmeter list {name}` prints the same facts in the terminal.", "",
              "## Evidence", ""]
    found = evidence_markdown(name, d)
    lines += [found or "No benchmark evidence is recorded for this metric yet (see "
              "[what divmeter reproduces](../../results.md) for the published numbers it "
              "matches).", ""]
    return "\n".join(lines)


def catalogue_page(specs: list[Any]) -> str:
    """The catalogue's index: every metric by family and level, linked to its page."""
    from divmeter.apps.cli.listing import markdown_table

    table = markdown_table(specs)
    linked = re.sub(r"^\| `([^`]+)` \|", lambda m: f"| [`{m.group(1)}`]"
                    f"({metric_slug(m.group(1))}.md) |", table, flags=re.M)
    return "\n".join([
        "# Metric catalogue", "",
        f"{len(specs)} metrics, generated from the registry when this site was built (the same "
        "facts as `divmeter list`; `divmeter list NAME` in a terminal). Each name opens its "
        "page: parameters, signature, citation, corpus merge, an example and its evidence.", "",
        "*level*: `set` gives one value per set; `response` one per response, averaged over "
        "the set; `corpus` scores the set's texts joined. *needs*: the extra to install "
        "(`pip install 'divmeter[EXTRA]'`).", "",
        "Which one to use: [choosing a metric](../../guides/choose-a-metric.md).", "",
        linked])


def metric_pages() -> dict[str, str]:
    """Every generated page of the catalogue: ``{path inside the site: Markdown}``."""
    specs = _specs()
    out = {f"{METRICS_DIR}/index.md": catalogue_page(specs)}
    for s in specs:
        out[f"{METRICS_DIR}/{metric_slug(s.name)}.md"] = metric_page(s)
    return out


# --------------------------------------------------------------------------------------------
# command line


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        if not getattr(sub, "hidden", False):
            yield from _commands(sub, [*path, name])


def _kind(p: Any) -> str:
    if getattr(p, "metavar", None):
        return str(p.metavar)
    if getattr(p, "is_flag", False):
        return "FLAG"
    t = getattr(p, "type", None)
    if t is not None and getattr(t, "name", None):
        return str(t.name).upper()
    ann = getattr(getattr(p, "type_descriptor", None), "annotation", None)
    return getattr(ann, "__name__", "TEXT").upper()


def _default(p: Any) -> str:
    value = getattr(p, "default", None)
    if value is None or getattr(p, "is_flag", False) or value == () or value == []:
        return ""
    return _code(value)


def _paragraphs(text: str) -> str:
    """A command's help as Markdown paragraphs (its hard line breaks joined)."""
    import inspect

    text = inspect.cleandoc(text or "").partition("\f")[0]
    paras = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(html.escape(p, quote=False) for p in paras)


def cli_page() -> str:
    """The command-line reference: every command with its usage, help, arguments and
    options, from the typer app itself."""
    import typer

    from divmeter.apps.cli import EXIT_CODES, app

    root = typer.main.get_command(app)
    lines = ["# Command-line reference", "",
             "Generated from the commands themselves when this site was built: the same text as "
             "`divmeter COMMAND --help`.", "", EXIT_CODES, ""]
    for path, cmd in _commands(root, []):
        if not path:
            continue
        title = "divmeter " + " ".join(path)
        lines += ["#" * min(len(path) + 1, 4) + f" `{title}`", ""]
        args = [p for p in cmd.params if not getattr(p, "opts", [""])[0].startswith("-")]
        usage = " ".join([title, "[OPTIONS]"] + [
            _kind(p) if getattr(p, "required", False) or _kind(p).startswith("[")
            else f"[{_kind(p)}]" for p in args])
        if getattr(cmd, "commands", None):
            usage = f"{title} COMMAND [ARGS]..."
        lines += ["```text", usage, "```", "", _paragraphs(cmd.help or ""), ""]
        subs = getattr(cmd, "commands", None)
        if subs:
            lines += ["| command | what it does |", "|---|---|"]
            for name, sub in subs.items():
                short = _paragraphs(sub.help or "").split("\n\n")[0]
                lines.append(f"| [`{name}`](#{_anchor(title + ' ' + name)}) | {_cell(short)} |")
            lines.append("")
            continue
        rows = []
        for p in cmd.params:
            opts = list(getattr(p, "opts", [])) + list(getattr(p, "secondary_opts", []))
            if not opts or not opts[0].startswith("-"):
                opts = [_kind(p)]
            need = " (required)" if getattr(p, "required", False) else ""
            rows.append(f"| {', '.join(_code(o) for o in opts)} | {_code(_kind(p))} | "
                        f"{_default(p)} | {_cell((getattr(p, 'help', '') or '') + need)} |")
        if rows:
            lines += ["| argument / option | value | default | what it does |",
                      "|---|---|---|---|", *rows, ""]
    return "\n".join(lines)


def _anchor(title: str) -> str:
    """The anchor Python-Markdown's toc gives a heading such as ``divmeter meta contest``.

    Example:
        >>> _anchor("divmeter meta contest")
        'divmeter-meta-contest'
    """
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def pages() -> dict[str, str]:
    """Every generated page: ``{path inside the site: Markdown}``."""
    out = metric_pages()
    out[CLI_PAGE] = cli_page()
    return out


def main() -> None:
    """Write the pages into the site being built (the ``gen-files`` plugin)."""
    import mkdocs_gen_files

    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as fh:
            fh.write(text)


if __name__ in ("__main__", "<run_path>"):  # gen-files runs the script with runpy
    main()
