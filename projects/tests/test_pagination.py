"""The one pagination helper: bounded pages, bad page numbers read as the first, links keep every filter."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import RequestFactory

from projects.pagination import paginate

ROWS = list(range(1, 124))  # 123 rows: pages of 50, 50 and 23


def _request(query: str = ""):
    return RequestFactory().get("/p/x/interviews/" + query)


@pytest.mark.parametrize(("query", "number", "first", "has_next"), [
    ("", 1, 1, True), ("?page=2", 2, 51, True), ("?page=3", 3, 101, False),
    ("?page=99", 3, 101, False),  # past the end: the last page
    ("?page=0", 1, 1, True), ("?page=-1", 1, 1, True), ("?page=abc", 1, 1, True), ("?page=" + "9" * 40, 1, 1, True),
])
def test_a_counted_page_is_bounded_and_knows_its_place(query, number, first, has_next):
    page = paginate(_request(query), ROWS)
    assert (page.number, page.items[0], page.has_next, page.total, page.num_pages) == (number, first, has_next, 123, 3)
    assert len(page) == (23 if number == 3 else 50)
    assert page.start_index == first and page.end_index == first + len(page) - 1


def test_an_uncounted_page_reads_one_row_more_to_know_if_another_follows():
    class Rows(list):
        def count(self):
            raise AssertionError("an uncounted page must not count")

    rows = Rows(ROWS)
    assert paginate(_request("?page=2"), rows, counted=False).has_next
    last = paginate(_request("?page=3"), rows, counted=False)
    assert not last.has_next and last.total is None and last.items[-1] == 123
    assert not paginate(_request("?page=9"), rows, counted=False)


def test_a_short_first_page_is_not_counted():
    class Rows(list):
        def count(self):
            raise AssertionError("a short page is the last one: nothing to count")

    page = paginate(_request(), Rows(range(7)))
    assert page.total == 7 and not page.has_other_pages


def test_page_links_keep_the_filters_and_swap_the_fragment_under_htmx():
    request = _request("?depth=brief&participant=a%20b&page=2")
    page = paginate(request, ROWS, target="#interview-table")
    html = Template('{% include "includes/pagination.html" with label="Interview pages" %}').render(
        Context({"request": request, "page": page}))
    assert 'aria-label="Interview pages"' in html and "51–100 of 123 · page 2 of 3" in html
    assert 'href="/p/x/interviews/?depth=brief&amp;participant=a+b"' in html  # page 1 drops the parameter
    assert 'href="/p/x/interviews/?depth=brief&amp;participant=a+b&amp;page=3"' in html
    assert 'hx-target="#interview-table"' in html and 'hx-push-url="true"' in html


def test_a_second_list_on_the_page_has_its_own_parameter():
    request = _request("?page=2&interviews=3")
    codes, interviews = paginate(request, ROWS), paginate(request, ROWS, param="interviews")
    assert (codes.number, interviews.number) == (2, 3)
    html = Template('{% include "includes/pagination.html" %}').render(Context({"request": request, "page": interviews}))
    assert 'href="/p/x/interviews/?page=2&amp;interviews=2"' in html and "hx-get" not in html
