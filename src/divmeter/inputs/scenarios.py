"""Synthetic response sets with known diversity structure (Decan paper, appendices B.2 and B.3).

Appendix B.2's five scenarios (pure noise, multi-mode incoherent, multi-mode coherent,
one-mode, mixed) and B.3's mode-count scaling, built from a pool of format-based "modes" about
rain (a haiku, a recipe, code, a forecast, a letter, ...). Each mode is a template with random
slot fillers, so two responses of one mode share their format but not their details. The pool
(:data:`MODES`, 12 formats) is divmeter's own, smaller than the paper's 50; B.3 draws m <= 12.

Every function is seeded and pure Python (no model): feed the sets to ``decan`` or any metric.

Example:
    >>> sets = decan_scenarios(n=4, seed=0)
    >>> sorted(sets)
    ['mixed', 'multi-mode coherent', 'multi-mode incoherent', 'one-mode', 'pure noise']
    >>> len(sets["one-mode"])
    4
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence

from divmeter.core.errors import InvalidInputError

__all__ = [
    "MODES",
    "SCENARIOS",
    "decan_scenario",
    "decan_scenarios",
    "mode_count_set",
    "mode_response",
    "noise",
    "scramble",
]

PROMPT = "Write a short piece about rain."
_CITIES = ["Lisbon", "Oslo", "Denver", "Nairobi", "Osaka", "Lima", "Perth", "Quebec"]
_NAMES = ["Anna", "Tom", "Maria", "Kenji", "Lucy", "Omar"]


Slot = Sequence[str] | tuple[int, int]


def _mode(template: str, *slots: Slot) -> Callable[[random.Random], str]:
    """A mode from a template: its ``{}`` fields filled in order, each from its slot (a list:
    ``r.choice`` of it; a ``(lo, hi)`` pair: ``r.randint(lo, hi)``)."""

    def draw(r: random.Random) -> str:
        return template.format(*(r.randint(*s) if isinstance(s, tuple) else r.choice(s)
                                 for s in slots))

    return draw


def _math(r: random.Random) -> str:
    a, b = r.randint(2, 9), r.randint(10, 60)
    return f"If rain falls at {a} mm per hour for {b} minutes, the total is {a * b / 60:.2f} mm."


#: The mode pool: name -> template with random slot fillers (appendix B.3's "format-based
#: generators"); the first five are B.2's multi-mode set.
MODES: dict[str, Callable[[random.Random], str]] = {
    "haiku": _mode("Soft rain on the roof / the {} night listens close / morning finds the {}",
                   ["dark", "cold", "long"], ["puddles", "garden", "river"]),
    "recipe": _mode("Mix two cups of flour with {} eggs, add a pinch of salt, and bake for {} "
                    "minutes while the rain taps the window.", (2, 4), (20, 40)),
    "code": _mode("def rainfall_total(days):\n    return sum(days) * {}", (2, 9)),
    "forecast": _mode("Forecast for {}: {} mm of rain expected, winds from the {} at {} km/h.",
                      _CITIES, (5, 30), ["north", "south", "west"], (10, 40)),
    "letter": _mode("Dear {}, the rain kept me inside all week, so I finally read your letter "
                    "{}.", _NAMES, ["twice", "three times", "aloud"]),
    "legal": _mode("DISCLAIMER: Section {}. The provider accepts no liability for damage caused "
                   "by rain, hail or {}.", (2, 19), ["flooding", "lightning", "wind"]),
    "headline": _mode("BREAKING: {} records wettest {} in {} years as rain continues",
                      _CITIES, ["May", "June", "autumn"], (20, 90)),
    "sql": _mode("SELECT city, SUM(mm) FROM rainfall WHERE year = {} GROUP BY city ORDER BY 2 "
                 "DESC LIMIT {};", (1990, 2024), (3, 10)),
    "shopping": _mode("Shopping list: umbrella, {} raincoat, {} pairs of wool socks, tea",
                      ["green", "yellow", "red"], (2, 6)),
    "dialogue": _mode("{}: Is it still raining?\n{}: Only {} now.",
                      _NAMES, _NAMES, ["a drizzle", "buckets", "a little"]),
    "limerick": _mode("There once was a cloud over {} / who rained on a man and his {} / he "
                      "said with a frown / as the drops tumbled down / that is quite enough "
                      "weather for that", _CITIES, ["cat", "hat", "boat"]),
    "math": _math,
}
#: Appendix B.2's scenario names.
SCENARIOS = ("pure noise", "multi-mode incoherent", "multi-mode coherent", "one-mode", "mixed")


def noise(rng: random.Random, length: int = 40) -> str:
    """Random ASCII characters (letters, digits, punctuation, space): no learnable structure.

    Example:
        >>> len(noise(random.Random(0), 12))
        12
    """
    chars = string.ascii_letters + string.digits + string.punctuation + " "
    return "".join(rng.choice(chars) for _ in range(length))


def scramble(rng: random.Random, text: str) -> str:
    """The text's whitespace-separated words in random order (an incoherent mode)."""
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def mode_response(mode: str, rng: random.Random) -> str:
    """One response of a mode of :data:`MODES` with freshly drawn slot fillers.

    Raises:
        InvalidInputError: Unknown mode.
    """
    if mode not in MODES:
        raise InvalidInputError(
            f"unknown mode {mode!r}; expected one of {', '.join(MODES)}."
        )
    return MODES[mode](rng)


def _check_int(name: str, value: object, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InvalidInputError(f"`{name}` must be an integer >= {lo}; got {value!r}.")
    return value


def decan_scenario(name: str, n: int = 10, *, seed: int = 42, n_modes: int = 5) -> list[str]:
    """One of appendix B.2's synthetic scenarios (the paper: n = 10 responses, seed 42).

    - ``pure noise``: :func:`noise` strings.
    - ``multi-mode incoherent``: the first ``n_modes`` modes in turn, each :func:`scramble` d.
    - ``multi-mode coherent``: the first ``n_modes`` modes in turn (response k from mode
      k mod n_modes).
    - ``one-mode``: every response from one mode (``forecast``), its details varying.
    - ``mixed``: the first ``n // 2`` responses coherent (modes in turn), the rest noise.

    Args:
        name: One of :data:`SCENARIOS`.
        n: Responses in the set.
        seed: Seed of ``random.Random(f"{name}|{seed}")``.
        n_modes: Modes of the multi-mode scenarios (the paper: 5).

    Returns:
        ``n`` texts.

    Raises:
        InvalidInputError: Unknown scenario, or ``n``/``n_modes`` out of range.

    Example:
        >>> [t.split(":")[0] for t in decan_scenario("one-mode", 2, seed=1)]
        ['Forecast for Denver', 'Forecast for Perth']
    """
    if name not in SCENARIOS:
        raise InvalidInputError(
            f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}."
        )
    _check_int("n", n, 1)
    _check_int("n_modes", n_modes, 1)
    if n_modes > len(MODES):
        raise InvalidInputError(f"`n_modes` must be <= {len(MODES)}; got {n_modes}.")
    rng = random.Random(f"{name}|{seed}")
    modes = list(MODES)[:n_modes]
    if name == "pure noise":
        return [noise(rng) for _ in range(n)]
    if name == "multi-mode incoherent":
        return [scramble(rng, mode_response(modes[k % n_modes], rng)) for k in range(n)]
    if name == "multi-mode coherent":
        return [mode_response(modes[k % n_modes], rng) for k in range(n)]
    if name == "one-mode":
        return [mode_response("forecast", rng) for _ in range(n)]
    return [mode_response(modes[k % n_modes], rng) if k < n // 2 else noise(rng)
            for k in range(n)]


def decan_scenarios(n: int = 10, *, seed: int = 42, n_modes: int = 5) -> dict[str, list[str]]:
    """All five appendix B.2 scenarios: ``{name: texts}`` (see :func:`decan_scenario`)."""
    return {name: decan_scenario(name, n, seed=seed, n_modes=n_modes) for name in SCENARIOS}


def mode_count_set(m: int, n: int = 20, *, seed: int = 0,
                   pool: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """Appendix B.3: ``n`` responses drawn from ``m`` distinct modes (mode-count scaling).

    The ``m`` modes are a random sample of ``pool`` (default every mode of :data:`MODES`); each
    appears at least once, the other ``n - m`` responses take a uniformly random one of them,
    and the order is shuffled. Diversity (Decan's a_n) should grow with ``m``.

    Args:
        m: Number of distinct modes, 1 <= m <= len(pool) and m <= n.
        n: Responses in the set (the paper: 20).
        seed: Seed of ``random.Random(f"modes|{m}|{n}|{seed}")`` (one draw per seed).
        pool: Mode names to draw from.

    Returns:
        ``(texts, modes)``: the responses and the mode of each.

    Raises:
        InvalidInputError: ``m``/``n`` out of range or an unknown mode in ``pool``.

    Example:
        >>> texts, modes = mode_count_set(3, 6, seed=1)
        >>> len(texts), len(set(modes))
        (6, 3)
    """
    names = list(pool) if pool is not None else list(MODES)
    for name in names:
        if name not in MODES:
            raise InvalidInputError(
                f"unknown mode {name!r} in `pool`; expected names from {', '.join(MODES)}."
            )
    _check_int("n", n, 1)
    _check_int("m", m, 1)
    if m > min(n, len(names)):
        raise InvalidInputError(
            f"`m` must be <= n ({n}) and <= the pool size ({len(names)}); got {m}."
        )
    rng = random.Random(f"modes|{m}|{n}|{seed}")
    chosen = rng.sample(names, m)
    assigned = chosen + [rng.choice(chosen) for _ in range(n - m)]
    rng.shuffle(assigned)
    return [mode_response(a, rng) for a in assigned], assigned
