"""Model resolution before a run: a metric's ``model`` (alias, path, cached name) resolved
without loading it, so a model that does not exist fails before the first set."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["check_model"]


@functools.lru_cache(maxsize=64)
def check_model(family: str, model: Any) -> None:
    """Resolve a metric's ``model`` without loading it, so an alias, path or cached name that
    does not exist fails before the first set (not as a null on every set). Remembered per
    process (resolving an alias may hash its weights). A server model (``openai:NAME``) is left
    to its scorer, which asks the server (``base_url`` or ``$DIVMETER_BASE_URL``)."""
    from divmeter.backends.server import server_model_name

    if server_model_name(model) is not None:
        return
    if family == "lm":
        from divmeter.backends.lm import resolve_lm

        resolve_lm(model)
        return
    from divmeter.backends.embed import resolve_model, split_quant

    resolve_model(split_quant(model)[0])  # an int8 alias (minilm-int8) is its base model's
