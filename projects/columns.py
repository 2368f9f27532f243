"""Whether a wide table shows its per-group columns (one per model, or per value of an attribute).

A table with many groups is wider than a laptop screen, so past a few columns the breakdown is
collapsed by default behind a toggle; `?breakdown=show` or `?breakdown=hide` chooses (links and
forms carry it, so the toggle works without JavaScript).
"""

from __future__ import annotations

from django.http import HttpRequest

# More columns than this are collapsed unless asked for: four groups still fit beside a code's name
# and definition at 1280 px.
COLLAPSE_ABOVE = 4
PARAM = "breakdown"


def breakdown_shown(request: HttpRequest, columns: int) -> bool:
    """Show the per-group columns: as asked in `?breakdown=`, else only when there are few of them."""
    choice = request.GET.get(PARAM, "")
    if choice in ("show", "hide"):
        return choice == "show"
    return columns <= COLLAPSE_ABOVE
