"""One way to cut a list page into pages: `paginate()` in the view, `includes/pagination.html` in the template.

Every list a project can grow (interviews, codes' excerpts, search results, memos, audit events…)
shows a bounded page, so a page costs the same in a small and a huge project. A counted page says
"page 3 of 5,000"; an uncounted one (search, where counting every match is the slow part) reads one
row more than it shows to know whether a next page exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest

PAGE_SIZE = 50


@dataclass
class Page:
    """One page of rows; `total` is None when the list was not counted."""

    items: list[Any]
    number: int
    per_page: int
    has_next: bool
    total: int | None = None
    param: str = "page"
    # The element an htmx page link swaps (its own fragment); empty for plain links.
    target: str = field(default="")

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_other_pages(self) -> bool:
        return self.has_next or self.has_previous

    @property
    def num_pages(self) -> int | None:
        return None if self.total is None else max(1, -(-self.total // self.per_page))

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def end_index(self) -> int:
        return (self.number - 1) * self.per_page + len(self.items)


def page_number(request: HttpRequest, param: str = "page") -> int:
    """The requested page number; anything that is not a positive integer reads as the first page."""
    value = request.GET.get(param, "")
    # isdigit() also accepts non-ASCII digits and lengths int() refuses: check the form before converting.
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 9 and int(value) > 0 else 1


def paginate(request: HttpRequest, rows: Sequence | Any, *, per_page: int = PAGE_SIZE, param: str = "page",
             counted: bool = True, target: str = "") -> Page:
    """The requested page of `rows` (a QuerySet or a list); a page past the end shows the last one."""
    number = page_number(request, param)
    start = (number - 1) * per_page
    if not counted:
        items = list(rows[start:start + per_page + 1])
        return Page(items[:per_page], number, per_page, has_next=len(items) > per_page, param=param, target=target)
    items = list(rows[start:start + per_page])
    if 0 < len(items) < per_page or (number == 1 and not items):
        total = start + len(items)  # a short page is the last one: no count needed
    else:
        total = len(rows) if isinstance(rows, list) else rows.count()
        if not items and total:  # past the end: show the last page
            number = -(-total // per_page)
            start = (number - 1) * per_page
            items = list(rows[start:start + per_page])
    return Page(items, number, per_page, has_next=start + per_page < total, total=total, param=param, target=target)
