"""A code's excerpts page: the question each answer replied to, sub-codes on request, the sentences around on demand."""

from __future__ import annotations

import pytest
from django.urls import reverse

from coding.models import Coding
from interviews.models import Speaker

pytestmark = pytest.mark.django_db


def _code(interview, code, segments, coder):
    for s in segments:
        Coding.objects.create(segment=s, code=code, coder=coder, interview=interview)


def _excerpts(client, project, code, query=""):
    r = client.get(reverse("coding:excerpts", args=[project.uuid, code.uuid]) + query)
    assert r.status_code == 200
    return r.content.decode()


def _context(client, project, interview, first, last=None):
    url = reverse("coding:excerpt_context", args=[project.uuid, interview.uuid])
    return client.get(url, {"from": first, "to": last if last is not None else first})


def test_each_excerpt_shows_the_question_it_answered(client_for, owner, project, interview, participant_segments,
                                                     make_code):
    s = participant_segments
    trust = make_code("Trust")
    _code(interview, trust, [s[1], s[4]], owner)

    body = _excerpts(client_for(owner), project, trust)

    # The first answer follows the opening question (two sentences), the second the follow-up.
    assert body.count('class="excerpt-question"') == 2
    assert "Tell me about home. What does belonging mean to you?" in body
    assert "And for people from migrant families?" in body
    assert body.index("What does belonging mean to you?") < body.index("Belonging grows slowly.") \
        < body.index("And for people from migrant families?") < body.index("Language matters a lot.")


def test_an_answer_without_a_question_before_it_shows_none(client_for, owner, project, make_interview, make_code):
    interview = make_interview(turns=[(Speaker.PARTICIPANT, "I start unprompted. Then I go on.")])
    trust = make_code("Trust")
    _code(interview, trust, interview.segments.all()[:1], owner)
    assert 'class="excerpt-question"' not in _excerpts(client_for(owner), project, trust)


def test_sub_codes_are_included_on_request_and_named(client_for, owner, project, interview, participant_segments,
                                                     make_code):
    s = participant_segments
    belonging = make_code("Belonging")
    slow = make_code("Slow belonging", parent=belonging)
    food = make_code("Belonging through food", parent=slow)
    make_code("Unrelated")
    _code(interview, belonging, [s[0]], owner)
    _code(interview, slow, [s[1]], owner)
    _code(interview, food, [s[5]], owner)
    c = client_for(owner)

    alone = _excerpts(c, project, belonging)
    assert "1 excerpt" in alone and "Belonging grows slowly." not in alone
    assert "Include sub-codes" in alone and "Slow belonging, Belonging through food" in alone

    body = _excerpts(c, project, belonging, "?sub=1")
    assert "3 excerpts of “Belonging” and its sub-codes" in body
    # In transcript order, each named by its code.
    assert body.index("Home is where people know you.") < body.index("Belonging grows slowly.") < body.index("Food too.")
    assert "Slow belonging ·" in body and "Belonging through food ·" in body

    # A code without sub-codes offers no such option; the option on a leaf changes nothing.
    leaf = _excerpts(c, project, food, "?sub=1")
    assert "Include sub-codes" not in leaf and "1 excerpt" in leaf


def test_only_mine_and_sub_codes_combine(client_for, owner, analyst, project, interview, participant_segments, make_code):
    s = participant_segments
    belonging = make_code("Belonging")
    slow = make_code("Slow belonging", parent=belonging)
    _code(interview, slow, [s[1]], analyst)
    _code(interview, slow, [s[4]], owner)
    body = _excerpts(client_for(analyst), project, belonging, "?sub=1&coder=mine")
    assert "1 excerpt coded by you" in body and "Belonging grows slowly." in body and "Language matters" not in body


@pytest.mark.parametrize("n", [1, 5])
def test_the_page_with_sub_codes_keeps_its_query_count(client_for, owner, project, make_interview, make_code,
                                                       django_assert_num_queries, n):
    parent = make_code("Belonging")
    children = [make_code(f"Sub {i}", parent=parent) for i in range(n)]
    for i in range(n):
        interview = make_interview(title=f"Interview {i}", label=f"Model {i % 3}")
        segs = list(interview.segments.filter(speaker=Speaker.PARTICIPANT))
        _code(interview, parent, segs[:2], owner)
        _code(interview, children[i], segs[3:5], owner)
    c = client_for(owner)
    # session, user, membership, code, the codebook (sub-codes), a page of interviews (short: not counted), their
    # excerpts, texts of the turns multi-sentence excerpts span, the questions they answer, members, mentions badge
    with django_assert_num_queries(11):
        body = _excerpts(c, project, parent, "?sub=1")
    assert body.count('class="excerpt-item"') == 2 * n


def test_the_context_shows_the_sentences_around_the_excerpt_marked(client_for, viewer, project, interview,
                                                                   participant_segments, django_assert_num_queries):
    s = participant_segments
    c = client_for(viewer)  # reading: every member may
    # session, user, membership, interview, the excerpt's segments with their neighbours and turns
    with django_assert_num_queries(5):
        r = _context(c, project, interview, s[1].pk)
    assert r.status_code == 200
    body = r.content.decode()
    assert "<mark>Belonging grows slowly.</mark>" in body
    for around in ("What does belonging mean to you?", "Home is where people know you.", "It needs time and trust.",
                   "And for people from migrant families?"):
        assert around in body
    assert "Tell me about home." not in body and "Interviewer (turn 1)" in body and "GPT-4o (turn 2)" in body

    # A multi-sentence excerpt is marked whole.
    body = _context(c, project, interview, s[3].pk, s[4].pk).content.decode()
    assert "<mark>They often feel between two places.</mark> <mark>Language matters a lot.</mark>" in body


def test_the_context_renders_markdown_through_the_one_renderer(client_for, owner, project, make_interview):
    interview = make_interview(turns=[(Speaker.PARTICIPANT, "It is **really** simple. <script>alert(1)</script> And *plain*.")])
    first = interview.segments.order_by("position").first()
    body = _context(client_for(owner), project, interview, first.pk).content.decode()
    assert "<strong>really</strong>" in body and "**" not in body and "<script>" not in body


def test_the_context_is_404_for_outsiders_and_other_interviews_and_400_without_an_excerpt(
        client_for, owner, outsider, project, interview, participant_segments, make_interview):
    from projects.models import Project

    s = participant_segments
    assert _context(client_for(outsider), project, interview, s[0].pk).status_code == 404
    other = make_interview(title="Another interview")
    c = client_for(owner)
    # A segment of another interview is not found through this one.
    assert _context(c, project, other, s[0].pk).status_code == 404
    elsewhere = Project.objects.create(name="Another", created_by=outsider)
    foreign = make_interview(project=elsewhere)
    assert _context(c, project, foreign, foreign.segments.first().pk).status_code == 404
    r = c.get(reverse("coding:excerpt_context", args=[project.uuid, interview.uuid]), {"from": "x"})
    assert r.status_code == 400 and "Say which excerpt" in r.content.decode()
