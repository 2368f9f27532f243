"""One participant per label, whatever its case or spelling: "GPT-4o" and "gpt-4o" are one model, by hand, through
the API, as a live endpoint and in an import; labels given before the rule get numbered, not lost."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from rest_framework.test import APIClient

from interviews.models import Interview, Participant
from interviews.services import participant_create
from interviews.services_import import ImportOptions, import_paths
from interviews.tests.factories import make_participant
from projects.tests.race import second_while_first_uncommitted

TAKEN = "Another participant in this project is already called “GPT-4o”; participant labels must be unique."
LOOK_ALIKES = ["gpt-4o", "GPT-4O", "GPT-4o\u00a0", " GPT-4o\u200b", "GPT-\u200b4o"]


@pytest.mark.django_db
@pytest.mark.parametrize("variant", LOOK_ALIKES)
def test_a_label_that_looks_like_a_participants_is_refused_naming_it(project, analyst, variant):
    make_participant(project, label="GPT-4o")
    with pytest.raises(ValidationError) as refused:
        participant_create(project=project, actor=analyst, label=variant)
    assert refused.value.message_dict["label"] == [TAKEN]


@pytest.mark.django_db
def test_spaces_of_any_kind_make_one_label(project, analyst):
    make_participant(project, label="Claude 3.5")
    for variant in ("Claude  3.5", "Claude\u00a03.5"):
        with pytest.raises(ValidationError, match="already called “Claude 3.5”"):
            participant_create(project=project, actor=analyst, label=variant)
    assert participant_create(project=project, actor=analyst, label="Mistral\u00a0 7B").label == "Mistral 7B"


@pytest.mark.django_db
def test_the_api_refuses_a_label_in_another_case(project, analyst):
    make_participant(project, label="GPT-4o")
    client = APIClient()
    client.force_authenticate(analyst)
    response = client.post(f"/api/projects/{project.uuid}/participants/", {"label": "gpt-4o"}, format="json")
    assert response.status_code == 400 and response.json()["label"] == [TAKEN]


@pytest.mark.django_db
def test_a_live_endpoint_may_not_take_a_label_in_another_case(project, analyst, client_for):
    make_participant(project, label="GPT-4o")
    response = client_for(analyst).post(reverse("conduct:participant_create", args=[project.uuid]), {
        "label": "gpt-4O", "model_id": "gpt-4o", "timeout_seconds": "60", "max_in_flight": "4", "key": "none"})
    assert response.status_code == 400 and response.context["form"].errors["label"] == [TAKEN]
    assert Participant.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_the_database_refuses_a_label_differing_only_in_case(project):
    make_participant(project, label="GPT-4o")
    with pytest.raises(IntegrityError), transaction.atomic():
        Participant.objects.create(project=project, label="GPT-4O")


@pytest.mark.django_db
@pytest.mark.parametrize("choice", ["auto", "new:claude  3.5\u00a0sonnet"])
def test_an_import_uses_the_participant_whose_label_it_names_in_another_spelling(project, owner, tmp_path, choice):
    claude = make_participant(project, label="Claude 3.5 Sonnet")
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"model": "CLAUDE\u00a03.5 Sonnet",
                                "messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}]}))
    summary = import_paths(project=project, user=owner, paths=[str(path)], options=ImportOptions(participant=choice))
    assert summary.participants_created == []
    assert Interview.objects.get().participant == claude and Participant.objects.filter(project=project).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_labels_in_two_cases_added_at_once_make_one_participant(project, owner, analyst):
    second = second_while_first_uncommitted(
        lambda: participant_create(project=project, actor=owner, label="GPT-4o"),
        lambda: participant_create(project=project, actor=analyst, label="gpt-4o"),
    )
    assert isinstance(second, ValidationError) and second.message_dict["label"] == [TAKEN]
    assert list(Participant.objects.filter(project=project).values_list("label", flat=True)) == ["GPT-4o"]


@pytest.mark.django_db
def test_the_migration_normalises_labels_and_numbers_those_then_taken(project):
    migration = importlib.import_module("interviews.migrations.0010_participant_labels_one_whatever_their_case")
    constraint = next(c for c in Participant._meta.constraints if c.name == "unique_participant_label")
    with connection.schema_editor() as editor:  # as before the migration (rolled back with the test)
        editor.remove_constraint(Participant, constraint)
    labels = ["GPT-4o", "gpt-4o", "GPT-4O", "GPT-4o\u00a0", "GPT\u00a0 4o"]
    rows = [Participant.objects.create(project=project, label=label) for label in labels]
    with connection.schema_editor() as editor:
        migration.normalise_labels(apps, editor)
        editor.add_constraint(Participant, constraint)
    assert [Participant.objects.get(pk=p.pk).label for p in rows] == ["GPT-4o", "gpt-4o (2)", "GPT-4O (3)", "GPT-4o (4)",
                                                                      "GPT 4o"]
