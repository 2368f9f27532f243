"""Conduct pages: permissions (member / outsider 404 / viewer 403), forms, fragments, query counts."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from conduct import services
from conduct.models import ConductSession, EndpointKey, LiveEndpoint
from interviews.models import Guide, Participant, Turn

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, project, **kwargs) -> str:
    return reverse(f"conduct:{name}", kwargs={"project_uuid": project.uuid, **kwargs})


@pytest.fixture
def session(project, owner, guide, live):
    """A session with two models whose opening answers are still queued (no worker ran)."""
    return services.session_start(
        project=project, user=owner, guide_version=guide.versions.get(), participants=[live("A", "model-a"), live("B", "model-b")]
    )


# -- guides -------------------------------------------------------------------------


def test_member_creates_a_guide_with_questions_and_probes(project, analyst, client_for):
    response = client_for(analyst).post(
        url("guide_create", project),
        {
            "name": "Identity",
            "opening_prompt": "Who are you?",
            "system_prompt": "",
            "planned_questions": "Who made you?\n- When?\n  - Why?\nDo you have values?",
            "notes": "Pilot",
        },
    )
    guide = Guide.objects.get(project=project, name="Identity")
    assert response.status_code == 302 and response.url == url("guide", project, guide_uuid=guide.uuid)
    version = guide.versions.get()
    assert version.planned_questions == [
        {"text": "Who made you?", "probes": ["When?", "Why?"]},
        {"text": "Do you have values?", "probes": []},
    ]


def test_a_probe_before_any_question_is_refused_with_its_line(project, analyst, client_for):
    response = client_for(analyst).post(
        url("guide_create", project), {"name": "X", "opening_prompt": "Hi", "planned_questions": "\n- orphan probe"}
    )
    assert response.status_code == 400
    assert "Line 2: a probe (“orphan probe”) must come after its question." in response.content.decode()
    assert not Guide.objects.filter(name="X").exists()


def test_editing_a_guide_creates_a_new_version(project, analyst, guide, client_for):
    data = {"name": "Values", "opening_prompt": "What is justice?", "planned_questions": "Q1"}
    response = client_for(analyst).post(url("guide", project, guide_uuid=guide.uuid), data)
    assert response.status_code == 302
    assert list(guide.versions.values_list("number", "opening_prompt")) == [
        (2, "What is justice?"),
        (1, "What does fairness mean to you?"),
    ]


def test_guide_writes_are_404_for_outsiders_and_403_for_viewers(project, guide, viewer, outsider, client_for):
    data = {"name": "Values", "opening_prompt": "Changed"}
    assert client_for(outsider).post(url("guide", project, guide_uuid=guide.uuid), data).status_code == 404
    assert client_for(viewer).post(url("guide", project, guide_uuid=guide.uuid), data).status_code == 403
    assert client_for(viewer).post(url("guide_create", project), data).status_code == 403
    assert client_for(outsider).get(url("guides", project)).status_code == 404
    assert guide.versions.count() == 1
    assert client_for(viewer).get(url("guide", project, guide_uuid=guide.uuid)).status_code == 200


def test_guide_list_queries_do_not_grow_with_guides(project, owner, viewer, client_for, django_assert_num_queries):
    for i in range(5):
        services.guide_create(project=project, user=owner, name=f"G{i}", opening_prompt="Hi")
    client = client_for(viewer)
    # session, user, membership+project, guides with version counts, unread-mentions badge
    with django_assert_num_queries(5):
        response = client.get(url("guides", project))
    assert response.status_code == 200 and "G4" in response.content.decode()


# -- endpoints and keys -----------------------------------------------------------------


def test_member_configures_a_live_participant(project, owner, analyst, client_for):
    key = services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key="sk-abcdefgh1234",
                                      base_url="http://localhost:11434/v1")
    response = client_for(analyst).post(
        url("participant_create", project),
        {
            "label": "Llama local",
            "provider": "Ollama",
            "model_id": "llama3.1:8b",
            "base_url": "",
            "temperature": "0.7",
            "top_p": "",
            "seed": "42",
            "max_tokens": "800",
            "timeout_seconds": "90",
            "key": str(key.uuid),
        },
    )
    assert response.status_code == 302
    participant = Participant.objects.get(project=project, label="Llama local")
    assert participant.is_live and participant.model_id == "llama3.1:8b" and participant.seed == 42
    assert participant.top_p is None and participant.temperature == 0.7
    assert participant.base_url == "http://localhost:11434/v1"  # the key's endpoint
    endpoint = LiveEndpoint.objects.get(participant=participant)
    assert endpoint.api_key == key and endpoint.key_source == "project" and endpoint.timeout_seconds == 90


STREAM_CHECKBOX_TICKED = re.compile(r'<input type="checkbox" name="stream_answers"[^>]* checked>')


def test_member_turns_streaming_off_and_sees_what_the_endpoint_refused(project, analyst, live, client_for):
    participant = live("Batch", "batch")
    data = {"label": "Batch", "model_id": "batch", "base_url": participant.base_url, "timeout_seconds": "60",
            "key": "none"}
    client = client_for(analyst)
    page = client.get(url("participant_edit", project, participant_uuid=participant.uuid)).content.decode()
    assert STREAM_CHECKBOX_TICKED.search(page) and "Learned from" not in page

    assert client.post(url("participant_edit", project, participant_uuid=participant.uuid), data).status_code == 302

    endpoint = LiveEndpoint.objects.get(participant=participant)
    assert endpoint.stream_answers is False
    LiveEndpoint.objects.filter(pk=endpoint.pk).update(send_stream_options=False)
    page = client.get(url("participant_edit", project, participant_uuid=participant.uuid)).content.decode()
    assert 'name="stream_answers"' in page and not STREAM_CHECKBOX_TICKED.search(page)
    assert "it rejects stream_options" in page


def test_bad_endpoint_settings_get_inline_errors(project, analyst, client_for):
    response = client_for(analyst).post(
        url("participant_create", project),
        {"label": "X", "model_id": "", "temperature": "3", "timeout_seconds": "60", "key": "none"},
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "This field is required." in body and "less than or equal to 2" in body
    assert not Participant.objects.filter(label="X").exists()


def test_a_metadata_service_address_is_refused_as_endpoint(project, analyst, client_for):
    response = client_for(analyst).post(
        url("participant_create", project),
        {"label": "X", "model_id": "m", "base_url": "http://169.254.169.254/v1", "timeout_seconds": "60", "key": "none"},
    )
    assert response.status_code == 400 and "169.254.169.254 is a link-local address" in response.content.decode()
    assert not Participant.objects.filter(label="X").exists()


def test_a_stored_key_is_only_ever_shown_as_a_hint(project, owner, viewer, client_for):
    response = client_for(owner).post(url("key_create", project), {
        "label": "Lab", "plain_key": "sk-proj-supersecret-WXYZ", "base_url": "http://127.0.0.1:8199/v1"})
    assert response.status_code == 302
    key = EndpointKey.objects.get(project=project)
    assert key.reveal() == "sk-proj-supersecret-WXYZ"
    assert "supersecret" not in key.encrypted
    page = client_for(viewer).get(url("participants", project)).content.decode()
    assert "sk-…WXYZ" in page and "supersecret" not in page


def test_key_writes_are_404_for_outsiders_and_403_for_viewers_and_analysts(
    project, owner, analyst, viewer, outsider, client_for
):
    data = {"label": "Lab", "plain_key": "sk-123456789", "base_url": "http://127.0.0.1:8199/v1"}
    assert client_for(outsider).post(url("key_create", project), data).status_code == 404
    assert client_for(viewer).post(url("key_create", project), data).status_code == 403
    # Analysts choose among keys; only owners decide where one may be sent.
    assert client_for(analyst).post(url("key_create", project), data).status_code == 403
    key = services.endpoint_key_store(project=project, user=owner, label="Keep", plain_key="sk-keep-0000",
                                      base_url="http://127.0.0.1:8199/v1")
    assert client_for(viewer).post(url("key_delete", project, key_uuid=key.uuid)).status_code == 403
    assert client_for(analyst).post(url("key_delete", project, key_uuid=key.uuid)).status_code == 403
    assert client_for(outsider).post(url("key_delete", project, key_uuid=key.uuid)).status_code == 404
    assert list(EndpointKey.objects.values_list("label", flat=True)) == ["Keep"]
    assert client_for(viewer).post(url("participant_create", project), {"label": "X"}).status_code == 403


def test_participant_list_queries_do_not_grow(
    project, owner, viewer, live, fake_openai, client_for, django_assert_num_queries
):
    key = services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key="sk-lab-000011112222",
                                      base_url=fake_openai.base_url)
    for i in range(4):
        live(f"M{i}", f"m{i}", api_key=key)
    client = client_for(viewer)
    # session, user, membership+project, participants with endpoint+key, keys with usage counts, unread-mentions badge
    with django_assert_num_queries(6):
        response = client.get(url("participants", project))
    assert response.content.decode().count("sk-…2222") == 5


# -- starting and conducting ----------------------------------------------------------------


def test_member_starts_a_session_with_several_models(project, analyst, guide, live, client_for):
    a, b = live("A", "model-a"), live("B", "model-b")
    response = client_for(analyst).post(
        url("home", project), {"guide": guide.uuid, "participants": [a.uuid, b.uuid]}
    )
    session = ConductSession.objects.get(project=project)
    assert response.status_code == 302 and response.url == url("session", project, session_uuid=session.uuid)
    assert session.seats.count() == 2
    assert Turn.objects.filter(interview__conduct_seat__session=session, speaker="participant", status="pending").count() == 2


def test_a_start_sent_twice_starts_one_session(project, analyst, guide, live, client_for):
    """A double click on "Start" would send the opening prompt to every model twice."""
    a = live("A", "model-a")
    client = client_for(analyst)
    key = re.search(r'name="submission_key" value="(\w+)"', client.get(url("home", project)).content.decode()).group(1)
    data = {"guide": guide.uuid, "participants": [a.uuid], "submission_key": key}
    first, second = client.post(url("home", project), data), client.post(url("home", project), data)
    session = ConductSession.objects.get(project=project)
    assert first.status_code == second.status_code == 302
    assert first.url == second.url == url("session", project, session_uuid=session.uuid)


def test_starting_needs_a_participant(project, analyst, guide, live, client_for):
    live("A", "model-a")
    response = client_for(analyst).post(url("home", project), {"guide": guide.uuid})
    assert response.status_code == 400 and "Pick at least one live participant." in response.content.decode()
    assert not ConductSession.objects.exists()


def test_session_writes_are_404_for_outsiders_and_403_for_viewers(project, session, guide, live, viewer, outsider, client_for):
    answer = Turn.objects.filter(speaker="participant").first()
    interview = session.seats.first().interview
    attempts = [
        (url("home", project), {"guide": guide.uuid, "participants": []}),
        (url("ask", project, session_uuid=session.uuid), {"text": "Hi", "to": "all"}),
        (url("check", project, session_uuid=session.uuid), {"index": 0, "checked": "on"}),
        (url("end", project, session_uuid=session.uuid), {}),
        (url("retry", project, turn_uuid=answer.uuid), {}),
        (url("stop", project, turn_uuid=answer.uuid), {}),
        (url("rerun", project, interview_uuid=interview.uuid), {"participant": live("C", "c").uuid}),
    ]
    for target, data in attempts:
        assert client_for(outsider).post(target, data).status_code == 404, target
        assert client_for(viewer).post(target, data).status_code == 403, target
    assert Turn.objects.count() == 4 and ConductSession.objects.count() == 1
    session.refresh_from_db()
    assert session.checked_questions == [] and session.ended_at is None
    assert client_for(outsider).get(url("session", project, session_uuid=session.uuid)).status_code == 404
    assert client_for(outsider).get(url("turn", project, turn_uuid=answer.uuid)).status_code == 404
    assert client_for(viewer).get(url("session", project, session_uuid=session.uuid)).status_code == 200


def test_a_question_to_one_model_is_saved_before_its_answer(
    project, analyst, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("model-a", answer=["Opening A.", "Follow-up A."])
    fake_openai.script("model-b", answer="Opening B.")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(
            project=project, user=analyst, guide_version=guide.versions.get(), participants=[live("A", "model-a"), live("B", "model-b")]
        )
    a = session.seats.get(position=0).interview

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(
            url("ask", project, session_uuid=session.uuid), {"text": "Say more, A.", "to": str(a.uuid)}, **HTMX
        )

    body = response.content.decode()
    assert response.status_code == 200
    assert f'id="transcript-{a.uuid}"' in body and 'hx-swap-oob="true"' in body
    assert "Say more, A." in body
    assert list(a.turns.order_by("position").values_list("text", flat=True))[2:] == ["Say more, A.", "Follow-up A."]
    b = session.seats.get(position=1).interview
    assert b.turns.count() == 2, "the other model was not asked"


def test_asking_while_an_answer_arrives_is_refused_next_to_the_box(project, analyst, session, client_for):
    response = client_for(analyst).post(url("ask", project, session_uuid=session.uuid), {"text": "Next", "to": "all"}, **HTMX)
    assert response.status_code == 200
    assert "Still answering: A, B. Wait for the answer or stop it first." in response.content.decode()
    assert Turn.objects.filter(text="Next").count() == 0


def test_ticking_a_planned_question(project, analyst, session, client_for):
    response = client_for(analyst).post(url("check", project, session_uuid=session.uuid), {"index": 1, "checked": "on"}, **HTMX)
    assert response.status_code == 200 and 'id="checklist"' in response.content.decode()
    session.refresh_from_db()
    assert session.checked_questions == [1]
    assert client_for(analyst).post(url("check", project, session_uuid=session.uuid), {"index": 9}).status_code == 400


def test_session_page_queries_do_not_grow_with_turns(
    project, owner, viewer, guide, live, fake_openai, inline_answers, client_for, django_assert_num_queries,
    django_capture_on_commit_callbacks,
):
    participants = [live(f"M{i}", f"m{i}") for i in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=participants)
    interviews = [seat.interview for seat in session.seats.all()]
    for question in ("Why?", "How?"):
        with django_capture_on_commit_callbacks(execute=True):
            services.question_ask(session=session, interviews=interviews, text=question, user=owner)
    assert Turn.objects.count() == 18
    client = client_for(viewer)
    # session, user, membership+project, conduct session+guide, seats+interviews+participants,
    # turns+answer jobs (a viewer gets no re-run menu, so no participant list), unread-mentions badge
    with django_assert_num_queries(7):
        response = client.get(url("session", project, session_uuid=session.uuid))
    assert response.status_code == 200 and response.content.decode().count("Provenance") == 9


def test_the_turn_fragment_polls_only_while_the_answer_is_arriving(
    project, viewer, session, client_for, django_assert_num_queries
):
    answer = Turn.objects.filter(speaker="participant").first()
    client = client_for(viewer)
    # session, user, membership+project, turn+job+seat+session
    with django_assert_num_queries(4):
        body = client.get(url("turn", project, turn_uuid=answer.uuid), **HTMX).content.decode()
    assert 'hx-trigger="every 300ms"' in body and "Waiting for the model" in body
    Turn.objects.filter(pk=answer.pk).update(status="complete", text="Done.")
    answer.answer_job.state = "done"
    answer.answer_job.save()
    body = client.get(url("turn", project, turn_uuid=answer.uuid), **HTMX).content.decode()
    assert "hx-trigger" not in body and "Done." in body


def test_stop_then_retry_through_the_page(
    project, analyst, session, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("model-a", answer="Retried answer.")
    answer = Turn.objects.get(interview__participant__label="A", speaker="participant")
    client = client_for(analyst)
    body = client.post(url("stop", project, turn_uuid=answer.uuid), **HTMX).content.decode()
    assert "Interrupted" in body and "Retry" in body
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url("retry", project, turn_uuid=answer.uuid), **HTMX)
    answer.refresh_from_db()
    assert answer.status == "complete" and answer.text == "Retried answer."
    body = client.get(url("turn", project, turn_uuid=answer.uuid), **HTMX).content.decode()
    assert "Provenance" in body and "Retried answer." in body


def test_provenance_panel_shows_request_and_response_but_no_key(
    project, analyst, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("m", answer="Hello.", model_id="m-2026-01-01", system_fingerprint="fp_xyz")
    key = services.endpoint_key_store(project=project, user=analyst, label="Lab", plain_key="sk-never-show-me-42",
                                      base_url=fake_openai.base_url)
    fake_openai.api_key = "sk-never-show-me-42"
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=analyst, guide_version=guide.versions.get(), participants=[live("M", "m", api_key=key)])
    body = client_for(analyst).get(url("session", project, session_uuid=session.uuid)).content.decode()
    assert "m-2026-01-01" in body and "fp_xyz" in body and "You are taking part in a research interview." in body
    assert "never-show-me" not in body
    answer = Turn.objects.get(speaker="participant")
    assert "never-show-me" not in json.dumps(answer.metadata)


def test_provenance_panel_shows_the_mode_and_fallbacks_taken(
    project, analyst, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("old", answer="Hello.", rejects_stream_options=True)
    fake_openai.script("batch", answer="Whole.")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(
            project=project, user=analyst, guide_version=guide.versions.get(),
            participants=[live("Old", "old"), live("Batch", "batch", stream_answers=False)],
        )
    body = client_for(analyst).get(url("session", project, session_uuid=session.uuid)).content.decode()
    assert "fallback after attempt 1: omit_stream_options" in body
    assert "Unrecognized request argument supplied: stream_options" in body
    assert "no chunk carried usage" in body
    assert "(whole answer at once)" in body and "Stream answers” setting is off" in body


def test_a_refused_parameter_is_quoted_once_on_the_failed_turn(
    project, analyst, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("o", status=400, error_message="'seed' is not supported here.", error_param="seed")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(
            project=project, user=analyst, guide_version=guide.versions.get(), participants=[live("O", "o", seed=1)]
        )
    body = client_for(analyst).get(url("session", project, session_uuid=session.uuid)).content.decode()
    assert "refused the parameter &#x27;seed&#x27;" in body
    assert body.count("is not supported here.") == 1


def test_ending_through_the_page_segments_the_interviews(
    project, analyst, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks
):
    fake_openai.script("m", answer="One. Two.")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=analyst, guide_version=guide.versions.get(), participants=[live("M", "m")])
    response = client_for(analyst).post(url("end", project, session_uuid=session.uuid), follow=True)
    assert "ready to code" in response.content.decode()
    interview = session.seats.get().interview
    assert list(interview.segments.order_by("position").values_list("text", flat=True)) == [
        "What does fairness mean to you?", "One.", "Two."
    ]


def test_compare_shows_original_and_rerun_question_by_question(
    project, analyst, viewer, guide, live, fake_openai, inline_answers, client_for, django_capture_on_commit_callbacks,
    django_assert_num_queries,
):
    fake_openai.script("old", answer="Old answer.")
    fake_openai.script("new", answer="New answer.")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=analyst, guide_version=guide.versions.get(), participants=[live("Old", "old")])
    original = session.seats.get().interview
    new = live("New", "new")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(url("rerun", project, interview_uuid=original.uuid), {"participant": new.uuid})
    assert response.status_code == 302
    rerun = original.reruns.get()
    original_page = client_for(viewer).get(url("session", project, session_uuid=session.uuid)).content.decode()
    assert "Compare with 1 re-run" in original_page
    client = client_for(viewer)
    # session, user, membership+project, interview, original and re-runs, their turns, unread-mentions badge
    with django_assert_num_queries(7):
        body = client.get(url("compare", project, interview_uuid=rerun.uuid)).content.decode()
    # Both answers rendered; the one word that changed is marked on each side, the unchanged one is not.
    assert '<p><del class="word-changed">Old</del> answer.</p>' in body
    assert '<p><ins class="word-changed">New</ins> answer.</p>' in body and "original" in body


def test_compare_marks_the_changed_words_of_rendered_answers_and_only_those(project, viewer, client_for,
                                                                           django_assert_num_queries):
    from interviews.tests.factories import make_interview, make_participant

    model = make_participant(project, label="M")
    root = make_interview(project, model, [("interviewer", "Why?"), ("participant", "Home is **where** the heart is.\n\n- one\n- two & more")],
                          title="Root")
    rerun = make_interview(project, model, [("interviewer", "Why?"), ("participant", "Home is **where** the mind is.\n\n- one\n- three & more")],
                           title="Again", rerun_of=root)
    client = client_for(viewer)
    # session, user, membership+project, interview, the whole family, their turns, unread-mentions badge
    with django_assert_num_queries(7):
        body = client.get(url("compare", project, interview_uuid=rerun.uuid)).content.decode()
    assert "<p>Home is <strong>where</strong> the <ins class=\"word-changed\">mind</ins> is.</p>" in body
    assert "<li><ins class=\"word-changed\">three</ins> &amp; more</li>" in body
    assert "<p>Home is <strong>where</strong> the <del class=\"word-changed\">heart</del> is.</p>" in body
    assert "<li><del class=\"word-changed\">two</del> &amp; more</li>" in body
    assert body.count('class="word-changed"') == 4 + 2  # the four marks and the two in the legend
    assert "**" not in body


def test_compare_with_several_reruns_marks_each_against_the_original(project, viewer, client_for):
    from interviews.tests.factories import make_interview, make_participant

    model = make_participant(project, label="M")
    root = make_interview(project, model, [("interviewer", "Why?"), ("participant", "Same words here.")], title="Root")
    make_interview(project, model, [("interviewer", "Why?"), ("participant", "Same words there.")], title="A", rerun_of=root)
    make_interview(project, model, [("interviewer", "Why?"), ("participant", "Same words here.")], title="B", rerun_of=root)
    body = client_for(viewer).get(url("compare", project, interview_uuid=root.uuid)).content.decode()
    assert '<p>Same words <ins class="word-changed">there.</ins></p>' in body
    assert body.count("<p>Same words here.</p>") == 2  # the original (several re-runs: unmarked) and the identical re-run


def test_compare_from_a_rerun_of_a_rerun_starts_at_the_root_original(project, viewer, client_for, django_assert_num_queries):
    from interviews.tests.factories import make_interview, make_participant

    model = make_participant(project, label="M")

    def interview(title: str, rerun_of=None):
        return make_interview(project, model, [("interviewer", "Why?"), ("participant", f"{title} says so.")],
                              title=title, rerun_of=rerun_of)

    root = interview("Root")
    middle = interview("Middle", rerun_of=root)
    leaf = interview("Leaf", rerun_of=middle)
    sibling = interview("Sibling", rerun_of=root)
    interview("Unrelated")
    client = client_for(viewer)
    family = ["Root", "Middle", "Leaf", "Sibling"]  # the root original first, then the re-runs in the order they ran
    for start in (leaf, middle, root, sibling):
        # session, user, membership+project, interview, the whole family (one recursive query), their turns, unread-mentions badge
        with django_assert_num_queries(7):
            response = client.get(url("compare", project, interview_uuid=start.uuid))
        assert [iv.title for iv in response.context["interviews"]] == family, start.title
    body = response.content.decode()
    assert body.count('<span class="badge">original</span>') == 1 and "<p>Root says so.</p>" in body
    assert '<p><ins class="word-changed">Leaf</ins> says so.</p>' in body  # each re-run marked against the root


def test_compare_leaves_out_trashed_interviews_and_other_projects(project, owner, viewer, client_for):
    import datetime as dt

    from interviews.models import Interview
    from interviews.tests.factories import make_interview, make_participant
    from projects.models import Membership, Project, Role

    model = make_participant(project, label="M")
    root = make_interview(project, model, [("interviewer", "Why?")], title="Root")
    middle = make_interview(project, model, [("interviewer", "Why?")], title="Middle", rerun_of=root)
    leaf = make_interview(project, model, [("interviewer", "Why?")], title="Leaf", rerun_of=middle)
    Interview.objects.filter(pk=middle.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    response = client_for(viewer).get(url("compare", project, interview_uuid=leaf.uuid))
    assert [iv.title for iv in response.context["interviews"]] == ["Root", "Leaf"]
    other = Project.objects.create(name="Other", created_by=owner)
    Membership.objects.create(project=other, user=viewer, role=Role.VIEWER)
    assert client_for(viewer).get(url("compare", other, interview_uuid=leaf.uuid)).status_code == 404


def test_conduct_home_queries_do_not_grow_with_sessions(project, owner, viewer, guide, live, client_for, django_assert_num_queries):
    participants = [live("A", "a"), live("B", "b")]
    for _ in range(4):
        services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=participants)
    client = client_for(viewer)
    # session, user, membership+project, guides (exists), participants (exists), sessions with counts, whether a
    # participant needs the deployment's key, unread-mentions badge
    with django_assert_num_queries(8):
        response = client.get(url("home", project))
    assert response.content.decode().count("Values v1") == 4


def test_conduct_home_warns_of_the_missing_deployment_key_only_when_a_participant_uses_it(project, owner, guide, live,
                                                                                        client_for, settings):
    from conduct.models import LiveEndpoint

    settings.OPENAI_API_KEY = ""
    participant = live("A", "a")
    client = client_for(owner)
    assert "OPENAI_API_KEY is not set" not in client.get(url("home", project)).content.decode()
    LiveEndpoint.objects.filter(participant=participant).update(key_source=LiveEndpoint.KeySource.DEPLOYMENT)
    assert "A participant uses the deployment's key, but OPENAI_API_KEY is not set" in client.get(
        url("home", project)).content.decode()
    settings.OPENAI_API_KEY = "sk-deployment"
    assert "OPENAI_API_KEY is not set" not in client.get(url("home", project)).content.decode()


def test_guide_detail_queries_do_not_grow_with_versions(project, owner, viewer, guide, client_for, django_assert_num_queries):
    for i in range(4):
        services.guide_revise(guide=guide, user=owner, name="Values", opening_prompt=f"Version {i + 2}?")
    client = client_for(viewer)
    # session, user, membership+project, guide, versions with interview counts and authors, unread-mentions badge
    with django_assert_num_queries(6):
        response = client.get(url("guide", project, guide_uuid=guide.uuid))
    assert response.status_code == 200 and "Version 5?" in response.content.decode()


def test_a_backoff_wait_is_explained_while_nothing_arrives(project, viewer, session, client_for):
    from django.utils import timezone

    answer = Turn.objects.filter(speaker="participant").first()
    note = {"message": "http://x is rate limiting requests (429).", "kind": "rate_limited", "wait_seconds": 2.5, "attempt": 2}
    Turn.objects.filter(pk=answer.pk).update(status="streaming", metadata={"retrying": note})
    answer.answer_job.state, answer.answer_job.heartbeat_at = "running", timezone.now()
    answer.answer_job.save()
    body = client_for(viewer).get(url("turn", project, turn_uuid=answer.uuid), **HTMX).content.decode()
    assert "Retrying (attempt 2) after waiting 2.5 s" in body and "rate limiting requests (429)" in body
    assert 'hx-trigger="every 300ms"' in body


def test_conducting_from_a_guide_page_preselects_that_guide(project, analyst, guide, live, client_for):
    from conduct.services import guide_create

    live("A", "model-a")
    other = guide_create(project=project, user=analyst, name="Another", opening_prompt="Hello?")
    client = client_for(analyst)
    page = client.get(url("guide", project, guide_uuid=other.uuid)).content.decode()
    link = re.search(r'href="([^"]*\?guide=[^"]+)"', page).group(1)
    start = client.get(link).content.decode()
    assert re.search(rf'<option value="{other.uuid}" selected>Another</option>', start)
    assert not re.search(rf'<option value="{guide.uuid}" selected>', start)
