"""Shared test fixtures.

Tests that read the shared data fixtures (``../shared/data`` beside the repository, or the folder
named by ``DIVMETER_SHARED``) skip cleanly when it is absent, so a user's clone still passes.
"""

from __future__ import annotations

import os
from pathlib import Path

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
