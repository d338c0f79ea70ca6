"""Lazy import of optional (heavy) dependencies with an actionable error message."""

from __future__ import annotations

import importlib
from types import ModuleType

from divmeter.core.errors import MissingDependencyError


def require(module: str, *, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise an error that tells which extra to install.

    Args:
        module: Importable module name, e.g. ``"torch"``.
        extra: The divmeter extra that provides it, e.g. ``"embed"``.
        package: PyPI name when it differs from the module name.

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: If the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pkg = package or module
        raise MissingDependencyError(
            f"This feature needs the optional package '{pkg}', which is not installed. "
            f"Install it with: pip install 'divmeter[{extra}]'"
        ) from exc
