"""Addresses that only receive forms, opened as a page: a page that says so, not a blank 405."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_create_address_opened_after_signing_in_again_says_what_to_do(client, owner):
    # A form sent after the session ended goes to the login page with ?next= its address; signing in
    # then opens that address with GET.
    response = client.post(reverse("projects:create"), {"name": "Study"})
    assert response.status_code == 302 and "next=/p/new/" in response.url
    client.force_login(owner)
    response = client.get(reverse("projects:create"))
    body = response.content.decode()
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert "only receives a form" in body and 'href="/"' in body


def test_inside_a_project_it_links_back_to_the_project(client_for, project, owner):
    response = client_for(owner).get(reverse("projects:member_add", args=[project.uuid]))
    assert response.status_code == 405
    assert reverse("project_home", args=[project.uuid]) in response.content.decode()


def test_htmx_and_other_methods_keep_the_plain_405(client_for, project, owner):
    c = client_for(owner)
    assert c.get(reverse("projects:create"), headers={"HX-Request": "true"}).content == b""
    assert c.put(reverse("projects:create")).content == b""
