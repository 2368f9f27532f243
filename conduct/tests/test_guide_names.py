"""One guide per name, whatever its case or spelling, also when the same form is sent twice at once."""

from __future__ import annotations

import unicodedata

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from conduct import services
from interviews.models import Guide
from projects.tests.race import second_while_first_uncommitted

TAKEN = "There is already a guide named “Zuhause Café” in this project; choose another name."


def _create(client, project, name: str):
    return client.post(reverse("conduct:guide_create", args=[project.uuid]), {"name": name, "opening_prompt": "Hi?"})


@pytest.mark.django_db
@pytest.mark.parametrize("variant", [unicodedata.normalize("NFD", "Zuhause Café"), "Zuhause Ca\u200bfé",
                                     "Zuhause\u00a0Café", "Zuhause  Café", "zuhause café"])
def test_a_name_that_looks_like_a_guides_is_refused_at_the_field(project, owner, analyst, client_for, variant):
    services.guide_create(project=project, user=owner, name="Zuhause Café", opening_prompt="Hi?")
    response = _create(client_for(analyst), project, variant)
    assert response.status_code == 400 and response.context["form"].errors["name"] == [TAKEN]
    assert Guide.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_the_database_refuses_a_guide_whose_name_differs_only_in_case(project, owner):
    services.guide_create(project=project, user=owner, name="Pilot", opening_prompt="Hi?")
    with pytest.raises(IntegrityError), transaction.atomic():
        Guide.objects.create(project=project, name="PILOT")


@pytest.mark.django_db(transaction=True)
def test_the_same_guide_sent_twice_at_once_is_saved_once_and_the_second_told_why(project, owner, client_for):
    response = second_while_first_uncommitted(
        lambda: services.guide_create(project=project, user=owner, name="Zuhause Café", opening_prompt="Hi?"),
        lambda: _create(client_for(owner), project, "Zuhause Café"),
    )
    assert response.status_code == 400 and response.context["form"].errors["name"] == [TAKEN]
    assert list(Guide.objects.filter(project=project).values_list("name", flat=True)) == ["Zuhause Café"]
