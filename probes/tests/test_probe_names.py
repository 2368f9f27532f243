"""One live probe per name, whatever its case or spelling; a double click on "Create probe" makes one probe."""

from __future__ import annotations

import unicodedata

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from probes import services
from probes.models import Probe
from projects.tests.race import second_while_first_uncommitted

TAKEN = "There is already a probe named “GPT-4o pilot” in this project."


def _create(client, project, name: str):
    return client.post(reverse("probes:list", args=[project.uuid]), {"name": name, "description": ""})


@pytest.mark.django_db
@pytest.mark.parametrize("variant", ["gpt-4o PILOT", "GPT-4o\u00a0pilot", "GPT-4o  pi\u200blot"])
def test_a_name_that_looks_like_a_probes_is_refused_naming_it(project, owner, analyst, client_for, variant):
    services.probe_create(project=project, user=owner, name="GPT-4o pilot")
    response = _create(client_for(analyst), project, variant)
    assert response.status_code == 400 and response.context["form"].errors["name"] == [TAKEN]
    assert Probe.objects.for_project(project).count() == 1


@pytest.mark.django_db
def test_a_probe_name_is_stored_as_it_looks(project, owner):
    assert services.probe_create(project=project, user=owner, name=unicodedata.normalize("NFD", "Café\u00a0run")).name == "Café run"


@pytest.mark.django_db
def test_the_database_refuses_a_live_probe_whose_name_differs_only_in_case(project, owner):
    services.probe_create(project=project, user=owner, name="Pilot")
    with pytest.raises(IntegrityError), transaction.atomic():
        Probe.objects.create(project=project, name="PILOT")


@pytest.mark.django_db(transaction=True)
def test_a_double_click_on_create_makes_one_probe_and_tells_the_second_why(project, owner, client_for):
    response = second_while_first_uncommitted(
        lambda: services.probe_create(project=project, user=owner, name="GPT-4o pilot"),
        lambda: _create(client_for(owner), project, "GPT-4o pilot"),
    )
    assert response.status_code == 400 and response.context["form"].errors["name"] == [TAKEN]
    assert list(Probe.objects.for_project(project).values_list("name", flat=True)) == ["GPT-4o pilot"]
