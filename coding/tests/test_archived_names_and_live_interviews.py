"""A name an archived code has is offered back, not refused blindly; an interview still being conducted says so.

Reviewers found: creating "home as habit" again after undo had archived it was refused with "There is already a
code named …" while the codebook hid that code; a live interview opened in the workspace as speaker headers with no
text; the codebook listed it as 0 / 0; a 300-character name typed in the picker was thrown away.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from coding.models import Code, CodeEvent, Coding
from coding.services import NAME_MAX_LENGTH, NameTaken, code_archive, code_create, code_merge, coding_undo
from interviews.models import Interview, Participant, Speaker, Turn
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


def _create_inline(client, project, interview, **data):
    return client.post(reverse("coding:create_inline", args=[project.uuid, interview.uuid]), data)


# --- an archived code's name -----------------------------------------------------------------

def test_a_refused_name_says_the_code_is_archived_or_merged_and_what_to_do(project, owner, make_code):
    make_code("Trust")
    archived = make_code("Home as habit")
    code_archive(code=archived, actor=owner)
    source, target = make_code("Advice list"), make_code("Deference")
    code_merge(source=source, target=target, actor=owner)

    with pytest.raises(NameTaken) as live:
        code_create(project=project, actor=owner, name="trust")
    assert live.value.messages == ["There is already a code named “Trust” in this project."]
    assert live.value.taken.name == "Trust"
    with pytest.raises(NameTaken) as taken:
        code_create(project=project, actor=owner, name="  home   AS habit ")
    [message] = taken.value.messages
    assert taken.value.taken == archived
    assert "“Home as habit” in this project, archived. Bring it back into use" in message
    assert "Show archived" in message and "coding picker" in message
    with pytest.raises(NameTaken) as merged:
        code_create(project=project, actor=owner, name="Advice list")
    assert "it was merged into “Deference” and stays archived. Use “Deference”" in merged.value.messages[0]
    # Renaming another code to the archived name says the same.
    with pytest.raises(ValidationError, match="archived. Bring it back"):
        from coding.services import code_update

        code_update(code=target, actor=owner, version=target.version, name="home as habit")


def test_the_codebook_form_offers_to_bring_an_archived_code_back(client_for, analyst, project, make_code):
    code = make_code("Home as habit")
    code_archive(code=code, actor=analyst)
    c = client_for(analyst)
    r = c.post(reverse("coding:code_new", args=[project.uuid]), {"name": "home as habit", "kind": "semantic"})
    assert r.status_code == 400
    body = r.content.decode()
    assert "archived. Bring it back into use instead of creating it again" in body
    archive_url = reverse("coding:code_archive", args=[project.uuid, code.uuid])
    assert f'action="{archive_url}"' in body and "Bring “Home as habit” back into use" in body

    r = c.post(archive_url, {"archived": "", "reason": "Brought back instead of creating it again"})
    assert r.status_code == 302
    code.refresh_from_db()
    assert not code.archived and Code.objects.count() == 1
    event = CodeEvent.objects.filter(code=code).first()
    assert (event.action, event.reason) == (CodeEvent.Action.UNARCHIVED, "Brought back instead of creating it again")


def test_the_codebook_form_names_the_code_a_merged_one_went_into(client_for, analyst, project, make_code):
    source, target = make_code("Advice list"), make_code("Deference")
    code_merge(source=source, target=target, actor=analyst)
    r = client_for(analyst).post(reverse("coding:code_new", args=[project.uuid]), {"name": "Advice list", "kind": "semantic"})
    assert r.status_code == 400
    body = r.content.decode()
    assert "it was merged into “Deference” and stays archived" in body
    assert reverse("coding:code_detail", args=[project.uuid, target.uuid]) in body
    assert reverse("coding:code_archive", args=[project.uuid, source.uuid]) not in body  # no way back for a merged code


def test_the_picker_brings_an_archived_code_back_and_undo_archives_it_again(client_for, analyst, project, interview,
                                                                             participant_segments, make_code):
    code = make_code("Home as habit")
    code_archive(code=code, actor=analyst)
    s = participant_segments
    c = client_for(analyst)
    r = _create_inline(c, project, interview, bring_back=code.pk, segments=f"{s[0].pk},{s[1].pk}")
    assert r.status_code == 200, r.content
    assert '"newCode"' in r["HX-Trigger"] and '"archived": false' in r["HX-Trigger"]
    code.refresh_from_db()
    assert not code.archived and Code.objects.count() == 1
    assert set(Coding.objects.filter(code=code, coder=analyst).values_list("segment_id", flat=True)) == {s[0].pk, s[1].pk}
    event = CodeEvent.objects.filter(code=code).first()
    assert (event.action, event.reason) == (CodeEvent.Action.UNARCHIVED, "Brought back from the archive while coding")
    assert AuditEvent.objects.filter(summary="Code “Home as habit” brought back from the archive").exists()

    outcome = coding_undo(project_uuid=project.uuid, interview_uuid=interview.uuid, user=analyst)
    assert outcome.message == ("Undone: removed “Home as habit” from 2 segments, and archived “Home as habit” again "
                               "(you had brought it back for this).")
    code.refresh_from_db()
    assert code.archived and not Coding.objects.exists()
    assert CodeEvent.objects.filter(code=code).first().reason == "Brought back while coding and undone at once"


def test_undo_leaves_a_brought_back_code_in_use_once_a_colleague_applied_it(client_for, owner, analyst, project, interview,
                                                                            participant_segments, make_code):
    from coding.services import coding_apply

    code = make_code("Home as habit")
    code_archive(code=code, actor=analyst)
    s = participant_segments
    assert _create_inline(client_for(analyst), project, interview, bring_back=code.pk, segments=str(s[0].pk)).status_code == 200
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                 segment_ids=[s[2].pk])

    outcome = coding_undo(project_uuid=project.uuid, interview_uuid=interview.uuid, user=analyst)
    assert outcome.message.endswith("; “Home as habit” stays in use because it was applied or removed elsewhere after "
                                    "you brought it back.")
    code.refresh_from_db()
    assert not code.archived


def test_the_picker_refuses_to_bring_back_a_merged_code_naming_where_it_went(client_for, analyst, project, interview,
                                                                             participant_segments, make_code):
    source, target = make_code("Advice list"), make_code("Deference")
    code_merge(source=source, target=target, actor=analyst)
    r = _create_inline(client_for(analyst), project, interview, bring_back=source.pk,
                       segments=str(participant_segments[0].pk))
    assert r.status_code == 400
    assert "was merged into “Deference”, which holds its codings; a merged code stays archived" in r.content.decode()
    assert "Code with “Deference” instead" in r.content.decode()
    source.refresh_from_db()
    assert source.archived and not Coding.objects.exists()


def test_bringing_back_from_the_picker_is_for_writers_of_the_project(client_for, outsider, viewer, project, interview,
                                                                     participant_segments, make_code):
    code = make_code("Home as habit")
    code_archive(code=code, actor=viewer)
    data = {"bring_back": code.pk, "segments": str(participant_segments[0].pk)}
    assert _create_inline(client_for(outsider), project, interview, **data).status_code == 404
    assert _create_inline(client_for(viewer), project, interview, **data).status_code == 403
    code.refresh_from_db()
    assert code.archived and not Coding.objects.exists()


def test_bringing_back_another_projects_code_is_not_found(client_for, analyst, owner, project, interview,
                                                          participant_segments):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other", created_by=owner)
    Membership.objects.create(project=other, user=owner, role=Role.OWNER)
    foreign = code_create(project=other, actor=owner, name="Foreign")
    code_archive(code=foreign, actor=owner)
    r = _create_inline(client_for(analyst), project, interview, bring_back=foreign.pk,
                       segments=str(participant_segments[0].pk))
    assert r.status_code == 404
    foreign.refresh_from_db()
    assert foreign.archived


def test_an_over_long_name_is_refused_saying_the_limit_and_the_picker_input_has_it(client_for, analyst, project, interview,
                                                                                   participant_segments):
    assert NAME_MAX_LENGTH == Code._meta.get_field("name").max_length == 200
    c = client_for(analyst)
    r = _create_inline(c, project, interview, name="x" * 300, segments=str(participant_segments[0].pk))
    assert r.status_code == 400
    assert r.content.decode() == "A code's name can have at most 200 characters; this one has 300."
    page = c.get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    assert 'id="picker-input"' in page and 'maxlength="200"' in page


# --- an interview still being conducted --------------------------------------------------------

@pytest.fixture
def live_interview(project, owner):
    """A live interview in an open session: turns so far, no segments (conduct.services.session_end makes them)."""
    from conduct.models import ConductSession, Seat
    from conduct.services import guide_create

    guide = guide_create(project=project, user=owner, name="Values", opening_prompt="What does fairness mean to you?",
                         system_prompt="You are taking part in a research interview.", planned_questions=[])
    session = ConductSession.objects.create(project=project, guide_version=guide.versions.get(), created_by=owner)
    participant = Participant.objects.create(project=project, label="GPT live", is_live=True)
    interview = Interview.objects.create(project=project, participant=participant, title="Values — GPT live",
                                         origin=Interview.Origin.LIVE, status=Interview.Status.IN_PROGRESS)
    Seat.objects.create(session=session, interview=interview, position=0)
    Turn.objects.create(interview=interview, position=0, speaker=Speaker.INTERVIEWER, text="What does fairness mean to you?")
    Turn.objects.create(interview=interview, position=1, speaker=Speaker.PARTICIPANT, text="Fairness is **equal** treatment.")
    Turn.objects.create(interview=interview, position=2, speaker=Speaker.INTERVIEWER, text="Where does that view come from?")
    Turn.objects.create(interview=interview, position=3, speaker=Speaker.PARTICIPANT, text="",
                        status=Turn.Status.STREAMING)
    return interview, session


@pytest.mark.parametrize("role", ["owner", "viewer"])
def test_a_live_interview_says_to_end_it_to_code_it_and_reads_without_coding(client_for, request, project, live_interview,
                                                                             django_assert_num_queries, role):
    interview, session = live_interview
    c = client_for(request.getfixturevalue(role))
    # session, user, membership+project, interview+participant, its session, its turns, unread-mentions badge
    with django_assert_num_queries(7):
        r = c.get(reverse("coding:workspace", args=[project.uuid, interview.uuid]))
    assert r.status_code == 200
    body = r.content.decode()
    assert "This interview is still being conducted: end it to code it." in body
    assert f'href="{reverse("conduct:session", args=[project.uuid, session.uuid])}"' in body
    assert "Fairness is <strong>equal</strong> treatment." in body  # the text so far, rendered, to read
    assert "Streaming" in body  # the answer still arriving says so
    assert 'id="coding-config"' not in body and 'class="seg' not in body  # nothing to code, no coding script state


def test_the_codebook_lists_a_live_interview_as_in_progress(client_for, owner, project, live_interview, interview):
    body = client_for(owner).get(reverse("coding:codebook", args=[project.uuid])).content.decode()
    live_row = body[body.index("Values — GPT live"):]
    live_row = live_row[:live_row.index("</tr>")]
    assert "in progress" in live_row and "end it to code it" in live_row and "0 / 0" not in live_row
    assert "in progress" not in body[body.index("GPT-4o on belonging"):][:400]  # an imported one keeps its figures


def test_an_ended_live_interview_opens_for_coding(client_for, owner, project, live_interview):
    from conduct.services import interview_finish

    interview, _ = live_interview
    Turn.objects.filter(interview=interview, status=Turn.Status.STREAMING).update(text="Family.", status=Turn.Status.COMPLETE)
    interview_finish(interview=interview)
    body = client_for(owner).get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    assert "still being conducted" not in body and 'id="coding-config"' in body and 'class="seg codable' in body
