"""Start llama-cpp-python's OpenAI-compatible server with llama.cpp's extra weight buffers off.

llama.cpp repacks weights into "extra" buffer types for faster CPU kernels; on CPUs with AMX the
AMX buffer type crashes the server (segmentation fault, exit 139) on its first decode
(``ggml_backend_amx_mul_mat``, upstream llama.cpp issue #20824; reproduced with
llama-cpp-python 0.3.36 on a Xeon with ``amx_int8``). llama.cpp's own ``llama-server`` turns them
off with ``--no-repack``; llama-cpp-python's server (0.3.36) has no such setting, so this launcher
sets ``use_extra_bufts = false`` in llama.cpp's model parameters and then runs
``python -m llama_cpp.server`` with every other argument unchanged::

    python -m divmeter.backends.llamacpp_server --model MODEL.gguf --n_ctx 2048 \\
        --logits_all true --port 8000

``--use_extra_bufts true`` restores llama.cpp's default (faster on CPUs without AMX where a
repacked layout exists, e.g. Q4_0 on AVX2 or ARM). Needs ``pip install
'llama-cpp-python[server]'`` (divmeter's ``servertest`` extra).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main", "split_args"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def split_args(argv: Sequence[str]) -> tuple[bool, list[str]]:
    """``(use_extra_bufts, the other arguments)`` from a command line.

    Example:
        >>> split_args(["--model", "m.gguf", "--use_extra_bufts", "true"])
        (True, ['--model', 'm.gguf'])
        >>> split_args(["--model=m.gguf"])
        (False, ['--model=m.gguf'])
    """
    rest: list[str] = []
    use = False
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--use_extra_bufts" or a.startswith("--use_extra_bufts="):
            if "=" in a:
                value = a.split("=", 1)[1]
            elif i + 1 < len(args):
                value = args[i + 1]
                i += 1
            else:
                value = ""
            if value.lower() not in _TRUE | _FALSE:
                raise SystemExit(f"--use_extra_bufts must be true or false; got {value!r}.")
            use = value.lower() in _TRUE
        else:
            rest.append(a)
        i += 1
    return use, rest


def main(argv: Sequence[str] | None = None) -> None:
    """Run llama-cpp-python's server with ``use_extra_bufts`` set (default false)."""
    use, rest = split_args(sys.argv[1:] if argv is None else argv)
    try:
        import llama_cpp.llama_cpp as lib
        from llama_cpp.server.__main__ import main as serve
    except ImportError:
        raise SystemExit("llama.cpp's server needs: pip install 'llama-cpp-python[server]'") \
            from None
    defaults = lib.llama_model_default_params

    def model_params() -> object:
        params = defaults()
        params.use_extra_bufts = use
        return params

    lib.llama_model_default_params = model_params  # read by llama_cpp.Llama when it loads
    sys.argv = [sys.argv[0], *rest]
    serve()


if __name__ == "__main__":
    main()
