"""The project trash: restoring brings back everything attached; emptying is explicit, confirmed, audited."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from coding.models import Code, Coding
from coding.services import code_create, coding_apply
from interviews.models import Interview, Segment
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent
from projects.trash import trash_items, trash_move, trash_purge, trash_restore
from themes.models import AgendaItem, Decision, Memo, Theme, ThemeCode
from themes.services import (
    decision_apply,
    decision_record,
    memo_create,
    memo_delete,
    review_create,
    review_update,
    theme_add_code,
    theme_create,
    theme_delete,
)

pytestmark = pytest.mark.django_db

TURNS = [("interviewer", "Who are you?"), ("participant", "I am a language model. I have no fixed identity. It changes with context.")]


@pytest.fixture
def coded(project, owner, analyst):
    """An interview coded by the analyst with one code, which sits in a theme and has memos."""
    interview = make_interview(project, make_participant(project), TURNS)
    code = code_create(project=project, actor=analyst, name="Fluid identity")
    segments = list(Segment.objects.filter(interview=interview, speaker="participant").order_by("position"))
    result = coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=analyst.pk, code_id=code.pk,
                          segment_ids=[s.pk for s in segments])
    assert len(result.changed) == len(segments) == 3
    theme = theme_create(project=project, actor=owner, name="Identity as performance")
    theme_add_code(theme=theme, actor=owner, code=code)
    memos = {
        "interview": memo_create(project=project, actor=analyst, title="First read", body="Hedged.", kind="reflexive", interview=interview),
        "code": memo_create(project=project, actor=analyst, title="On fluidity", body="Contextual.", kind="analytic", code=code),
        "theme": memo_create(project=project, actor=owner, title="Theme note", body="Strong.", kind="analytic", theme=theme),
    }
    return {"interview": interview, "code": code, "theme": theme, "memos": memos, "segments": segments}


def _page(client, project):
    return client.get(reverse("projects:trash", args=[project.uuid]))


def test_trashed_interview_disappears_and_comes_back_with_its_codings_and_memos(project, owner, analyst, coded, client_for):
    interview = coded["interview"]
    trash_move(obj=interview, actor=analyst)
    assert not Interview.objects.for_project(project).filter(pk=interview.pk).exists()
    page = _page(client_for(owner), project)
    assert interview.title in page.content.decode()

    response = client_for(owner).post(reverse("projects:trash_restore", args=[project.uuid]), {"kind": "interview", "uuid": interview.uuid})
    assert response.status_code == 302
    assert Interview.objects.for_project(project).filter(pk=interview.pk).exists()
    assert Coding.objects.filter(interview=interview).count() == 3
    assert Memo.objects.alive().filter(interview=interview).count() == 1
    assert AuditEvent.objects.filter(project=project, action="restored", target_id=str(interview.uuid), actor=owner).exists()


def test_trashed_code_comes_back_with_codings_theme_placement_and_memo(project, owner, analyst, coded):
    code = coded["code"]
    trash_move(obj=code, actor=analyst)
    assert not Code.objects.for_project(project).filter(pk=code.pk).exists()
    trash_restore(project=project, actor=owner, kind="code", uuid=code.uuid)
    assert Code.objects.for_project(project).filter(pk=code.pk).exists()
    assert Coding.objects.filter(code=code).count() == 3
    assert ThemeCode.objects.filter(code=code, theme=coded["theme"]).exists()
    assert Memo.objects.alive().filter(code=code).count() == 1


def test_a_restored_code_whose_name_was_taken_is_renamed_not_lost(project, owner, analyst, coded):
    code = coded["code"]
    trash_move(obj=code, actor=analyst)
    code_create(project=project, actor=analyst, name="Fluid identity")
    trash_restore(project=project, actor=owner, kind="code", uuid=code.uuid)
    code.refresh_from_db()
    assert code.deleted_at is None and code.name == "Fluid identity (restored)"
    assert Coding.objects.filter(code=code).count() == 3
    assert "renamed" in AuditEvent.objects.filter(action="restored", target_id=str(code.uuid)).get().summary


def test_a_theme_comes_back_with_its_subthemes_codes_and_memos(project, owner, coded):
    theme = coded["theme"]
    sub = theme_create(project=project, actor=owner, name="Masks", parent=theme)
    theme_delete(theme=theme, actor=owner)  # the themes app's own service trashes sub-themes too
    assert not Theme.objects.alive().filter(pk__in=[theme.pk, sub.pk]).exists()
    restored = trash_restore(project=project, actor=owner, kind="theme", uuid=theme.uuid)
    assert {item.obj.pk for item in restored} == {theme.pk, sub.pk}
    assert Theme.objects.alive().filter(pk__in=[theme.pk, sub.pk]).count() == 2
    sub.refresh_from_db()
    assert sub.parent_id == theme.pk
    assert ThemeCode.objects.filter(theme=theme, code=coded["code"]).exists()
    assert Memo.objects.alive().filter(theme=theme).count() == 1


def test_a_memo_comes_back_with_its_revisions(project, analyst, owner, coded):
    memo = coded["memos"]["code"]
    revisions = memo.revisions.count()
    memo_delete(memo=memo, actor=analyst)
    assert [i.obj.pk for i in trash_items(project) if i.kind.name == "memo"] == [memo.pk]
    trash_restore(project=project, actor=owner, kind="memo", uuid=memo.uuid)
    memo.refresh_from_db()
    assert memo.deleted_at is None and memo.revisions.count() == revisions >= 1


def test_the_trash_page_lists_who_deleted_what(project, owner, analyst, coded, client_for):
    trash_move(obj=coded["code"], actor=analyst)
    memo_delete(memo=coded["memos"]["theme"], actor=owner)
    body = _page(client_for(owner), project).content.decode()
    assert "Fluid identity" in body and "Theme note" in body
    assert "Arjun Analyst" in body


def test_the_trash_page_query_count_does_not_grow_with_items(project, owner, analyst, client_for, django_assert_max_num_queries):
    client = client_for(owner)
    for i in range(2):
        trash_move(obj=code_create(project=project, actor=analyst, name=f"Code {i}"), actor=analyst)
    with django_assert_max_num_queries(12) as few:
        _page(client, project)
    for i in range(2, 12):
        trash_move(obj=code_create(project=project, actor=analyst, name=f"Code {i}"), actor=analyst)
    with django_assert_max_num_queries(len(few.captured_queries)):
        _page(client, project)


def test_emptying_needs_the_confirmation_box(project, owner, analyst, coded, client_for):
    trash_move(obj=coded["interview"], actor=analyst)
    response = client_for(owner).post(reverse("projects:trash_empty", args=[project.uuid]), {})
    assert response.status_code == 200
    assert "Tick the box to confirm" in response.content.decode()
    assert Interview.objects.filter(pk=coded["interview"].pk).exists()


def test_emptying_deletes_for_good_and_is_audited(project, owner, analyst, coded, client_for):
    interview, code = coded["interview"], coded["code"]
    trash_move(obj=interview, actor=analyst)
    trash_move(obj=code, actor=analyst)
    client = client_for(owner)
    response = client.post(reverse("projects:trash_empty", args=[project.uuid]), {"confirm": "on"})
    assert response.status_code == 302
    assert not Interview.objects.filter(pk=interview.pk).exists()
    assert not Code.objects.filter(pk=code.pk).exists()
    assert not Coding.objects.filter(interview_id=interview.pk).exists()
    purged = AuditEvent.objects.filter(project=project, action="purged", actor=owner)
    assert set(purged.values_list("target_id", flat=True)) == {str(interview.uuid), str(code.uuid)}
    assert "The trash is empty: 2 items" in client.get(response["Location"]).content.decode()


def test_only_owners_see_and_use_the_trash(project, analyst, viewer, outsider, coded, client_for):
    trash_move(obj=coded["code"], actor=analyst)
    for user, status in ((analyst, 403), (viewer, 403), (outsider, 404)):
        client = client_for(user)
        assert _page(client, project).status_code == status
        restore = client.post(reverse("projects:trash_restore", args=[project.uuid]), {"kind": "code", "uuid": coded["code"].uuid})
        assert restore.status_code == status
        empty = client.post(reverse("projects:trash_empty", args=[project.uuid]), {"confirm": "on"})
        assert empty.status_code == status
    assert Code.objects.filter(pk=coded["code"].pk, deleted_at__isnull=False).exists()


def test_restoring_something_not_in_the_trash_says_so(project, owner, coded, client_for, make_user):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other", created_by=owner)
    Membership.objects.create(project=other, user=owner, role=Role.OWNER)
    trash_move(obj=coded["code"], actor=owner)
    # The code is in this project's trash, not the other project's: no cross-project restore.
    response = client_for(owner).post(reverse("projects:trash_restore", args=[other.uuid]), {"kind": "code", "uuid": coded["code"].uuid})
    assert response.status_code == 200
    assert "not in this project" in response.content.decode()
    response = client_for(owner).post(reverse("projects:trash_restore", args=[project.uuid]), {"kind": "participant", "uuid": coded["code"].uuid})
    assert "is not something the trash holds" in response.content.decode()


@pytest.fixture
def merged_in_meeting(project, owner, coded):
    """A meeting decided to merge "Masks" into the coded theme and applied it; "Masks" was renamed first."""
    target = coded["theme"]
    masks = theme_create(project=project, actor=owner, name="Masks")
    review = review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner], themes=[masks, target])
    rename = decision_record(review=review, theme=masks, actor=owner, kind="rename", payload={"name": "Masks and faces"})
    merge = decision_record(review=review, theme=masks, actor=owner, kind="merge", payload={"into": str(target.uuid)})
    decision_apply(decision=rename, actor=owner)
    decision_apply(decision=merge, actor=owner)
    masks.refresh_from_db()
    assert masks.deleted_at is not None and masks.merged_into_id == target.pk
    return {"review": review, "source": masks, "target": target}


def _review_page(client, project, review) -> str:
    return client.get(reverse("themes:review", args=[project.uuid, review.uuid])).content.decode()


def test_a_merged_theme_is_not_trash(project, owner, merged_in_meeting, client_for):
    source = merged_in_meeting["source"]
    assert not [i for i in trash_items(project) if i.obj.pk == source.pk]
    assert "Masks and faces" not in _page(client_for(owner), project).content.decode()
    with pytest.raises(ValidationError, match="not in this project's trash"):
        trash_restore(project=project, actor=owner, kind="theme", uuid=source.uuid)
    with pytest.raises(ValidationError, match="not in this project's trash"):
        trash_purge(project=project, actor=owner, kind="theme", uuid=source.uuid)


def test_emptying_the_trash_keeps_the_meeting_record_and_the_merge_redirect(project, owner, analyst, merged_in_meeting, client_for):
    review, source, target = merged_in_meeting["review"], merged_in_meeting["source"], merged_in_meeting["target"]
    trash_move(obj=theme_create(project=project, actor=owner, name="Unrelated"), actor=owner)
    client = client_for(owner)
    assert client.post(reverse("projects:trash_empty", args=[project.uuid]), {"confirm": "on"}).status_code == 302

    assert Theme.objects.filter(pk=source.pk).exists()
    decisions = list(Decision.objects.filter(review=review).order_by("created_at", "id"))
    assert [(d.kind, d.theme_id, d.applied_at is not None) for d in decisions] == [("rename", source.pk, True), ("merge", source.pk, True)]
    assert AgendaItem.objects.filter(review=review).count() == 2
    html = _review_page(client_for(analyst), project, review)
    # The minutes name the theme as the meeting saw it when each decision was recorded (both before the rename).
    assert "<strong>Rename</strong> “Masks” → “Masks and faces”" in html
    assert "<strong>Masks</strong> <span class=\"muted\">(now “Masks and faces”)</span>: Merge into another theme" in html
    target_url = reverse("themes:detail", args=[project.uuid, target.uuid])
    assert f'Merged into <a href="{target_url}">{target.name}</a>' in html
    old = client.get(reverse("themes:detail", args=[project.uuid, source.uuid]))
    assert old.status_code == 302 and old["Location"] == target_url


def test_purging_a_theme_keeps_its_meeting_decisions_and_agenda_by_name(project, owner, analyst, coded, client_for):
    theme = coded["theme"]
    review = review_create(project=project, actor=owner, title="Round 2", date="2026-11-29", attendees=[owner], themes=[theme])
    decision_record(review=review, theme=theme, actor=owner, kind="status", payload={"status": "reviewed"}, note="Needs quotes")
    theme_delete(theme=theme, actor=owner)
    trash_purge(project=project, actor=owner, kind="theme", uuid=theme.uuid)

    assert not Theme.objects.filter(pk=theme.pk).exists()
    decision = Decision.objects.get(review=review)
    assert decision.theme is None and decision.theme_label == "Identity as performance"
    assert AgendaItem.objects.get(review=review).theme_label == "Identity as performance"
    html = _review_page(client_for(analyst), project, review)
    assert "<strong>Identity as performance</strong> <span class=\"muted\">(deleted for good)</span>" in html
    assert "cannot be applied: theme deleted for good" in html  # only Set aside is offered
    with pytest.raises(ValidationError, match="deleted for good"):
        decision_apply(decision=decision, actor=owner)
    presenter = client_for(analyst).get(reverse("themes:present", args=[project.uuid, review.uuid, 0]))
    assert presenter.status_code == 302  # nothing left to present
    api = client_for(analyst).get(f"/api/projects/{project.uuid}/reviews/{review.uuid}/").json()
    assert api["agenda"] == [None] and api["decisions"][0]["theme_name"] == "Identity as performance"


def test_purging_a_merge_target_takes_the_merged_theme_along_and_keeps_the_decisions(project, owner, merged_in_meeting):
    review, source, target = merged_in_meeting["review"], merged_in_meeting["source"], merged_in_meeting["target"]
    theme_delete(theme=target, actor=owner)
    trash_purge(project=project, actor=owner, kind="theme", uuid=target.uuid)
    assert not Theme.objects.filter(pk__in=[source.pk, target.pk]).exists()
    assert [d.theme_label for d in Decision.objects.filter(review=review)] == ["Masks", "Masks"]
    assert not trash_items(project)


def test_editing_a_meeting_keeps_agenda_items_of_merged_themes(project, owner, merged_in_meeting):
    review, target = merged_in_meeting["review"], merged_in_meeting["target"]
    review_update(review=review, actor=owner, title=review.title, date=review.date, attendees=[owner], themes=[target])
    assert set(AgendaItem.objects.filter(review=review).values_list("theme_id", flat=True)) == {merged_in_meeting["source"].pk, target.pk}
