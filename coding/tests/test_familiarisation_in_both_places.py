"""Familiarisation notes (the coding workspace) and familiarisation memos (the journal) on one interview: each place
lists the other's, with the way there, so researchers find all of it from either."""

from __future__ import annotations

import pytest
from django.urls import reverse

from coding.services import note_save
from interviews.models import Turn
from themes import services as themes

pytestmark = pytest.mark.django_db


def workspace(client, project, interview) -> str:
    return client.get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()


def journal_part(html: str) -> str:
    part = html[html.index('class="journal-familiarisation"'):]
    return part[:part.index("</div>")]


def test_the_workspace_lists_the_journals_familiarisation_memos_on_the_interview(client_for, project, owner, analyst, viewer,
                                                                                  interview, make_interview):
    memo = themes.memo_create(project=project, actor=analyst, title="First read of GPT-4o", body="Guarded, polite.",
                              kind="familiarisation", interview=interview)
    themes.memo_create(project=project, actor=analyst, title="An analytic memo", body="x", kind="analytic", interview=interview)
    themes.memo_create(project=project, actor=analyst, title="About another interview", body="x", kind="familiarisation",
                       interview=make_interview(title="Claude on belonging"))
    gone = themes.memo_create(project=project, actor=analyst, title="Thrown away", body="x", kind="familiarisation", interview=interview)
    themes.memo_delete(memo=gone, actor=analyst)

    part = journal_part(workspace(client_for(owner), project, interview))
    assert f'<a href="{reverse("themes:memo", args=[project.uuid, memo.uuid])}">First read of GPT-4o</a>' in part
    assert "arjun" in part
    for not_here in ("An analytic memo", "About another interview", "Thrown away"):
        assert not_here not in part
    assert f'{reverse("themes:journal", args=[project.uuid])}?target=interview:{interview.uuid}">All memos on this interview' in part
    write = f'{reverse("themes:memo_new", args=[project.uuid])}?interview={interview.uuid}&amp;kind=familiarisation'
    assert write in part
    # Viewers read them; only writers are offered to write one.
    viewers = journal_part(workspace(client_for(viewer), project, interview))
    assert "First read of GPT-4o" in viewers and write not in viewers


def test_the_workspace_says_when_the_journal_has_none(client_for, project, owner, interview):
    assert "No familiarisation memo on this interview in the journal yet." in journal_part(workspace(client_for(owner), project, interview))


def test_the_link_to_write_one_opens_the_memo_form_on_the_interview_as_familiarisation(client_for, project, owner, interview):
    html = client_for(owner).get(reverse("themes:memo_new", args=[project.uuid]),
                                 {"interview": interview.uuid, "kind": "familiarisation"}).content.decode()
    assert interview.title in html
    assert '<option value="familiarisation" selected' in html


def test_a_memo_on_the_interview_lists_the_workspaces_notes_with_their_turns(client_for, project, owner, analyst, viewer, interview,
                                                                              make_interview):
    turn = Turn.objects.get(interview=interview, position=1)
    note_save(interview=interview, author=owner, text="Reads like a brochure.\nCheck turn 3.")
    note_save(interview=interview, author=analyst, text="Hedges here.", turn=turn)
    note_save(interview=make_interview(title="Claude on belonging"), author=owner, text="Another interview's note")
    memo = themes.memo_create(project=project, actor=analyst, title="First read", body="b", kind="familiarisation", interview=interview)

    for who in (owner, viewer):
        html = client_for(who).get(reverse("themes:memo", args=[project.uuid, memo.uuid])).content.decode()
        part = html[html.index('class="card workspace-notes"'):]
        part = part[:part.index("</section>")]
        ws = reverse("coding:workspace", args=[project.uuid, interview.uuid])
        assert "olivia · the whole interview:</span> Reads like a brochure.<br>Check turn 3." in part
        assert f'arjun · <a href="{ws}#t-{turn.pk}">turn #{turn.number}</a>:</span> Hedges here.' in part
        assert part.index("Reads like a brochure") < part.index("Hedges here")  # the whole interview's first
        assert "Another interview" not in part
        assert f'<a href="{ws}">Open “{interview.title}” in the coding workspace' in part


def test_a_memo_on_a_theme_or_the_project_has_no_workspace_notes(client_for, project, owner):
    memo = themes.memo_create(project=project, actor=owner, title="Method", body="b", kind="methodological")
    html = client_for(owner).get(reverse("themes:memo", args=[project.uuid, memo.uuid])).content.decode()
    assert "Familiarisation notes in the coding workspace" not in html


@pytest.mark.parametrize("n", [1, 4])
def test_both_pages_cost_the_same_with_more_notes_and_memos(client_for, project, owner, analyst, viewer, interview,
                                                           django_assert_num_queries, n):
    turns = list(Turn.objects.filter(interview=interview).order_by("position"))
    memo = None
    for i in range(n):
        for author in (owner, analyst, viewer):
            note_save(interview=interview, author=author, text=f"note {i}", turn=turns[i % len(turns)] if i else None)
        memo = themes.memo_create(project=project, actor=analyst, title=f"Read {i}", body="b", kind="familiarisation", interview=interview)
    client = client_for(owner)
    # session, user, membership+project, interview+participant, codes, members, turns+segments+codings (one),
    # notes, pending AI suggestions, project progress (cached for a minute afterwards), the journal's familiarisation
    # memos, unread-mentions badge
    with django_assert_num_queries(12):
        assert client.get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).status_code == 200
    memo_url = reverse("themes:memo", args=[project.uuid, memo.uuid])
    client.get(memo_url)
    # session, user, membership+project, memo with its targets, revisions, the workspace's notes, unread-mentions badge
    with django_assert_num_queries(7):
        assert client.get(memo_url).status_code == 200


def test_the_journal_filtered_to_an_interview_points_to_its_workspace_notes(client_for, project, owner, analyst, viewer, interview,
                                                                            make_interview, django_assert_num_queries):
    note_save(interview=interview, author=owner, text="Reads like a brochure.")
    note_save(interview=interview, author=analyst, text="Hedges.", turn=Turn.objects.get(interview=interview, position=1))
    other = make_interview(title="Claude on belonging")
    url = reverse("themes:journal", args=[project.uuid])
    client = client_for(viewer)
    html = client.get(url, {"target": f"interview:{interview.uuid}"}).content.decode()
    ws = reverse("coding:workspace", args=[project.uuid, interview.uuid])
    assert (f"The coding workspace has 2 familiarisation notes on “{interview.title}”: "
            f'<a href="{ws}">open the interview in the coding workspace</a>.') in html
    assert "The coding workspace has no familiarisation notes yet on “Claude on belonging”" in \
        client.get(url, {"target": f"interview:{other.uuid}"}).content.decode()
    assert "The coding workspace has" not in client.get(url).content.decode()
    assert "The coding workspace has" not in client.get(url, {"target": "interview:not-a-uuid"}).content.decode()


@pytest.mark.parametrize("n", [1, 4])
def test_the_journal_on_one_interview_costs_the_same_with_more_notes_and_memos(client_for, project, owner, analyst, viewer, interview,
                                                                              django_assert_num_queries, n):
    turns = list(Turn.objects.filter(interview=interview).order_by("position"))
    for i in range(n):
        for author in (owner, analyst, viewer):
            note_save(interview=interview, author=author, text=f"note {i}", turn=turns[i % len(turns)] if i else None)
        themes.memo_create(project=project, actor=analyst, title=f"Read {i}", body="b", kind="familiarisation", interview=interview)
    client = client_for(owner)
    url = reverse("themes:journal", args=[project.uuid]) + f"?target=interview:{interview.uuid}"
    client.get(url)
    # session, user, membership+project, a page of memos, members, the "About" menus' themes, codes and interviews,
    # unread-mentions badge, and the interview with its workspace notes counted
    with django_assert_num_queries(10):
        assert client.get(url).status_code == 200
