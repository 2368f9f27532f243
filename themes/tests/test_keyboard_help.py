"""The presenter's keyboard help comes from its one list of keys (themes/shortcuts.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from coding.tests.test_keyboard_help import assert_help_lists
from themes import services
from themes.shortcuts import PRESENTER

pytestmark = pytest.mark.django_db


def test_the_presenter_lists_its_keys(client_for, owner, project):
    theme = services.theme_create(project=project, actor=owner, name="Honesty about limits")
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", themes=[theme])
    r = client_for(owner).get(reverse("themes:present", args=[project.uuid, review.uuid, 0]))
    assert r.status_code == 200
    assert_help_lists(r.content.decode(), PRESENTER)
