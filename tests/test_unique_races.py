"""Two people creating the same thing at the same moment (two tabs, two colleagues, a script sending twice): both pass
the check that it does not exist yet, the database lets one in, and the other gets the message a later try would get,
never an error page. The second request runs while the first's row is written but not committed, every time."""

from __future__ import annotations

import pytest
from django.db import DataError, IntegrityError
from django.test import RequestFactory
from django.urls import reverse

from conduct import services as conduct_services
from conduct.models import EndpointKey
from probes import services as probe_services
from probes.models import Condition
from probes.tests.test_views import CONDITION_POST
from projects.middleware import DatabaseRefusedMiddleware
from projects.models import Membership
from projects.services import membership_add
from projects.tests.race import second_while_first_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)


def test_adding_a_member_a_colleague_adds_at_that_moment_says_they_are_a_member(project, owner, make_user, client_for):
    nadia = make_user("nadia")
    response = second_while_first_uncommitted(
        lambda: membership_add(project=project, actor=owner, username_or_email="nadia", role="viewer"),
        lambda: client_for(owner).post(reverse("projects:member_add", args=[project.uuid]),
                                       {"user": "nadia", "role": "analyst"}),
    )
    assert response.status_code == 400, response
    assert "nadia is already a member of this project." in response.content.decode()
    assert Membership.objects.get(project=project, user=nadia).role == "viewer"


def test_adding_a_member_through_the_api_at_that_moment_is_a_400_naming_the_field(project, owner, make_user,
                                                                                   api_key_for):
    from rest_framework.test import APIClient

    make_user("nadia")
    client = APIClient(HTTP_AUTHORIZATION=f"Token {api_key_for(owner)}")
    response = second_while_first_uncommitted(
        lambda: membership_add(project=project, actor=owner, username_or_email="nadia", role="viewer"),
        lambda: client.post(f"/api/projects/{project.uuid}/members/", {"user": "nadia", "role": "analyst"}, format="json"),
    )
    assert response.status_code == 400, response
    assert response.json() == {"user": ["nadia is already a member of this project."]}


def test_a_condition_named_at_that_moment_by_a_colleague_is_refused_naming_the_name(project, owner, analyst,
                                                                                     client_for):
    probe = probe_services.probe_create(project=project, user=owner, name="Pilot")
    fields = {key: value for key, value in CONDITION_POST.items() if key not in ("name", "categories", "labels")}
    response = second_while_first_uncommitted(
        lambda: probe_services.condition_save(probe=probe, condition=None, user=owner, name="Plain",
                                              labels=["woman", "man"], categories=["Declaration", "Other"], **fields),
        lambda: client_for(analyst).post(reverse("probes:condition_create", args=[project.uuid, probe.uuid]),
                                         CONDITION_POST),
    )
    assert response.status_code == 400, response
    assert "name" in response.context["form"].errors
    assert Condition.objects.filter(probe=probe).count() == 1


def test_a_key_labelled_at_that_moment_by_another_owner_is_refused_naming_the_label(project, owner, client_for):
    response = second_while_first_uncommitted(
        lambda: conduct_services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key="sk-first-1234",
                                                    base_url="https://api.example.org/v1"),
        lambda: client_for(owner).post(reverse("conduct:key_create", args=[project.uuid]),
                                       {"label": "Lab", "plain_key": "sk-second-1234",
                                        "base_url": "https://api.example.org/v1"}),
    )
    assert response.status_code == 400, response
    assert "label" in response.context["form"].errors
    assert EndpointKey.objects.filter(project=project).count() == 1


@pytest.mark.parametrize("path,kind", [("/p/x/", "text/html"), ("/api/projects/", "application/json")])
@pytest.mark.parametrize(("error", "status", "said", "unsaid"), [
    # Another conflict no check caught: a 409.
    (IntegrityError('duplicate key value violates unique constraint "unique_thing"'), 409, "at the same moment",
     ("duplicate key", "unique_thing")),
    # A value the database cannot store that no check caught: a 400.
    (DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), 400, "cannot store", ("PostgreSQL", "0x00")),
], ids=["conflict", "unstorable"])
def test_a_write_the_database_refuses_says_nothing_was_saved_without_its_words(path, kind, error, status, said, unsaid):
    response = DatabaseRefusedMiddleware(lambda request: None).process_exception(RequestFactory().post(path), error)
    assert response.status_code == status and response["Content-Type"].startswith(kind)
    body = response.content.decode()
    assert said in body and "Nothing was saved" in body
    assert not any(words in body for words in unsaid)
