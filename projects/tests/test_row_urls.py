"""{% row_url %} gives the URL {% url %} gives, reversing once per page."""

from __future__ import annotations

import uuid

import pytest
from django.template import Context, Template
from django.urls import reverse

LOOP = Template("{% load row_urls %}{% for p, c in rows %}{% row_url 'coding:code_detail' p c %}\n{% endfor %}")


def test_row_url_is_the_url_reverse_gives_for_every_row():
    projects = [uuid.uuid4(), uuid.uuid4()]
    rows = [(p, uuid.uuid4()) for p in projects for _ in range(3)] + [(projects[0], str(uuid.uuid4()))]
    rendered = LOOP.render(Context({"rows": rows})).split()
    assert rendered == [reverse("coding:code_detail", args=[p, c]) for p, c in rows]


def test_row_url_refuses_a_row_that_is_not_a_uuid():
    with pytest.raises(ValueError, match="badly formed"):
        LOOP.render(Context({"rows": [(uuid.uuid4(), "not-a-uuid")]}))
