"""The words prose uses for one figure against another, shared by every page: a share as a fraction ("a third"), a
cut or a multiple ("halves", "nearly twice"), a bound rounded up, a place ("2nd"), a run of figures ("17.8, 14.5
then 12.2")."""

from __future__ import annotations

import math

# A share of another figure in words, nearest first: what prose says for "0.65 of it" ("a third less").
FRACTIONS = ((0.1, "a tenth"), (0.2, "a fifth"), (0.25, "a quarter"), (1 / 3, "a third"), (0.5, "half"),
             (2 / 3, "two thirds"))  # fmt: skip


def fraction_word(share: float) -> str:
    """A share in the words prose uses, the nearest of FRACTIONS: 0.35 -> "a third", 0.52 -> "half"."""
    return min(FRACTIONS, key=lambda known: abs(known[0] - share))[1]


def cut(before: float, after: float) -> str:
    """How much less `after` is than `before`, in words: 1.25 -> 0.81 is "a third", 0.95 -> 0.44 "half"."""
    return fraction_word(1 - after / before)


def halves_or(before: float, after: float, verb: str = "halves") -> str:
    """`verb` ("halves", "halved") where `after` is half of `before` (0.45 to 0.55 of it), else what it is cut by:
    "falls by a third"."""
    if 0.45 <= after / before <= 0.55:
        return verb
    past = verb.endswith("d")
    return f"{'fell' if past else 'falls'} by {cut(before, after)}"


def doubles_or(before: float, after: float, verb: str = "doubled") -> str:
    """`verb` ("doubled", "doubles") where `after` is 1.8 to 2.2 times `before`, else the multiplier: "x1.45"."""
    return verb if 1.8 <= after / before <= 2.2 else f"went x{after / before:.2f}"


def up_to(figure: float, step: float) -> float:
    """A figure rounded up to a multiple of `step`: the bound prose states ("within 1.2 times" for 1.17)."""
    return math.ceil(round(figure / step, 6)) * step


def rounded(figure: float, step: float) -> float:
    """A figure rounded to the nearest multiple of `step`: "about 770" for 769."""
    return round(figure / step) * step


def multiple(ratio: float) -> str:
    """A ratio near two in words, "nearly twice" or "twice"; else the multiplier, "1.5 times"."""
    if 1.8 <= ratio < 2:
        return "nearly twice"
    if 2 <= ratio <= 2.2:
        return "twice"
    return f"{ratio:.1f} times"


def said_steps(figures: list[float] | None, decimals: int = 1) -> str:
    """Figures in prose, the last after "then": "17.8, 14.5, 12.0 then 12.2"."""
    said = [f"{figure:.{decimals}f}" for figure in figures or []]
    return ", ".join(said[:-1]) + " then " + said[-1] if len(said) > 1 else "".join(said)


def ordinal(place: int) -> str:
    """2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 101st."""
    teen = place % 100 in (11, 12, 13)
    return f"{place}{'th' if teen else {1: 'st', 2: 'nd', 3: 'rd'}.get(place % 10, 'th')}"


def cut_share(before: float, after: float) -> float:
    """How much less `after` is than `before`, as a share of `before` (cut says it in words)."""
    return 1 - after / before
