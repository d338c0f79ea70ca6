"""Start llama-cpp-python's OpenAI-compatible server so divmeter can rely on it on any CPU.

Two changes to llama-cpp-python's server (0.3.36), each with a switch to undo it:

* **Extra weight buffers off** (``--use_extra_bufts false``, the default here). llama.cpp repacks
  weights into "extra" buffer types for faster CPU kernels; on CPUs with AMX the AMX buffer type
  crashes the server (segmentation fault, exit 139) on its first decode
  (``ggml_backend_amx_mul_mat``, upstream llama.cpp issue #20824; reproduced with
  llama-cpp-python 0.3.36 on a Xeon with ``amx_int8``). llama.cpp's own ``llama-server`` turns
  them off with ``--no-repack``; llama-cpp-python's server has no such setting, so this launcher
  sets ``use_extra_bufts = false`` in llama.cpp's model parameters. ``--use_extra_bufts true``
  restores llama.cpp's default (faster on CPUs without AMX where a repacked layout exists).
* **No reuse of the previous request's prompt** (``--reuse_prompt false``, the default here).
  llama-cpp-python keeps the KV cache of the last request and evaluates only the part of a new
  prompt that differs; the prompt's logits then depend on what was asked before (another
  evaluation split gives other float rounding), and so does a seeded sample (measured: the first
  sample of a prompt changed with the request order). Here every request evaluates its whole
  prompt, so a seed gives the same text whatever came before. ``--reuse_prompt true`` restores
  the reuse (faster for long shared prompts).

Every other argument goes to ``python -m llama_cpp.server`` unchanged::

    python -m divmeter.backends.llamacpp_server --model MODEL.gguf --n_ctx 2048 \\
        --logits_all true --port 8000

Needs ``pip install 'llama-cpp-python[server]'`` (divmeter's ``servertest`` extra).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "split_args"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def split_args(argv: Sequence[str]) -> tuple[dict[str, bool], list[str]]:
    """``({"use_extra_bufts": ..., "reuse_prompt": ...}, the other arguments)`` from a command
    line (both false unless given).

    Example:
        >>> split_args(["--model", "m.gguf", "--use_extra_bufts", "true"])
        ({'use_extra_bufts': True, 'reuse_prompt': False}, ['--model', 'm.gguf'])
        >>> split_args(["--model=m.gguf", "--reuse_prompt=yes"])[0]["reuse_prompt"]
        True
    """
    flags = {"use_extra_bufts": False, "reuse_prompt": False}
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        name = a[2:].split("=", 1)[0] if a.startswith("--") else ""
        if name in flags:
            if "=" in a:
                value = a.split("=", 1)[1]
            elif i + 1 < len(args):
                value = args[i + 1]
                i += 1
            else:
                value = ""
            if value.lower() not in _TRUE | _FALSE:
                raise SystemExit(f"--{name} must be true or false; got {value!r}.")
            flags[name] = value.lower() in _TRUE
        else:
            rest.append(a)
        i += 1
    return flags, rest


def main(argv: Sequence[str] | None = None) -> None:
    """Run llama-cpp-python's server with the two settings above."""
    flags, rest = split_args(sys.argv[1:] if argv is None else argv)
    try:
        import llama_cpp
        import llama_cpp.llama_cpp as lib
        from llama_cpp.server.__main__ import main as serve
    except ImportError:
        raise SystemExit("llama.cpp's server needs: pip install 'llama-cpp-python[server]'") \
            from None
    defaults = lib.llama_model_default_params

    def model_params() -> object:
        params = defaults()
        params.use_extra_bufts = flags["use_extra_bufts"]
        return params

    lib.llama_model_default_params = model_params  # read by llama_cpp.Llama when it loads
    if not flags["reuse_prompt"]:
        generate = llama_cpp.Llama.generate

        def whole_prompt(self: Any, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("reset", True):
                self.reset()  # forget the last request's tokens: no prefix is reused
            return generate(self, tokens, *args, **kwargs)

        llama_cpp.Llama.generate = whole_prompt  # type: ignore[method-assign]
    sys.argv = [sys.argv[0], *rest]
    serve()


if __name__ == "__main__":
    main()
