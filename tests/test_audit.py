"""The audit trail: every service that changes interviews, codes, codings, themes, memos and
memberships leaves an event; owners browse and filter them at /p/<uuid>/audit/."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from coding.services import code_create, code_update, coding_apply, coding_remove
from interviews.models import Segment
from interviews.services_import import import_paths
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent, Role
from projects.services import membership_add, membership_change_role, membership_remove
from themes.services import memo_create, memo_delete, memo_update, theme_create, theme_delete, theme_update

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"


def _events(project, **filters):
    return list(AuditEvent.objects.filter(project=project, **filters).values_list("action", "target_type", "actor__username"))


def test_importing_interviews_is_audited_per_interview(project, analyst):
    summary = import_paths(project=project, user=analyst, paths=[str(SAMPLES / "claude" / "claude-history-synthetic-conversations.json")])
    events = AuditEvent.objects.filter(project=project, target_type="interview", action="created")
    assert events.count() == len(summary.interviews) > 0
    assert {e.target_id for e in events} == {i["uuid"] for i in summary.interviews}
    assert all(e.actor == analyst for e in events)


def test_codes_and_codings_are_audited(project, analyst):
    interview = make_interview(project, make_participant(project), [("participant", "One idea. Another idea.")])
    code = code_create(project=project, actor=analyst, name="Ideas")
    code_update(code=code, actor=analyst, version=code.version, name="Many ideas", reason="clearer")
    segments = list(Segment.objects.filter(interview=interview).values_list("pk", flat=True))
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=analyst.pk, code_id=code.pk, segment_ids=segments)
    # Applying again changes nothing, so it records nothing.
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=analyst.pk, code_id=code.pk, segment_ids=segments)
    coding_remove(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=analyst.pk, code_id=code.pk, segment_ids=segments[:1])

    assert ("created", "code", "arjun") in _events(project)
    assert ("changed", "code", "arjun") in _events(project)
    codings = AuditEvent.objects.filter(project=project, target_type="coding").order_by("id")
    assert [(e.action, e.summary) for e in codings] == [
        ("created", "Code “Many ideas” applied to 2 segments"),
        ("deleted", "Code “Many ideas” removed from 1 segment"),
    ]
    assert codings[0].target_id == str(interview.uuid) and codings[0].actor == analyst
    assert sorted(codings[0].data["segments"]) == sorted(segments)


def test_a_viewer_applying_a_code_leaves_no_event(project, analyst, viewer):
    interview = make_interview(project, make_participant(project), [("participant", "One idea.")])
    code = code_create(project=project, actor=analyst, name="Ideas")
    segments = list(Segment.objects.filter(interview=interview).values_list("pk", flat=True))
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=viewer.pk, code_id=code.pk, segment_ids=segments)
    assert not AuditEvent.objects.filter(project=project, target_type="coding").exists()


def test_themes_and_memos_are_audited(project, owner, analyst):
    theme = theme_create(project=project, actor=owner, name="Masks")
    theme_update(theme=theme, actor=owner, base_version=theme.version, definition="What the model hides.")
    memo = memo_create(project=project, actor=analyst, title="Doubt", body="Am I projecting?", kind="reflexive", theme=theme)
    memo_update(memo=memo, actor=analyst, base_version=memo.version, title="Doubt", body="Yes, partly.", kind="reflexive")
    memo_delete(memo=memo, actor=analyst)
    theme_delete(theme=theme, actor=owner)
    events = _events(project)
    for expected in [("created", "theme", "olivia"), ("changed", "theme", "olivia"), ("deleted", "theme", "olivia"),
                     ("created", "memo", "arjun"), ("changed", "memo", "arjun"), ("deleted", "memo", "arjun")]:
        assert expected in events


def test_memberships_are_audited(project, owner, make_user):
    newcomer = make_user("nadia")
    membership = membership_add(project=project, actor=owner, username_or_email="nadia", role=Role.VIEWER)
    membership_change_role(membership=membership, actor=owner, role=Role.ANALYST)
    membership_remove(membership=membership, actor=owner)
    assert [a for a, t, _ in _events(project, target_type="membership")].count("created") == 1
    assert {("changed", "membership", "olivia"), ("deleted", "membership", "olivia")} <= set(_events(project))
    assert newcomer.username in AuditEvent.objects.filter(project=project, target_type="membership", action="deleted").get().summary


# --- the page ------------------------------------------------------------------------------

@pytest.fixture
def history(project, owner, analyst):
    code_create(project=project, actor=analyst, name="Hedging")
    theme_create(project=project, actor=owner, name="Self-presentation")
    old = AuditEvent.objects.create(project=project, actor=analyst, action="deleted", target_type="code", summary="Old code removed")
    AuditEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=40))


def _audit(client, project, **params):
    return client.get(reverse("projects:audit", args=[project.uuid]), params)


def test_owners_see_the_log_newest_first(project, owner, history, client_for):
    body = _audit(client_for(owner), project).content.decode()
    assert body.index("Self-presentation") < body.index("Hedging") < body.index("Old code removed")


def test_filters_by_actor_action_target_and_date(project, owner, history, client_for):
    client = client_for(owner)
    by_arjun = _audit(client, project, actor="arjun").content.decode()
    assert "Hedging" in by_arjun and "Self-presentation" not in by_arjun
    deleted = _audit(client, project, action="deleted").content.decode()
    assert "Old code removed" in deleted and "Hedging" not in deleted
    themes = _audit(client, project, target_type="theme").content.decode()
    assert "Self-presentation" in themes and "Hedging" not in themes
    recent = _audit(client, project, since=(timezone.now() - dt.timedelta(days=7)).date().isoformat()).content.decode()
    assert "Hedging" in recent and "Old code removed" not in recent
    old = _audit(client, project, until=(timezone.now() - dt.timedelta(days=30)).date().isoformat()).content.decode()
    assert "Old code removed" in old and "Hedging" not in old


def test_a_reversed_date_range_is_explained(project, owner, history, client_for):
    response = _audit(client_for(owner), project, since="2026-11-20", until="2026-11-01")
    assert response.status_code == 200
    assert "“To” is before “From”" in response.content.decode()


def test_the_filter_form_swaps_only_the_table_over_htmx(project, owner, history, client_for):
    response = client_for(owner).get(reverse("projects:audit", args=[project.uuid]), {"actor": "olivia"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="audit-table">')
    assert "<html" not in body and "Self-presentation" in body


def test_only_owners_see_the_log(project, analyst, viewer, outsider, client_for):
    assert _audit(client_for(analyst), project).status_code == 403
    assert _audit(client_for(viewer), project).status_code == 403
    assert _audit(client_for(outsider), project).status_code == 404


def test_queries_do_not_grow_with_events(project, owner, analyst, client_for, django_assert_max_num_queries):
    client = client_for(owner)
    code_create(project=project, actor=analyst, name="First")
    with django_assert_max_num_queries(20) as few:
        _audit(client, project)
    for i in range(30):
        code_create(project=project, actor=analyst, name=f"Code {i}")
    # session, user, membership, members for the filter, target types, count, page of events (actor joined)
    with django_assert_max_num_queries(len(few.captured_queries)):
        _audit(client, project)
