"""Shared test fixtures.

Tests that read the shared data fixtures (``../shared/data`` beside the repository, or the folder
named by ``DIVMETER_SHARED``) skip cleanly when it is absent, so a user's clone still passes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# fixture-making scripts need the peer libraries (.venv-bench): never collect or import them
collect_ignore_glob = ["fixtures/*"]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
TEVET_DIR = SHARED / "data" / "tevet" / "with_metrics"
PAPERS_DIR = SHARED / "papers"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def tevet_dir() -> Path:
    """The Tevet & Berant CSV folder, or skip."""
    if not TEVET_DIR.is_dir():
        pytest.skip(f"shared Tevet data not found at {TEVET_DIR}")
    return TEVET_DIR


def tevet_files() -> list[Path]:
    """Every Tevet CSV (empty when the shared data is absent), for parametrisation."""
    return sorted(TEVET_DIR.glob("*/*.csv")) if TEVET_DIR.is_dir() else []


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``DIVMETER_CACHE`` set to a fresh folder for the module (embeddings and models cached
    by its tests stay out of the user's cache and out of other modules' tests); restored after.
    A module uses it with ``pytestmark = pytest.mark.usefixtures("private_cache")``."""
    cache = tmp_path_factory.mktemp("dmcache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIVMETER_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="module")
def emb_diversity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``value(measure, X, kwargs)``: the installed emb-diversity's measure on one set (skipped
    without the peer), its prints and warnings silenced; run in a temporary folder, since the
    peer writes its distance cache under ``./.cache``."""
    import contextlib
    import importlib.util
    import io
    import warnings
    from importlib import import_module

    if importlib.util.find_spec("emb_diversity") is None:
        pytest.skip("needs emb-diversity: pip install -e '.[bench]'")

    def value(measure: str, X: Any, kwargs: dict[str, Any]) -> float:
        fn = getattr(import_module(f"emb_diversity.measures.{measure}"), measure)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(fn(X, **kwargs)["value"])

    with contextlib.chdir(tmp_path_factory.mktemp("peer")):
        yield value


#: ``DIVMETER_CACHE`` as the session found it: the user's cache.
_USER_CACHE = os.environ.get("DIVMETER_CACHE")


@pytest.fixture()
def user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DIVMETER_CACHE`` back to the user's for one test of a module with a private one: the
    LMs converted from their GGUF files live there (converting one again takes a minute)."""
    if _USER_CACHE is None:
        monkeypatch.delenv("DIVMETER_CACHE", raising=False)
    else:
        monkeypatch.setenv("DIVMETER_CACHE", _USER_CACHE)


# ------------------------------------------------------------------------------------------------
# A real OpenAI-compatible server (llama-cpp-python) on loopback, shared by the client tests.


def _llama_fixture(alias: str, tmp_path_factory: pytest.TempPathFactory):
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (installed by .ci/run)")
    from llama_server import gguf_path, start_llama_server

    if gguf_path(alias) is None:
        pytest.skip(f"the packaged model {alias!r} is not installed")
    server = start_llama_server(alias, tmp_path_factory.mktemp("llama"))
    return server


@pytest.fixture(scope="session")
def llama_gemma(tmp_path_factory: pytest.TempPathFactory):
    """llama.cpp's server serving the packaged Gemma-3-270m base GGUF (completions, echo +
    logprobs); ``.url`` is its /v1 base, ``.model`` the name to ask for."""
    server = _llama_fixture("gemma-3-270m", tmp_path_factory)
    yield server
    server.close()


@pytest.fixture(scope="session")
def llama_smollm2(tmp_path_factory: pytest.TempPathFactory):
    """llama.cpp's server serving SmolLM2-135M-Instruct (chat completions)."""
    server = _llama_fixture("smollm2-135m-instruct", tmp_path_factory)
    yield server
    server.close()


# ------------------------------------------------------------------------------------------------
# A partial install (e.g. the core dependencies only, at their lowest versions: `.ci/run`'s
# second session) skips the tests whose optional package is missing, instead of failing them;
# DIVMETER_REQUIRE_EXTRAS=1 (the full CI session) keeps them failures.


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    outcome = yield
    if os.environ.get("DIVMETER_REQUIRE_EXTRAS", "") not in {"", "0"}:
        return
    excinfo = outcome.excinfo
    if excinfo is None:
        return
    from divmeter.core.errors import MissingDependencyError

    if isinstance(excinfo[1], MissingDependencyError):
        outcome.force_exception(pytest.skip.Exception(f"optional package missing: {excinfo[1]}",
                                                      _use_item_location=True))
