"""Numbers rounded for publication, which remember how they were rounded.

A table rounds its figures once, where it is computed (a mean to one decimal, a p-value to six),
and every format prints that figure: the CSV and XLSX keep the number, Word, LaTeX and Markdown
print it with the same decimals ("1.3", never "1.30" in one file and "1.3" in another).
Rounding is half up, as a reader rounds by hand (Python's round() sends 1.25 to 1.2).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


class Rounded(float):
    """A float rounded to `decimals` places; `text` is how every table writer prints it."""

    __slots__ = ("decimals",)

    def __new__(cls, value: float, decimals: int) -> Rounded:
        number = super().__new__(cls, value)
        number.decimals = decimals
        return number

    def __getnewargs__(self) -> tuple[float, int]:  # pickled in cached tables
        return float(self), self.decimals

    @property
    def text(self) -> str:
        return f"{float(self):.{self.decimals}f}"


class PValue(Rounded):
    """A p-value: kept to six places for the data, printed as journals do ("< 0.001", else three places)."""

    __slots__ = ()

    def __new__(cls, value: float, decimals: int = 6) -> PValue:
        return super().__new__(cls, _half_up(value, decimals), decimals)

    @property
    def text(self) -> str:
        return "< 0.001" if self < 0.001 else f"{float(self):.3f}"


def rounded(value: float | None, decimals: int) -> Rounded | None:
    """`value` rounded half up to `decimals` places (None stays None; infinities and NaN stay as they are)."""
    if value is None:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return Rounded(value, decimals)
    return Rounded(_half_up(value, decimals), decimals)


def _half_up(value: float, decimals: int) -> float:
    # repr gives the shortest decimal that reads back as the float: 1.25 is "1.25", so it rounds to 1.3.
    # Adding 0.0 turns the -0.0 of a small negative into 0.0, which prints without a sign.
    return float(Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)) + 0.0


def number_text(value: float) -> str:
    """A float as table writers print it: as rounded when it is a Rounded, else to two places."""
    return value.text if isinstance(value, Rounded) else f"{value:.2f}"
