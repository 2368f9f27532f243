"""Meetings in real time: what is announced when, the presenter's position, and who is looking at what."""

from __future__ import annotations

import datetime
import time

import pytest

from projects import live
from themes import presenting, services

pytestmark = pytest.mark.django_db


@pytest.fixture
def themes(project, owner):
    return [services.theme_create(project=project, actor=owner, name=n) for n in ("Honesty", "Friendship")]


@pytest.fixture
def review(project, owner, themes):
    return services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=themes)


def announced(project, since: str) -> list[dict]:
    return [event for _id, event in live.broker().read(str(project.uuid), since, timeout=0.1).events]


def test_posting_and_resolving_a_comment_announce_the_theme_only(project, owner, themes, django_capture_on_commit_callbacks):
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        comment = services.comment_post(theme=themes[0], actor=owner, body="Is this one theme or two?")
        services.comment_resolve(comment=comment, actor=owner)
    assert announced(project, since) == [{"kind": "comment", "theme": str(themes[0].uuid)}] * 2


def test_nothing_is_announced_when_the_change_is_rolled_back(project, owner, themes, django_capture_on_commit_callbacks):
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.comment_post(theme=themes[0], actor=owner, body="Draft")
    assert len(callbacks) == 1  # sent only once the change commits
    assert announced(project, since) == []


def test_recording_applying_and_declining_decisions_are_announced(project, owner, themes, review,
                                                                   django_capture_on_commit_callbacks):
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        first = services.decision_record(review=review, theme=themes[0], actor=owner, kind="rename", payload={"name": "Candour"})
        services.decision_apply(decision=first, actor=owner)
        second = services.decision_record(review=review, theme=themes[1], actor=owner, kind="status", payload={"status": "reviewed"})
        services.decision_decline(decision=second, actor=owner)
    decision = [{"kind": "decision", "review": str(review.uuid), "theme": str(t.uuid)} for t in (themes[0], themes[1])]
    # Applying the rename changed the theme's name: open boards and agendas hear that too.
    expected = [decision[0], {"kind": "board", "by": owner.pk}, decision[0], decision[1], decision[1]]
    assert announced(project, since) == expected


def test_every_change_to_the_board_is_announced_by_kind_alone(project, owner, themes, make_code, django_capture_on_commit_callbacks):
    code = make_code("admits uncertainty")
    since = live.cursor(project.uuid)
    changes = [
        lambda: services.theme_create(project=project, actor=owner, name="Care"),
        lambda: services.theme_update(theme=themes[0], actor=owner, base_version=None, name="Candour"),
        lambda: services.theme_set_status(theme=themes[0], actor=owner, status="reviewed"),
        lambda: services.theme_reorder(theme=themes[1], actor=owner, offset=-1),
        lambda: services.theme_place_before(theme=themes[0], actor=owner, before=themes[1]),
        lambda: services.theme_add_code(theme=themes[0], actor=owner, code=code),
        lambda: services.theme_shift_code(theme=themes[0], actor=owner, code=code, offset=1),
        lambda: services.theme_remove_code(theme=themes[0], actor=owner, code=code),
        lambda: services.theme_set_parent(theme=themes[1], actor=owner, parent=themes[0]),
        lambda: services.theme_delete(theme=themes[1], actor=owner),
    ]
    for change in changes:
        before = len(announced(project, since))
        with django_capture_on_commit_callbacks(execute=True):
            change()
        # Ids only, never names: a page refetches through its permission-checked view.
        assert announced(project, since)[before:] == [{"kind": "board", "by": owner.pk}]


def test_a_code_moved_between_themes_is_announced(project, owner, themes, make_code, django_capture_on_commit_callbacks):
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=themes[0], actor=owner, code=code)
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        services.theme_move_code(code=code, source=themes[0], target=themes[1], actor=owner)
    assert {"kind": "board", "by": owner.pk} in announced(project, since)


def test_a_refused_theme_name_announces_nothing(project, owner, themes, django_capture_on_commit_callbacks):
    from django.core.exceptions import ValidationError

    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError):
        services.theme_create(project=project, actor=owner, name="honesty")
    assert announced(project, since) == []


# ---------------------------------------------------------------- presenter position

def lead_url(project, review, index: int) -> str:
    return f"/p/{project.uuid}/themes/reviews/{review.uuid}/present/{index}/lead/"


def test_the_presenter_moves_everyone_and_late_joiners_find_the_position(client_for, analyst, project, review,
                                                                         django_capture_on_commit_callbacks):
    live.presence_enter(project.uuid, client="presenter-tab", user_id=analyst.pk, where="")
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        assert client_for(analyst).post(lead_url(project, review, 1)).status_code == 204
    assert announced(project, since) == [{"kind": "present", "review": str(review.uuid), "index": 1, "by": analyst.pk}]
    assert presenting.present_position(review) == {"index": 1, "by": analyst.pk}
    page = client_for(analyst).get(f"/p/{project.uuid}/themes/reviews/{review.uuid}/present/0/")
    assert 'data-lead-index="1"' in page.content.decode()
    assert client_for(analyst).post(lead_url(project, review, 1), {"stop": "1"}).status_code == 204
    assert presenting.present_position(review) is None



def test_a_presenter_who_closed_the_browser_leads_nobody(client_for, analyst, project, review):
    live.presence_enter(project.uuid, client="presenter-tab", user_id=analyst.pk, where="")
    assert client_for(analyst).post(lead_url(project, review, 1)).status_code == 204
    assert presenting.present_position(review) == {"index": 1, "by": analyst.pk}
    live.presence_leave(project.uuid, client="presenter-tab", user_id=analyst.pk)
    assert presenting.present_position(review) is None
    page = client_for(analyst).get(f"/p/{project.uuid}/themes/reviews/{review.uuid}/present/0/")
    assert 'data-lead-index=""' in page.content.decode()

def test_presenting_an_item_beyond_the_agenda_says_so(client_for, owner, project, review):
    response = client_for(owner).post(lead_url(project, review, 5))
    assert response.status_code == 400
    assert "no item 6" in response.content.decode()


def test_viewers_cannot_drive_the_rooms_screens(client_for, viewer, project, review):
    assert client_for(viewer).post(lead_url(project, review, 1)).status_code == 403
    assert presenting.present_position(review) is None


def test_outsiders_cannot_present(client_for, outsider, project, review):
    assert client_for(outsider).post(lead_url(project, review, 1)).status_code == 404


def test_presenting_needs_a_post(client_for, owner, project, review):
    assert client_for(owner).get(lead_url(project, review, 1)).status_code == 405


# ---------------------------------------------------------------- presence

@pytest.fixture
def fresh_presence(project):
    yield
    for entry in live.present_now(project.uuid):
        live.broker().presence_remove(str(project.uuid), f"{entry['user']}:tab")


def test_presence_names_who_is_on_which_theme_interview_or_meeting(client_for, owner, analyst, viewer, outsider, project,
                                                                  themes, review, make_interview, fresh_presence):
    interview, _ = make_interview("GPT-4o")
    live.presence_enter(project.uuid, client="tab", user_id=analyst.pk, where=f"theme:{themes[0].uuid}")
    live.presence_enter(project.uuid, client="tab", user_id=viewer.pk, where=f"interview:{interview.uuid}")
    live.presence_enter(project.uuid, client="tab", user_id=owner.pk, where=f"review:{review.uuid}")
    live.presence_enter(project.uuid, client="tab", user_id=outsider.pk, where=f"theme:{themes[0].uuid}")  # not a member
    html = client_for(owner).get(f"/p/{project.uuid}/themes/presence/?where=theme:{themes[0].uuid}").content.decode()
    assert "<strong>arjun</strong> · this page" in html
    assert "<strong>vera</strong> · interview “GPT-4o interview 1”" in html
    assert "<strong>you</strong> · meeting “Weekly”" in html
    assert "oscar" not in html


def test_presence_names_the_board(client_for, owner, analyst, project, fresh_presence):
    live.presence_enter(project.uuid, client="tab", user_id=analyst.pk, where=f"board:{project.uuid}")
    here = client_for(owner).get(f"/p/{project.uuid}/themes/presence/?where=board:{project.uuid}").content.decode()
    assert "<strong>arjun</strong> · this page" in here
    elsewhere = client_for(owner).get(f"/p/{project.uuid}/themes/presence/").content.decode()
    assert "<strong>arjun</strong> · the theme board" in elsewhere


def test_presence_on_another_projects_board_shows_no_name(client_for, owner, analyst, project, fresh_presence, make_user):
    from projects.models import Project

    elsewhere = Project.objects.create(name="Secret", created_by=make_user("sam"))
    live.presence_enter(project.uuid, client="tab", user_id=analyst.pk, where=f"board:{elsewhere.uuid}")
    assert "<strong>arjun</strong> · another page" in client_for(owner).get(f"/p/{project.uuid}/themes/presence/").content.decode()


def test_presence_forgets_pages_not_heard_from(client_for, owner, analyst, project, themes, fresh_presence, monkeypatch):
    live.presence_enter(project.uuid, client="tab", user_id=analyst.pk, where=f"theme:{themes[0].uuid}")
    later = time.time() + live.PRESENCE_SECONDS + 1
    monkeypatch.setattr(live.time, "time", lambda: later)
    assert "arjun" not in client_for(owner).get(f"/p/{project.uuid}/themes/presence/").content.decode()


def test_presence_of_a_theme_in_another_project_shows_no_name(client_for, owner, analyst, project, fresh_presence, make_user):
    from projects.models import Project

    elsewhere = Project.objects.create(name="Secret", created_by=make_user("sam"))
    secret = services.theme_create(project=elsewhere, actor=owner, name="Hidden theme")
    live.presence_enter(project.uuid, client="tab", user_id=analyst.pk, where=f"theme:{secret.uuid}")
    html = client_for(owner).get(f"/p/{project.uuid}/themes/presence/").content.decode()
    assert "Hidden theme" not in html
    assert "<strong>arjun</strong> · another page" in html


def test_presence_is_404_for_outsiders(client_for, outsider, project):
    assert client_for(outsider).get(f"/p/{project.uuid}/themes/presence/").status_code == 404


def test_presence_costs_the_same_with_more_people(client_for, owner, project, themes, make_user, make_interview,
                                                  django_assert_max_num_queries, fresh_presence):
    from projects.models import Membership, Role

    for i in range(12):
        user = make_user(f"member{i}")
        Membership.objects.create(project=project, user=user, role=Role.ANALYST)
        interview, _ = make_interview(f"Model {i}")
        where = f"theme:{themes[i % 2].uuid}" if i % 3 else f"interview:{interview.uuid}"
        live.presence_enter(project.uuid, client="tab", user_id=user.pk, where=where)
    client = client_for(owner)
    # session, user, membership, themes' names, interviews' titles, members' usernames
    with django_assert_max_num_queries(6):
        html = client.get(f"/p/{project.uuid}/themes/presence/").content.decode()
    assert html.count("presence-person") == 12


def test_restoring_or_purging_from_the_trash_tells_open_boards_and_codebooks(project, owner, themes, make_code,
                                                                            django_capture_on_commit_callbacks):
    from projects.trash import trash_empty, trash_move, trash_restore

    code = make_code("admits uncertainty")
    services.theme_delete(theme=themes[0], actor=owner)
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        trash_restore(project=project, actor=owner, kind="theme", uuid=themes[0].uuid)
    assert announced(project, since) == [{"kind": "board"}]
    trash_move(obj=code, actor=owner)
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        trash_empty(project=project, actor=owner)
    events = announced(project, since)
    assert {"kind": "board"} in events and {"kind": "codebook"} in events
