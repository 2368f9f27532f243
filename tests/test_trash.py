"""The project trash: restoring brings back everything attached; emptying is explicit, confirmed, audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from coding.models import Code, Coding
from coding.services import code_create, coding_apply
from interviews.models import Interview, Segment
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent
from projects.trash import trash_items, trash_move, trash_restore
from themes.models import Memo, Theme, ThemeCode
from themes.services import memo_create, memo_delete, theme_add_code, theme_create, theme_delete

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
