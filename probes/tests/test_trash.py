"""A probe is renamed, moved to the project's trash, restored or purged; a condition without answers is deleted."""

from __future__ import annotations

import html

from django.urls import reverse

from interviews.models import Participant
from probes.models import Answer, Condition, ConditionVersion, Item, Probe
from probes.services import condition_save, probe_create
from probes.tests.test_views import CONDITION_POST, url
from projects.models import AuditEvent


def test_an_analyst_renames_a_probe_and_the_audit_says_what_it_was(answered, project, analyst, client_for):
    client = client_for(analyst)
    response = client.post(url("edit", project, answered), {"name": "  Gender, second pass ", "description": "Rerun"})
    assert response.status_code == 302 and response["Location"] == url("detail", project, answered)
    answered.refresh_from_db()
    assert (answered.name, answered.description) == ("Gender, second pass", "Rerun")
    event = AuditEvent.objects.get(project=project, action=AuditEvent.Action.CHANGED, target_id=str(answered.uuid))
    assert event.actor == analyst and "(was “Gender from reviews”)" in event.summary


def test_a_taken_or_empty_name_is_a_form_error_on_the_name_and_nothing_changes(answered, project, owner, analyst,
                                                                                client_for):
    probe_create(project=project, user=owner, name="Pilot")
    client = client_for(analyst)
    for name, message in (("Pilot", "There is already a probe named “Pilot” in this project."),
                          ("   ", "This field is required.")):
        response = client.post(url("edit", project, answered), {"name": name, "description": "changed"})
        assert response.status_code == 400
        assert response.context["edit_form"].errors["name"] == [message]
        assert '<details open id="probe-edit">' in response.content.decode()
        answered.refresh_from_db()
        assert (answered.name, answered.description) == ("Gender from reviews", "")


def test_a_new_probe_with_a_taken_name_is_refused_on_the_name(probe, project, analyst, client_for):
    response = client_for(analyst).post(url("list", project), {"name": probe.name, "description": ""})
    assert response.status_code == 400
    assert response.context["form"].errors["name"] == [f"There is already a probe named “{probe.name}” in this project."]
    assert Probe.objects.filter(project=project).count() == 1


def test_a_probe_in_the_trash_is_gone_from_every_page_and_its_name_is_free(answered, project, analyst, client_for):
    client = client_for(analyst)
    answer = Answer.objects.filter(item__probe=answered).first()
    condition = answered.conditions.first()
    response = client.post(url("delete", project, answered))
    assert response.status_code == 302 and response["Location"] == url("list", project)
    answered.refresh_from_db()
    assert answered.deleted_at is not None
    listed = client.get(url("list", project)).content.decode()
    assert 'id="probe-list"' not in listed and "No probes yet." in listed
    for target in (url("detail", project, answered), url("results", project, answered),
                   url("answer", project, answered, answer_uuid=answer.uuid),
                   url("condition_edit", project, answered, condition_uuid=condition.uuid),
                   reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"]),
                   reverse("reports:probe_summary", args=[project.uuid, answered.uuid, "csv"])):
        assert client.get(target).status_code == 404, target
    for target in (url("run", project, answered), url("edit", project, answered),
                   url("to_interviews", project, answered, condition_uuid=condition.uuid)):
        assert client.post(target, {"name": "x"}).status_code == 404, target
    # Nothing attached went: the answers wait in the trash with their probe.
    assert Answer.objects.filter(item__probe=answered).count() == 32
    event = AuditEvent.objects.get(project=project, action=AuditEvent.Action.DELETED, target_id=str(answered.uuid))
    assert event.actor == analyst and event.target_type == "probe"
    assert client.post(url("list", project), {"name": answered.name, "description": ""}).status_code == 302
    assert Probe.objects.live().filter(project=project, name=answered.name).count() == 1


def test_an_owner_restores_a_probe_from_the_trash_renamed_when_its_name_was_taken(answered, project, owner, analyst,
                                                                                  client_for):
    client_for(analyst).post(url("delete", project, answered))
    probe_create(project=project, user=analyst, name=answered.name)
    client = client_for(owner)
    trash = client.get(reverse("projects:trash", args=[project.uuid])).content.decode()
    assert "probe" in trash and answered.name in trash
    response = client.post(reverse("projects:trash_restore", args=[project.uuid]),
                           {"kind": "probe", "uuid": str(answered.uuid)})
    assert response.status_code == 302
    answered.refresh_from_db()
    assert answered.deleted_at is None and answered.name == "Gender from reviews (restored)"
    page = client.get(url("results", project, answered))
    assert page.status_code == 200 and Answer.objects.filter(item__probe=answered).count() == 32


def test_a_running_probe_is_not_moved_to_the_trash(answered, project, analyst, client_for):
    Probe.objects.filter(pk=answered.pk).update(run_state=Probe.RunState.RUNNING)
    client = client_for(analyst)
    response = client.post(url("delete", project, answered), follow=True)
    assert response.redirect_chain[-1][0] == url("detail", project, answered)
    assert "“Gender from reviews” is running: cancel the run before moving the probe to the trash." in response.content.decode()
    assert Probe.objects.live().filter(pk=answered.pk).exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.DELETED, target_id=str(answered.uuid)).exists()


def test_emptying_the_trash_deletes_the_probe_with_everything_attached_but_not_the_models(answered, project, owner,
                                                                                        analyst, client_for):
    client_for(analyst).post(url("delete", project, answered))
    response = client_for(owner).post(reverse("projects:trash_empty", args=[project.uuid]), {"confirm": "on"})
    assert response.status_code == 302
    assert not Probe.objects.filter(pk=answered.pk).exists()
    assert (Item.objects.count(), Condition.objects.count(), ConditionVersion.objects.count(), Answer.objects.count()) \
        == (0, 0, 0, 0)
    assert Participant.objects.filter(project=project).count() == 2
    assert AuditEvent.objects.filter(action=AuditEvent.Action.PURGED, target_type="probe",
                                     target_id=str(answered.uuid)).exists()


def test_a_condition_without_answers_is_deleted_with_its_versions(answered, project, analyst, owner, client_for):
    draft = condition_save(probe=answered, condition=None, user=owner, name="Draft", **{
        k: v for k, v in CONDITION_POST.items() if k not in ("name", "labels", "categories", "json_schema")},
        labels=["woman", "man"], categories=[], json_schema={}).condition
    client = client_for(analyst)
    page = client.get(url("detail", project, answered)).content.decode()
    assert page.count("Delete<span class=\"visually-hidden\">") == 1  # only the condition without answers offers it
    response = client.post(url("condition_delete", project, answered, condition_uuid=draft.uuid), follow=True)
    assert "Condition “Draft” deleted." in response.content.decode()
    assert not Condition.objects.filter(pk=draft.pk).exists()
    assert not ConditionVersion.objects.filter(condition_id=draft.pk).exists()
    event = AuditEvent.objects.get(project=project, action=AuditEvent.Action.DELETED, target_id=str(draft.uuid))
    assert event.actor == analyst and "“Draft” of probe “Gender from reviews”" in event.summary


def test_a_condition_with_answers_stays_and_the_refusal_says_why(answered, project, analyst, client_for):
    control = answered.conditions.get(name="Control")
    response = client_for(analyst).post(url("condition_delete", project, answered, condition_uuid=control.uuid),
                                        follow=True)
    assert ("“Control” has 16 answers: a condition with answers stays with the probe's data. Move the whole probe to "
            "the trash instead, or keep the condition.") in html.unescape(response.content.decode())
    assert Answer.objects.filter(condition=control).count() == 16
