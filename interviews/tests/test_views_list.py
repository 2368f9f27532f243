"""The interviews list: filters, counts, coding progress, permissions and query count."""

from __future__ import annotations

import pytest
from django.urls import reverse

from interviews.models import Segment
from interviews.tests.factories import make_interview, make_participant

pytestmark = pytest.mark.django_db


def list_url(project, **query) -> str:
    return reverse("interviews:list", args=[project.uuid]) + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def interviews(project):
    gpt = make_participant(project, label="GPT-4o")
    claude = make_participant(project, label="Claude", provider="Anthropic", model_id="claude-3-5-sonnet")
    one = make_interview(project, gpt, [("interviewer", "Why?"), ("participant", "One. Two. Three. Four.")], title="Alpha", depth="comprehensive")
    two = make_interview(project, claude, [("interviewer", "How?"), ("participant", "Yes.")], title="Beta", depth="brief", origin="live")
    return one, two


def test_members_see_interviews_with_turns_and_links(client_for, viewer, project, interviews) -> None:
    html = client_for(viewer).get(list_url(project)).content.decode()
    alpha, beta = interviews
    assert reverse("interviews:interview_detail", args=[project.uuid, alpha.uuid]) in html
    assert "Alpha" in html and "Beta" in html and "claude-3-5-sonnet" in html
    assert "Import transcripts" not in html, "viewers cannot import"


def test_writers_get_import_and_conduct_buttons(client_for, analyst, project) -> None:
    html = client_for(analyst).get(list_url(project)).content.decode()
    assert "Import transcripts" in html and "conduct an interview" in html.lower()
    assert "No interviews yet." in html


def test_outsiders_get_404(client_for, outsider, project) -> None:
    assert client_for(outsider).get(list_url(project)).status_code == 404


def test_filters_by_participant_depth_and_origin(client_for, analyst, project, interviews) -> None:
    alpha, beta = interviews
    client = client_for(analyst)
    html = client.get(list_url(project, participant=beta.participant.uuid)).content.decode()
    assert "Beta" in html and "Alpha</a>" not in html
    assert "Alpha</a>" in client.get(list_url(project, depth="comprehensive")).content.decode()
    html = client.get(list_url(project, origin="imported", depth="brief")).content.decode()
    assert "No interviews match these filters." in html
    html = client.get(list_url(project, depth="brief"), headers={"HX-Request": "true"}).content.decode()
    assert html.lstrip().startswith('<section id="interview-table"') and "Beta" in html


def test_coded_percent_counts_answer_segments_with_a_coding(client_for, analyst, project, interviews) -> None:
    from coding.models import Code, Coding

    alpha, _ = interviews
    code = Code.objects.create(project=project, name="Care")
    answers = list(Segment.objects.filter(interview=alpha, speaker="participant").order_by("position"))
    assert len(answers) == 4
    for seg in answers[:1]:
        Coding.objects.create(segment=seg, code=code, coder=analyst, interview=alpha)
    Coding.objects.create(segment=answers[0], code=Code.objects.create(project=project, name="Duty"), coder=analyst, interview=alpha)
    html = client_for(analyst).get(list_url(project)).content.decode()
    assert 'title="1 of 4 answer segments">25%' in html


def test_query_count_does_not_grow_with_interviews(client_for, analyst, project, interviews, django_assert_num_queries) -> None:
    client = client_for(analyst)
    client.get(list_url(project))
    # session, user, membership (+project), participants, interviews (+participant, counts as subqueries), unread-mentions badge
    with django_assert_num_queries(6):
        client.get(list_url(project))
    participant = make_participant(project, label="Extra")
    for i in range(6):
        make_interview(project, participant, [("interviewer", "Q?"), ("participant", "A. B.")], title=f"x{i}")
    with django_assert_num_queries(6):
        assert client.get(list_url(project)).content.decode().count("<tr>") == 9
