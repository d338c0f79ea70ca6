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

from divmeter.errors import InvalidInputError

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


def _haiku(r: random.Random) -> str:
    return (f"Soft rain on the roof / the {r.choice(['dark', 'cold', 'long'])} night listens "
            f"close / morning finds the {r.choice(['puddles', 'garden', 'river'])}")


def _recipe(r: random.Random) -> str:
    return (f"Mix two cups of flour with {r.randint(2, 4)} eggs, add a pinch of salt, and bake "
            f"for {r.randint(20, 40)} minutes while the rain taps the window.")


def _code(r: random.Random) -> str:
    return f"def rainfall_total(days):\n    return sum(days) * {r.randint(2, 9)}"


def _forecast(r: random.Random) -> str:
    return (f"Forecast for {r.choice(_CITIES)}: {r.randint(5, 30)} mm of rain expected, winds "
            f"from the {r.choice(['north', 'south', 'west'])} at {r.randint(10, 40)} km/h.")


def _letter(r: random.Random) -> str:
    return (f"Dear {r.choice(_NAMES)}, the rain kept me inside all week, so I finally read "
            f"your letter {r.choice(['twice', 'three times', 'aloud'])}.")


def _legal(r: random.Random) -> str:
    return (f"DISCLAIMER: Section {r.randint(2, 19)}. The provider accepts no liability for "
            f"damage caused by rain, hail or {r.choice(['flooding', 'lightning', 'wind'])}.")


def _headline(r: random.Random) -> str:
    return (f"BREAKING: {r.choice(_CITIES)} records wettest {r.choice(['May', 'June', 'autumn'])}"
            f" in {r.randint(20, 90)} years as rain continues")


def _sql(r: random.Random) -> str:
    return (f"SELECT city, SUM(mm) FROM rainfall WHERE year = {r.randint(1990, 2024)} "
            f"GROUP BY city ORDER BY 2 DESC LIMIT {r.randint(3, 10)};")


def _shopping(r: random.Random) -> str:
    return (f"Shopping list: umbrella, {r.choice(['green', 'yellow', 'red'])} raincoat, "
            f"{r.randint(2, 6)} pairs of wool socks, tea")


def _dialogue(r: random.Random) -> str:
    return (f"{r.choice(_NAMES)}: Is it still raining?\n{r.choice(_NAMES)}: Only "
            f"{r.choice(['a drizzle', 'buckets', 'a little'])} now.")


def _limerick(r: random.Random) -> str:
    return (f"There once was a cloud over {r.choice(_CITIES)} / who rained on a man and his "
            f"{r.choice(['cat', 'hat', 'boat'])} / he said with a frown / as the drops tumbled "
            "down / that is quite enough weather for that")


def _math(r: random.Random) -> str:
    a, b = r.randint(2, 9), r.randint(10, 60)
    return f"If rain falls at {a} mm per hour for {b} minutes, the total is {a * b / 60:.2f} mm."


#: The mode pool: name -> template with random slot fillers (appendix B.3's "format-based
#: generators"); the first five are B.2's multi-mode set.
MODES: dict[str, Callable[[random.Random], str]] = {
    "haiku": _haiku, "recipe": _recipe, "code": _code, "forecast": _forecast,
    "letter": _letter, "legal": _legal, "headline": _headline, "sql": _sql,
    "shopping": _shopping, "dialogue": _dialogue, "limerick": _limerick, "math": _math,
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
