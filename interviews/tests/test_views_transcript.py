"""The transcript reading page: safe Markdown, provenance, permissions and a constant number of queries."""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from interviews.models import Interview, Segment
from interviews.rendering import quote_html
from interviews.tests.factories import make_interview, make_participant

pytestmark = pytest.mark.django_db

HOSTILE = (
    "Here is my answer. <script>window.__pwned = 1; alert(1)</script>\n\n"
    '<img src="x" onerror="window.__pwned = 2">\n\n'
    "[click me](javascript:window.__pwned=3) and [CLICK](JaVaScRiPt:alert(1)) and [data](data:text/html;base64,PHNjcmlwdD4=)\n\n"
    '<a href="javascript:alert(1)" onclick="alert(2)">raw link</a> <iframe src="https://evil.example"></iframe>\n\n'
    "![tracker](https://evil.example/pixel.png)\n\n"
    '<svg onload="alert(1)"></svg> <style>body{display:none}</style>'
)

LIVE_METADATA = {
    "provenance": {
        "provider": "openai-compatible", "base_url": "http://127.0.0.1:9999/v1",
        "request": {"model": "gpt-4o", "temperature": 0.7, "seed": 42, "messages": [{"role": "user", "content": "Hi"}]},
        "model_requested": "gpt-4o", "model_returned": "gpt-4o-2024-08-06", "response_id": "chatcmpl-123",
        "usage": {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46},
        "finish_reason": "stop", "latency_ms": 812, "time_to_first_token_ms": 95,
        "raw_response": {"id": "chatcmpl-123"},
    }
}


class _Tags(HTMLParser):
    """Every element and attribute the browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def assert_inert(html: str) -> None:
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag not in {"iframe", "img", "svg", "style", "object", "embed"}, tag
        assert tag != "script" or set(attrs) == {"src", "defer"}, "only the page's own script files"
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        for a in ("href", "src"):
            assert not attrs.get(a, "").strip().lower().startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


def url(project, interview, **query) -> str:
    base = reverse("interviews:interview_detail", args=[project.uuid, interview.uuid])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def interview(project):
    participant = make_participant(project)
    return make_interview(
        project, participant,
        [
            ("interviewer", "What does **family** mean to you?"),
            {"speaker": "participant", "text": "## Family\n\nFamily is *many* things. It is care.\n\n- kin\n- friends",
             "model_slug": "gpt-4o-2024-08-06", "timestamp": dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.UTC),
             "metadata": LIVE_METADATA},
        ],
        source_filename="conversations.json", source_format="chatgpt", source_sha256="ab" * 32, origin="live",
    )


def test_members_read_the_transcript_as_rendered_markdown(client_for, viewer, project, interview) -> None:
    response = client_for(viewer).get(url(project, interview))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>family</strong>" in html
    assert "<h2>Family</h2>" in html and "<em>many</em>" in html and "<li>kin</li>" in html
    assert "GPT-4o" in html and "gpt-4o-2024-08-06" in html


def test_outsiders_get_404_and_anonymous_users_are_sent_to_login(client, client_for, outsider, project, interview) -> None:
    assert client_for(outsider).get(url(project, interview)).status_code == 404
    response = client.get(url(project, interview))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_interview_of_another_project_or_in_the_trash_is_404(client_for, owner, project, interview) -> None:
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other", created_by=owner)
    Membership.objects.create(project=other, user=owner, role=Role.OWNER)
    assert client_for(owner).get(url(other, interview)).status_code == 404
    Interview.objects.filter(pk=interview.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    assert client_for(owner).get(url(project, interview)).status_code == 404


def test_hostile_transcript_text_is_shown_as_text_never_as_markup(client_for, analyst, project) -> None:
    participant = make_participant(project, label="<b>Evil</b>")
    interview = make_interview(
        project, participant, [("participant", HOSTILE)],
        source_filename='"><script>alert(1)</script>.json', metadata={"note": "<img src=x onerror=alert(1)>"},
    )
    html = client_for(analyst).get(url(project, interview)).content.decode()
    assert_inert(html)
    body = html.split('id="transcript"', 1)[1]
    assert "&lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;" in body  # shown, escaped
    assert "&lt;b&gt;Evil&lt;/b&gt;" in html


def test_hostile_text_cannot_run_in_segment_view(client_for, analyst, project) -> None:
    interview = make_interview(project, make_participant(project), [("participant", HOSTILE)])
    html = client_for(analyst).get(url(project, interview, view="segments")).content.decode()
    assert_inert(html)
    body = html.split('id="transcript"', 1)[1]
    assert "&lt;script&gt;window.__pwned" in body


def test_provenance_panel_shows_source_and_live_turn_record(client_for, analyst, project, interview) -> None:
    html = client_for(analyst).get(url(project, interview)).content.decode()
    for expected in ("conversations.json", "ab" * 32, "chatgpt", "gpt-4o-2024-08-06", "Finish reason", "stop",
                     "812 ms (first token 95 ms)", "12 prompt, 34 completion, 46 total", "temperature=0.7, seed=42",
                     "chatcmpl-123", "Model requested"):
        assert expected in html, expected


def test_full_turn_record_is_json_for_members_only(client_for, viewer, outsider, project, interview) -> None:
    turn = interview.turns.get(position=1)
    target = reverse("interviews:turn_metadata", args=[project.uuid, interview.uuid, turn.uuid])
    response = client_for(viewer).get(target)
    assert response.status_code == 200
    assert response.json()["metadata"]["provenance"]["raw_response"] == {"id": "chatcmpl-123"}
    assert client_for(outsider).get(target).status_code == 404
    other = make_interview(project, interview.participant, [("interviewer", "Hi")], title="Other")
    wrong = reverse("interviews:turn_metadata", args=[project.uuid, other.uuid, turn.uuid])
    assert client_for(viewer).get(wrong).status_code == 404


def test_segment_view_lists_every_coding_unit(client_for, analyst, project, interview) -> None:
    html = client_for(analyst).get(url(project, interview, view="segments")).content.decode()
    for text in interview.segments.values_list("text", flat=True):
        # Each unit as the reader saw it: Markdown markers gone, bold kept.
        assert f'<span class="segment-text">{quote_html(text)}</span>' in html
    assert '<span class="segment-text">What does <strong>family</strong> mean to you?</span>' in html
    assert interview.segments.count() == 6  # question, heading, two sentences, two list items


def test_htmx_request_gets_only_the_transcript_fragment(client_for, analyst, project, interview) -> None:
    response = client_for(analyst).get(url(project, interview, view="segments"), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<nav class="toolbar" id="transcript-nav" aria-label="Transcript view" hx-swap-oob="true">')
    assert '<section id="transcript"' in html
    assert "<html" not in html and "provenance-panel" not in html
    # The view buttons come along out of band: the one pressed is now the current one.
    current = re.search(r'<a class="button primary" href="\?view=(\w+)"', html).group(1)
    assert current == "segments" and html.count('aria-current="page"') == 1


def test_empty_interview_says_so(client_for, analyst, project) -> None:
    interview = make_interview(project, make_participant(project), [])
    assert "This interview has no turns yet." in client_for(analyst).get(url(project, interview)).content.decode()


def _long_interview(project, participant, turns: int, sentences: int):
    spec = []
    for i in range(turns):
        speaker = "interviewer" if i % 2 == 0 else "participant"
        spec.append({"speaker": speaker, "text": " ".join(f"Sentence {i}-{j} about care." for j in range(sentences)),
                     "model_slug": "gpt-4o" if speaker == "participant" else "", "metadata": LIVE_METADATA if speaker == "participant" else {}})
    return make_interview(project, participant, spec, title=f"{turns}x{sentences}")


@pytest.mark.parametrize("view", ["read", "segments"])
def test_a_2000_segment_transcript_uses_the_same_queries_as_a_short_one(client_for, analyst, project, view, django_assert_num_queries) -> None:
    participant = make_participant(project)
    short = _long_interview(project, participant, turns=2, sentences=2)
    long = _long_interview(project, participant, turns=100, sentences=20)
    assert Segment.objects.filter(interview=long).count() == 2000
    client = client_for(analyst)
    client.get(url(project, short, view=view))  # warm the session and the rendered-HTML cache
    # session, user, membership (+project), interview (+participant), turns, segments (rows or counts), unread-mentions badge
    with django_assert_num_queries(7):
        assert client.get(url(project, short, view=view)).status_code == 200
    with django_assert_num_queries(7):
        response = client.get(url(project, long, view=view))
    assert response.status_code == 200
    assert response.content.decode().count('class="turn turn-') == 100


def test_cold_cache_does_not_add_queries(client_for, analyst, project) -> None:
    from django.core.cache import cache

    interview = _long_interview(project, make_participant(project), turns=10, sentences=3)
    client = client_for(analyst)
    client.get(url(project, interview))
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        client.get(url(project, interview))
    assert len(queries) == 7


def test_odd_metadata_shapes_do_not_break_the_page(client_for, analyst, project) -> None:
    interview = make_interview(project, make_participant(project), [
        {"speaker": "participant", "text": "Fine.", "metadata": ["not", "a", "dict"]},
        {"speaker": "participant", "text": "Also fine.", "metadata": {"provenance": "text", "failure": 3, "previous_attempts": 2}},
        {"speaker": "participant", "text": "Ok.", "metadata": {"provenance": {"request": [1], "usage": "many"}}},
    ], metadata=["odd"])
    assert client_for(analyst).get(url(project, interview)).status_code == 200


def test_history_restore_gets_the_whole_page(client_for, analyst, project, interview) -> None:
    headers = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    html = client_for(analyst).get(url(project, interview, view="segments"), headers=headers).content.decode()
    assert "<html" in html and 'id="transcript"' in html


def test_branch_info_shows_which_answer_of_how_many(client_for, analyst, project) -> None:
    interview = make_interview(project, make_participant(project), [
        {"speaker": "interviewer", "text": "Edited question?", "metadata": {"branch": {"index": 0, "alternatives": 2}}},
        {"speaker": "participant", "text": "Regenerated.", "metadata": {"branch": {"index": 1, "alternatives": 3}}},
        {"speaker": "participant", "text": "Odd.", "metadata": {"branch": {"index": 5, "alternatives": 3}}},
        {"speaker": "participant", "text": "Odder.", "metadata": {"branch": "second"}},
    ])
    html = client_for(analyst).get(url(project, interview)).content.decode()
    turns = html.split('class="turn turn-')[1:]
    assert "<dt>Branch</dt><dd>question version 1 of 2</dd>" in turns[0]
    assert "<dt>Branch</dt><dd>answer 2 of 3</dd>" in turns[1]
    # A branch record the parsers would never write is left to the full JSON record.
    assert "Branch" not in turns[2] and "Branch" not in turns[3]


def test_a_rerun_links_to_its_original_and_to_the_comparison(client_for, viewer, project, interview) -> None:
    rerun = make_interview(project, interview.participant, [("participant", "Again.")], title="Family, re-run",
                           rerun_of=interview)
    compare = reverse("conduct:compare", args=[project.uuid, rerun.uuid])
    html = client_for(viewer).get(url(project, rerun)).content.decode()
    assert f'Re-run of <a href="{url(project, interview)}">Family and tradition</a>' in html
    assert f'href="{compare}"' in html and "Compare with the original side by side" in html
    original = client_for(viewer).get(url(project, interview)).content.decode()
    assert f'href="{reverse("conduct:compare", args=[project.uuid, interview.uuid])}"' in original
    assert "Compare with its re-runs side by side" in original and "Re-run of" not in original


def test_an_interview_without_reruns_offers_no_comparison(client_for, viewer, project, interview) -> None:
    html = client_for(viewer).get(url(project, interview)).content.decode()
    assert "/compare/" not in html and "Re-run of" not in html


def test_a_trashed_rerun_or_original_is_not_linked(client_for, viewer, project, interview) -> None:
    rerun = make_interview(project, interview.participant, [("participant", "Again.")], title="Re-run", rerun_of=interview)
    Interview.objects.filter(pk=rerun.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    assert "/compare/" not in client_for(viewer).get(url(project, interview)).content.decode()
    Interview.objects.filter(pk=rerun.pk).update(deleted_at=None)
    Interview.objects.filter(pk=interview.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    assert "Re-run of" not in client_for(viewer).get(url(project, rerun)).content.decode()


def test_a_rerun_page_uses_the_same_queries_as_any_other(client_for, viewer, project, interview, django_assert_num_queries) -> None:
    rerun = make_interview(project, interview.participant, [("participant", "Again.")], title="Re-run", rerun_of=interview)
    client = client_for(viewer)
    client.get(url(project, rerun))
    # session, user, membership (+project), interview (+participant, original, has re-runs), turns, segment counts, unread-mentions badge
    with django_assert_num_queries(7):
        assert client.get(url(project, rerun)).status_code == 200


def test_tool_steps_are_shown_collapsed_with_what_they_are(client_for, viewer, project) -> None:
    interview = make_interview(project, make_participant(project), [
        ("interviewer", "Compute it."),
        {"speaker": "tool", "text": "```python\nprint(1 + 1)\n```",
         "metadata": {"tool": {"name": "python", "step": "call", "content_type": "code"}}},
        {"speaker": "tool", "text": "```\n2\n```",
         "metadata": {"tool": {"name": "python", "step": "result", "content_type": "execution_output"}}},
        ("participant", "It is 2."),
    ])
    for view in ("read", "segments"):
        html = client_for(viewer).get(url(project, interview, view=view)).content.decode()
        turns = html.split('class="turn turn-')[1:]
        assert [t.split('"', 1)[0] for t in turns] == ["interviewer", "tool", "tool", "participant"]
        assert '<details class="tool-step"><summary>Call to python</summary>' in turns[1]
        assert '<details class="tool-step"><summary>Result from python</summary>' in turns[2]
        assert "print(1 + 1)" in turns[1] and "tool-step" not in turns[3]


@pytest.mark.parametrize("view", ["", "segments"])
def test_a_lone_carriage_return_breaks_a_line_on_the_page_and_in_its_segments(client_for, analyst, project, view) -> None:
    # Old Mac line endings survive a JSON export; Markdown reads "\r" as a line break, and so must every offset we map.
    text = "Intro.\r# Heading\rThe **core** point is care."
    interview = make_interview(project, make_participant(project), [("participant", text)])
    response = client_for(analyst).get(url(project, interview, **({"view": view} if view else {})))
    assert response.status_code == 200
    body = response.content.decode().split('id="transcript"', 1)[1]
    assert "Heading" in body and "<strong>core</strong>" in body and "# Heading" not in body
