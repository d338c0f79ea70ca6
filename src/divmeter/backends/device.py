"""Where torch models run: ``device`` and ``dtype`` of the model-backed metrics (issue 14).

``device`` is ``cpu`` (default), ``auto`` (the first CUDA device when torch sees one, else the
CPU, said once per process on the ``divmeter`` logger and as a warning), ``cuda``, ``cuda:N`` or
``mps``. A device that is not there is refused with one line. The device is not part of a
signature: the same model gives the same numbers on any device to float rounding (GPU kernels
differ from CPU ones by about 1e-5 relative; checked on the CPU only until the project has a
GPU). ``dtype`` (``float32``, ``float16``, ``bfloat16``) changes numbers and is recorded in the
signature when it is not ``float32``.

CUDA out-of-memory: :func:`halving_retry` runs a batched computation and, on an out-of-memory
error, retries with half the batch size down to 1, then stops with a clear message.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from divmeter.core._optional import require
from divmeter.core.errors import DivmeterError, InvalidInputError
from divmeter.core.params import Param

__all__ = ["DEVICE", "DTYPE", "DTYPES", "check_dtype", "resolve_device", "torch_dtype",
           "halving_retry",
           "is_oom", "valid_device"]

DTYPES = ("float32", "float16", "bfloat16")
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_LOG = logging.getLogger("divmeter")
_SAID: set[str] = set()
_SAID_LOCK = threading.Lock()
T = TypeVar("T")


def valid_device(value: Any) -> bool:
    """Whether ``value`` is written as a device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``.

    Example:
        >>> [valid_device(d) for d in ("auto", "cuda:1", "gpu", 0)]
        [True, True, False, False]
    """
    return isinstance(value, str) and _DEVICE_RE.match(value) is not None


def device_problem(device: Any, params: Any = None) -> str | None:
    """Why ``device`` cannot be used on this machine (a CUDA index it does not have, no Apple
    GPU), or ``None``: the declared parameter's check, so a run is refused before any set
    rather than each set nulled. ``cpu`` and ``auto`` need no look (nor torch).

    Example:
        >>> device_problem("cpu") is None
        True
    """
    if not isinstance(device, str) or device in ("cpu", "auto") or not valid_device(device):
        return None
    try:
        resolve_device(device)
    except InvalidInputError as exc:
        why = str(exc).removeprefix(f"device {device!r} is not available: ")
        return f"is {device!r}, which is not available here: {why}"
    except ImportError:  # no torch: the run says which extra to install
        return None
    return None


DEVICE = Param(str, default="cpu", predicate=valid_device,
               expect="one of auto, cpu, cuda, cuda:N, mps",
               message="`{name}` of {metric} must be one of auto, cpu, cuda, cuda:N, mps; "
               "got {got}.",
               doc="where the model runs (auto: CUDA when present); not in the signature",
               runtime=True, relation=device_problem)
DTYPE = Param(str, choices=DTYPES, default="float32",
              doc="model weights' dtype (in the signature unless float32)")


def _say_once(message: str) -> None:
    """Say ``message`` once per process: on the ``divmeter`` log (the command line prints it as
    ``divmeter: ...``) and, when nothing listens there (a library user), as a warning; not both,
    which printed it twice on the command line."""
    with _SAID_LOCK:
        if message in _SAID:
            return
        _SAID.add(message)
    _LOG.info(message.removeprefix("divmeter: "))
    if not logging.getLogger("divmeter").handlers:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def resolve_device(device: str) -> str:
    """A torch device string for ``device``, checked against what this machine has.

    Raises:
        InvalidInputError: A malformed device, or a CUDA / MPS device that is not available
            (``"device 'cuda' is not available: torch sees no CUDA device; use device='cpu' or
            'auto'."``).

    Example:
        >>> resolve_device("cpu")
        'cpu'
    """
    if not valid_device(device):
        raise InvalidInputError(
            f"`device` must be one of auto, cpu, cuda, cuda:N, mps; got {device!r}."
        )
    if device == "cpu":
        return "cpu"
    torch = require("torch", extra="embed")
    n_cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "auto":
        if n_cuda:
            return "cuda"
        _say_once("divmeter: device='auto' found no CUDA device; running on the CPU.")
        return "cpu"
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise InvalidInputError(
                "device 'mps' is not available: torch sees no Apple GPU; use device='cpu' or "
                "'auto'."
            )
        return "mps"
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= n_cuda:
        seen = "no CUDA device" if n_cuda == 0 else f"{n_cuda} CUDA device(s)"
        raise InvalidInputError(
            f"device {device!r} is not available: torch sees {seen}; use device='cpu' or "
            "'auto'."
        )
    return device


def check_dtype(dtype: str) -> str:
    """``dtype`` if it names one of :data:`DTYPES`, else the one-line error."""
    if dtype not in DTYPES:
        raise InvalidInputError(f"`dtype` must be one of {', '.join(DTYPES)}; got {dtype!r}.")
    return dtype


def torch_dtype(dtype: str) -> Any:
    """The torch dtype of a ``dtype`` name (checked)."""
    return getattr(require("torch", extra="embed"), check_dtype(dtype))


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is a CUDA (or MPS) out-of-memory error."""
    torch = require("torch", extra="embed")
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def halving_retry(run: Callable[[int], T], batch_size: int, *, what: str) -> T:
    """``run(batch_size)``; on out-of-memory, empty the CUDA cache and retry with half the batch
    size, down to 1; then raise :class:`~divmeter.core.errors.DivmeterError`.

    Example:
        >>> halving_retry(lambda b: b, 64, what="demo")
        64
    """
    size = max(1, int(batch_size))
    while True:
        try:
            return run(size)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are retried
            if not is_oom(exc):
                raise
            torch = require("torch", extra="embed")
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if size == 1:
                raise DivmeterError(
                    f"{what} ran out of device memory even with batch size 1; use a smaller "
                    "model, dtype='float16', or device='cpu'."
                ) from exc
            size = max(1, size // 2)
            _LOG.warning("%s: out of memory; retrying with batch size %d", what, size)
