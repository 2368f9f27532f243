"""The AI second reader against the local fake endpoint: coder, critic, review, agreement, permissions.

The fake endpoint answers structured-output requests with deterministic proposals, including
ones for a segment outside the window and a code outside the codebook, which must be dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from coding import reader, services
from coding.models import Code, Coding, ReaderStep, SuggestionRun
from conduct.answering import endpoint_for
from conduct.egress import EgressRefused
from conduct.services import live_participant_save
from conduct.testing.fake_openai import FakeOpenAIServer
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db

HALLUCINATED_SEGMENT, HALLUCINATED_CODE = 999_999_999, 424_242


def coder_answer(codes: dict[str, int]):
    """Belonging for home and belonging, Migration for two places, a doubtful and a weak one, two hallucinations."""
    def answer(body: dict) -> str:
        assert body["response_format"]["json_schema"]["name"] == "code_proposals"
        lines = dict(re.findall(r"^\[(\d+)\] (.*)$", body["messages"][1]["content"], re.M))
        proposals = []
        for segment_id, text in lines.items():
            rule = [("Home", "Belonging", "home is belonging"), ("Belonging", "Belonging", "names it"),
                    ("two places", "Migration", "between places"), ("Language", "Belonging", "maybe"),
                    ("Food", "Food", "weak")]
            for word, code, why in rule:
                if word in text:
                    proposals.append({"segment_id": int(segment_id), "code_id": codes[code], "rationale": why,
                                      "evidence": word})
        first = int(next(iter(lines)))
        proposals += [
            {"segment_id": HALLUCINATED_SEGMENT, "code_id": codes["Belonging"], "rationale": "x", "evidence": "x"},
            {"segment_id": first + 2, "code_id": HALLUCINATED_CODE, "rationale": "x", "evidence": "x"},
        ]
        ideas = [{"name": "Slowness", "definition": "Time as a condition of belonging", "segment_ids": [first + 1],
                  "rationale": "recurs"}]
        return json.dumps({"proposals": proposals, "new_code_ideas": ideas})
    return answer


def critic_answer(codes: dict[str, int]):
    """Rejects the weak proposal, moves the doubtful one to Migration, keeps the rest."""
    def answer(body: dict) -> str:
        assert body["response_format"]["json_schema"]["name"] == "proposal_verdicts"
        listed = json.loads(body["messages"][1]["content"].split("Proposals (JSON):\n", 1)[1])
        verdicts = []
        for item in listed:
            named = {"proposal": item["proposal"], "segment_id": item["segment_id"], "code_id": item["code_id"]}
            if item["rationale"] == "weak":
                verdicts.append(named | {"verdict": "reject", "new_code_id": None, "reason": "Food is not identity here."})
            elif item["rationale"] == "maybe":
                verdicts.append(named | {"verdict": "change", "new_code_id": codes["Migration"],
                                         "reason": "Language is about moving between places."})
            else:
                verdicts.append(named | {"verdict": "keep", "new_code_id": None, "reason": "Fits."})
        return json.dumps({"verdicts": verdicts})
    return answer


@pytest.fixture
def endpoint_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def codes(make_code) -> dict[str, int]:
    return {name: make_code(name, definition=f"{name} as the participant sees it").pk
            for name in ("Belonging", "Migration", "Food")}


@pytest.fixture
def reading(project, owner, codes, endpoint_server, settings):
    """The second reader enabled on a live participant answering from the fake endpoint."""
    settings.READER_EAGER_IN_THREAD = False
    endpoint_server.script("coder-critic", answer=lambda body: (
        coder_answer(codes) if body["response_format"]["json_schema"]["name"] == "code_proposals"
        else critic_answer(codes))(body))
    participant = live_participant_save(
        project=project, participant=None, label="Reader", provider="Fake", model_id="coder-critic",
        base_url=endpoint_server.base_url, temperature=0, top_p=None, seed=1, max_tokens=None,
        timeout_seconds=5, api_key=None,
    )
    reader.reader_settings_save(project=project, user=owner, enabled=True, endpoint=participant, local_only=False)
    return participant


def decide(project, suggestion, user, *, accept: bool = True, reason: str = ""):
    return services.suggestion_decide(project_uuid=project.uuid, suggestion_uuid=suggestion.uuid, user_id=user.pk,
                                      accept=accept, reason=reason)


def start(project, user, interviews, django_capture_on_commit_callbacks, **options) -> SuggestionRun:
    with django_capture_on_commit_callbacks(execute=True):
        run = reader.run_start(project=project, user=user, interviews=interviews, new_code_ideas=True, **options)
    run.refresh_from_db()
    return run


def test_a_run_keeps_what_survives_the_critic_and_drops_hallucinations(
    project, analyst, interview, participant_segments, codes, reading, endpoint_server,
    django_capture_on_commit_callbacks,
):
    s = participant_segments
    assert [seg.text for seg in s] == ["Home is where people know you.", "Belonging grows slowly.",
                                       "It needs time and trust.", "They often feel between two places.",
                                       "Language matters a lot.", "Food too.", "Nobody chooses alone."]
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)

    assert run.status == SuggestionRun.Status.DONE
    made = {(x.segment_id, x.code_id): x for x in run.suggestions.all()}
    assert set(made) == {(s[0].pk, codes["Belonging"]), (s[1].pk, codes["Belonging"]), (s[3].pk, codes["Migration"]),
                         (s[4].pk, codes["Migration"]), (s[5].pk, codes["Food"])}
    changed = made[(s[4].pk, codes["Migration"])]
    assert changed.critic_verdict == "changed" and changed.proposed_code_id == codes["Belonging"]
    assert made[(s[5].pk, codes["Food"])].critic_verdict == "rejected"
    assert made[(s[0].pk, codes["Belonging"])].critic_verdict == "kept"
    assert all(x.status == "pending" and x.model == "coder-critic" for x in made.values())
    assert reader.dropped_counts(run) == {"segment not in the window": 1, "code not in the codebook": 1}
    assert [idea.name for idea in run.code_ideas.all()] == ["Slowness"]
    assert not Coding.objects.exists()  # nothing is coded until a person accepts
    steps = list(run.steps.values_list("agent", "ok"))
    assert steps == [("coder", True), ("critic", True)]
    step = run.steps.get(agent="coder")
    assert step.request["messages"][0]["role"] == "system" and "Belonging" in step.request["messages"][1]["content"]
    assert step.provenance["model_returned"] == "coder-critic"
    assert AuditEvent.objects.filter(target_type="suggestionrun").exists()


def test_a_window_run_twice_or_after_a_crash_asks_and_keeps_nothing_twice(
    project, analyst, interview, codes, reading, endpoint_server, django_capture_on_commit_callbacks, settings,
):
    settings.READER_EAGER_IN_THREAD = True  # start it, but run the window by hand below
    from config.celery import app

    app.conf.task_always_eager = False  # nothing is sent: no worker runs the windows here
    try:
        with django_capture_on_commit_callbacks(execute=False):
            run = reader.run_start(project=project, user=analyst, interviews=[interview])
    finally:
        app.conf.task_always_eager = True
    # A worker that died after keeping the coder's answer: the redelivered task asks only the critic.
    segments = reader._window_segments(run, 0)
    reader._step(run, 0, ReaderStep.Agent.CODER, lambda: reader._coder_messages(run, segments), reader.CODER_SCHEMA)
    assert len(endpoint_server.chat_requests()) == 1
    reader.window_run(run.pk, 0)
    reader.window_run(run.pk, 0)
    assert len(endpoint_server.chat_requests()) == 2
    assert run.suggestions.count() == 5 and run.code_ideas.count() == 1


def test_a_window_the_coder_proposes_nothing_for_asks_no_critic_and_the_run_shows_complete(
    project, analyst, interview, codes, reading, endpoint_server, django_capture_on_commit_callbacks,
):
    endpoint_server.script("coder-critic", answer=json.dumps({"proposals": [], "new_code_ideas": []}))
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    assert run.status == SuggestionRun.Status.DONE and len(endpoint_server.chat_requests()) == 1
    assert reader.progress(run) == {"windows": 1, "kept": 1, "steps": 1, "total_steps": 1, "percent": 100,
                                     "failed": 0, "failed_coder": 0, "failed_critic": 0, "failed_windows": 0,
                                     "errors": []}


def test_a_cancelled_run_sends_nothing_more(project, analyst, interview, codes, reading, endpoint_server,
                                            django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=analyst, interviews=[interview])
    reader.run_cancel(run=run, user=analyst)
    assert reader.window_run(run.pk, 0) == "cancelled"
    assert endpoint_server.chat_requests() == []


def test_a_run_cancelled_while_the_coder_answers_asks_no_critic(project, analyst, interview, codes, reading, endpoint_server,
                                                               django_capture_on_commit_callbacks, monkeypatch):
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=analyst, interviews=[interview], with_critic=True)
    ask = reader._step

    def coder_then_cancel(run_, window, agent, *args):  # the researcher presses Cancel while the coder answers
        step = ask(run_, window, agent, *args)
        if agent == ReaderStep.Agent.CODER:
            reader.run_cancel(run=run, user=analyst)
        return step

    monkeypatch.setattr(reader, "_step", coder_then_cancel)
    assert reader.window_run(run.pk, 0) == "cancelled"
    asked = [request.body["response_format"]["json_schema"]["name"] for request in endpoint_server.chat_requests()]
    assert asked == ["code_proposals"] and not run.suggestions.exists()


def test_a_run_whose_requests_failed_says_so_and_why(project, analyst, interview, codes, reading, endpoint_server,
                                                     django_capture_on_commit_callbacks, client_for):
    endpoint_server.script("coder-critic", status=500)
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    progress = reader.progress(run)
    assert progress["failed"] == progress["steps"] == 1 and "(500)" in progress["errors"][0]
    page = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid])).content.decode()
    assert "1 of them with an error" in page and "1 request failed: “" in page
    assert "1 of the coder's: the sentences of its window got no suggestions, which is not the same as the model " \
           "finding none" in page


def test_the_reader_is_off_until_an_owner_enables_it(project, owner, analyst, interview, codes, endpoint_server):
    with pytest.raises(ValidationError, match="off for this project"):
        reader.run_start(project=project, user=analyst, interviews=[interview])
    public = live_participant_save(
        project=project, participant=None, label="Public", provider="", model_id="m", base_url="http://93.184.215.14/v1",
        temperature=None, top_p=None, seed=None, max_tokens=None, timeout_seconds=5, api_key=None)
    with pytest.raises(ValidationError, match="only to local endpoints"):
        reader.reader_settings_save(project=project, user=owner, enabled=True, endpoint=public, local_only=True)
    assert endpoint_server.requests == []


def test_accepting_makes_a_coding_of_the_reviewer_and_rejecting_keeps_the_reason(
    project, analyst, interview, codes, reading, django_capture_on_commit_callbacks,
):
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    first, second, *rest = run.suggestions.order_by("segment__position", "code_id")
    assert decide(project, first, analyst).status == "accepted"
    coding = Coding.objects.get()
    assert (coding.coder, coding.origin, coding.suggestion_id, coding.code_id, coding.segment_id) == (
        analyst, Coding.Origin.SUGGESTION, first.pk, first.code_id, first.segment_id)
    decide(project, second, analyst, accept=False, reason="Too literal")
    second.refresh_from_db()
    assert (second.status, second.reject_reason, second.decided_by) == ("rejected", "Too literal", analyst)
    again = decide(project, first, analyst)
    assert not again.decided and again.error == "This suggestion was already accepted."
    assert Coding.objects.count() == 1
    events = AuditEvent.objects.filter(target_type="suggestion").order_by("pk").values_list("action", "summary")
    assert list(events) == [("created", f"AI suggestion “{first.code.name}” accepted"),
                            ("changed", f"AI suggestion “{second.code.name}” rejected: Too literal")]


def test_accepting_announces_the_new_coding_to_open_pages_and_rejecting_does_not(
    project, analyst, interview, codes, reading, django_capture_on_commit_callbacks,
):
    from projects import live

    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    first, second, *rest = run.suggestions.order_by("segment__position", "code_id")
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        decide(project, first, analyst)
        decide(project, second, analyst, accept=False)
        decide(project, first, analyst)  # already accepted: nothing new
    events = [event for _id, event in live.broker().read(str(project.uuid), since, timeout=0.1).events]
    assert events == [{"kind": "coding", "interview": str(interview.uuid)}]


def test_the_rest_of_a_code_is_accepted_at_once_only_after_a_sample(
    project, analyst, make_interview, codes, reading, django_capture_on_commit_callbacks,
):
    interviews = [make_interview(title=f"I{i}", label=f"M{i}") for i in range(3)]
    run = start(project, analyst, interviews, django_capture_on_commit_callbacks)
    from coding.models import Code

    belonging = Code.objects.get(pk=codes["Belonging"])
    of_code = list(run.suggestions.filter(code=belonging).order_by("pk"))
    assert len(of_code) == 6
    with pytest.raises(ValidationError, match="Review at least 3"):
        services.suggestions_accept_rest(run=run, code=belonging, user=analyst)
    for suggestion in of_code[:3]:
        decide(project, suggestion, analyst)
    assert services.suggestions_accept_rest(run=run, code=belonging, user=analyst) == 3
    assert Coding.objects.filter(origin=Coding.Origin.SUGGESTION, code=belonging).count() == 6


def test_accepting_the_rest_leaves_what_the_critic_rejected_for_the_reviewer(
    project, analyst, make_interview, codes, reading, django_capture_on_commit_callbacks, client_for,
):
    from coding.models import Code, Suggestion

    interviews = [make_interview(title=f"I{i}", label=f"M{i}") for i in range(3)]
    run = start(project, analyst, interviews, django_capture_on_commit_callbacks)
    belonging = Code.objects.get(pk=codes["Belonging"])
    of_code = list(run.suggestions.filter(code=belonging).order_by("pk"))
    for suggestion in of_code[:3]:
        decide(project, suggestion, analyst)
    Suggestion.objects.filter(pk=of_code[3].pk).update(critic_verdict=Suggestion.Verdict.REJECTED)
    page = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid])).content.decode()
    assert "Accept the 2 remaining “Belonging”" in page and "the 1 the critic rejected stay for you to decide" in page
    assert services.suggestions_accept_rest(run=run, code=belonging, user=analyst) == 2
    of_code[3].refresh_from_db()
    assert of_code[3].status == Suggestion.Status.PENDING
    assert Coding.objects.filter(origin=Coding.Origin.SUGGESTION, code=belonging).count() == 5


def test_where_the_ai_and_a_researcher_differ_matches_hand_computed_figures(
    project, analyst, interview, participant_segments, codes, reading, django_capture_on_commit_callbacks,
):
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    s = participant_segments
    for segment, code in ((s[0], "Belonging"), (s[2], "Belonging"), (s[3], "Migration"), (s[4], "Migration")):
        Coding.objects.create(segment=segment, code_id=codes[code], coder=analyst, interview=interview)

    figures = reader.differences(run)

    rows = {row["code"]: row for row in figures["rows"]}
    assert set(rows) == {"Belonging", "Migration"}  # Food: the critic rejected it and nobody coded it
    belonging = rows["Belonging"]
    # 7 sentences; researcher {1, 3}, AI {1, 2}: p_o = 5/7, p_e = (2·2 + 5·5)/49 = 29/49.
    assert (belonging["units"], belonging["both"], belonging["researcher_only"], belonging["ai_only"]) == (7, 1, 1, 1)
    assert belonging["kappa"] == pytest.approx(0.3)  # (35/49 − 29/49) / (20/49)
    assert belonging["ac1"] == pytest.approx(15 / 29)  # π₁ = 2/7: p_e = 2·(2/7)(5/7) = 20/49
    assert belonging["iou"] == pytest.approx(30 / (30 + 23 + 24))  # characters of sentences 1 | 1, 2, 3
    z = 0.3 / math.sqrt((29 / 49) / (7 * 20 / 49))
    assert belonging["p_value"] == pytest.approx(0.5 * math.erfc(z / math.sqrt(2))) and belonging["like_chance"]
    migration = rows["Migration"]
    assert (migration["kappa"], migration["ac1"], migration["iou"]) == (1.0, 1.0, 1.0)
    assert migration["p_value"] == pytest.approx(0.5 * math.erfc(math.sqrt(140 / 29) / math.sqrt(2)))
    assert not migration["like_chance"]
    assert figures["critic_judged"] == 5 and figures["critic_overturned"] == 2
    assert {(d["code"], d["who"], d["text"]) for d in figures["disagreements"]} == {
        ("Belonging", "arjun", "It needs time and trust."), ("Belonging", "AI", "Belonging grows slowly.")}


# -- pages -----------------------------------------------------------------------------------


def test_settings_are_for_owners(project, owner, analyst, viewer, outsider, reading, client_for):
    url = reverse("coding:reader_settings", args=[project.uuid])
    data = {"enabled": "", "endpoint": str(reading.uuid)}
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(viewer).post(url, data).status_code == 403
    assert client_for(analyst).post(url, data).status_code == 403
    assert client_for(owner).post(url, data).status_code == 302
    assert not reader.reader_settings(project).enabled
    assert "Off: no transcript text is sent" in client_for(viewer).get(
        reverse("coding:reader", args=[project.uuid])).content.decode()


def test_starting_shows_the_estimate_first_then_starts(
    project, analyst, viewer, outsider, interview, codes, reading, endpoint_server, client_for,
    django_capture_on_commit_callbacks,
):
    url = reverse("coding:reader_start", args=[project.uuid])
    data = {"participants": [str(interview.participant.uuid)], "with_critic": "on"}
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(viewer).post(url, data).status_code == 403
    client = client_for(analyst)
    estimate = client.post(url, data)
    body = estimate.content.decode()
    assert estimate.status_code == 200 and "1 window: 2 requests" in body and endpoint_server.base_url in body
    assert not SuggestionRun.objects.exists() and endpoint_server.requests == []
    # A double click on Start sends the estimate page's form twice: one run, both answers lead to it.
    key = re.search(r'name="submission_key" value="(\w+)"', body).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(url, data | {"confirm": "start", "submission_key": key})
        again = client.post(url, data | {"confirm": "start", "submission_key": key})
    run = SuggestionRun.objects.get()
    assert started.status_code == 302 and started.url == reverse("coding:reader_run", args=[project.uuid, run.uuid])
    assert again.status_code == 302 and again.url == started.url
    assert client.post(url, {}).status_code == 400


def test_deciding_by_htmx_swaps_the_row_and_checks_roles(
    project, analyst, viewer, outsider, interview, codes, reading, client_for, django_capture_on_commit_callbacks,
):
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    suggestion = run.suggestions.order_by("pk").first()
    accept = reverse("coding:suggestion_decide", args=[project.uuid, suggestion.uuid, "accept"])
    assert client_for(outsider).post(accept).status_code == 404
    assert client_for(viewer).post(accept).status_code == 403
    response = client_for(analyst).post(accept, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Accepted by arjun" in response.content.decode()
    again = client_for(analyst).post(accept, HTTP_HX_REQUEST="true")
    assert again.status_code == 409 and "already accepted" in again.content.decode()
    bogus = reverse("coding:suggestion_decide", args=[project.uuid, suggestion.uuid, "delete"])
    assert client_for(analyst).post(bogus).status_code == 404


def test_the_review_queue_and_the_differ_page_take_constant_queries(
    project, analyst, viewer, make_interview, codes, reading, client_for, django_capture_on_commit_callbacks,
    django_assert_max_num_queries,
):
    def counted(run) -> dict[str, int]:
        client = client_for(viewer)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        counts = {}
        for name in ("reader_run", "reader_differ"):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(reverse(f"coding:{name}", args=[project.uuid, run.uuid])).status_code == 200
            counts[name] = len(queries)
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse("coding:reader", args=[project.uuid]))
        counts["reader"] = len(queries)
        return counts

    small = start(project, analyst, [make_interview(title="A", label="A")], django_capture_on_commit_callbacks)
    large = start(project, analyst, [make_interview(title=f"B{i}", label=f"B{i}") for i in range(4)],
                  django_capture_on_commit_callbacks)
    assert counted(small) == counted(large)
    page = client_for(viewer).get(reverse("coding:reader_run", args=[project.uuid, large.uuid])).content.decode()
    assert page.count("data-suggestion") == large.suggestions.filter(status="pending").count() == 20
    assert "data-accept" not in page  # viewers read, never decide


def test_the_coding_page_shows_pending_suggestions_as_dashed_chips_apart_from_codings(
    project, analyst, interview, participant_segments, codes, reading, client_for, django_capture_on_commit_callbacks,
):
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    page = client_for(analyst).get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    # Four survive the critic (the Food one was rejected by it); none is a researcher's chip.
    assert page.count('class="chip suggested"') == 4 and 'class="chip"' not in page
    assert "Critic (changed): Language is about moving between places." in page
    accepted = run.suggestions.get(segment=participant_segments[0])
    response = client_for(analyst).post(
        reverse("coding:suggestion_decide", args=[project.uuid, accepted.uuid, "accept"]), HTTP_ACCEPT="application/json")
    assert response.json() == {"status": "accepted", "error": ""}
    page = client_for(analyst).get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    assert page.count('class="chip suggested"') == 3 and page.count('class="chip mine"') == 1


def test_rejecting_many_of_a_code_offers_a_reflexive_memo_with_the_rejected_cases(
    project, analyst, make_interview, codes, reading, client_for, django_capture_on_commit_callbacks,
):
    run = start(project, analyst, [make_interview(title=f"I{i}", label=f"M{i}") for i in range(3)],
                django_capture_on_commit_callbacks)
    client = client_for(analyst)
    page_url = reverse("coding:reader_run", args=[project.uuid, run.uuid])
    belonging = list(run.suggestions.filter(code_id=codes["Belonging"]).order_by("pk"))
    for suggestion in belonging[:2]:
        decide(project, suggestion, analyst, accept=False, reason="Too literal")
    assert "refine its definition" not in client.get(page_url).content.decode()
    decide(project, belonging[2], analyst, accept=False)
    page = client.get(page_url).content.decode()
    link = re.search(r'href="([^"]*memos/new/[^"]*)"', page).group(1).replace("&amp;", "&")
    form = client.get(link).content.decode()
    assert "Refining “Belonging”" in form and "3 suggestions of “Belonging” were rejected" in form
    assert "“Home is where people know you.” — Too literal" in form


def test_a_suggestion_of_an_archived_code_cannot_be_accepted(
    project, owner, analyst, viewer, outsider, interview, codes, reading, django_capture_on_commit_callbacks,
):
    from coding.models import Code

    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    suggestion = run.suggestions.filter(code_id=codes["Belonging"]).first()
    services.code_archive(code=Code.objects.get(pk=codes["Belonging"]), actor=owner)
    refused = decide(project, suggestion, analyst)
    assert refused.error == "The code “Belonging” is archived or in the trash; it cannot be applied."
    suggestion.refresh_from_db()
    assert suggestion.status == "pending" and not Coding.objects.exists()
    assert decide(project, suggestion, analyst, accept=False).decided
    assert decide(project, suggestion, analyst, accept=False).error == "This suggestion was already rejected."
    # Outsiders and viewers decide nothing, whatever they send.
    other = run.suggestions.exclude(pk=suggestion.pk).first()
    as_viewer, as_outsider = decide(project, other, viewer), decide(project, other, outsider)
    assert (as_viewer.role, as_viewer.decided, as_outsider.role, as_outsider.found) == ("viewer", False, None, False)
    other.refresh_from_db()
    assert other.status == "pending"


def test_find_more_like_a_code_shows_only_it_with_its_coded_sentences_and_keeps_only_new_ones(
    project, owner, analyst, viewer, outsider, interview, participant_segments, codes, reading, endpoint_server,
    client_for, django_capture_on_commit_callbacks,
):
    s = participant_segments
    belonging = Code.objects.get(pk=codes["Belonging"])
    Coding.objects.create(segment=s[0], code=belonging, coder=owner, interview=interview)
    home = client_for(analyst).get(reverse("coding:reader", args=[project.uuid]), {"code": str(belonging.uuid)})
    assert "Find more like “Belonging”" in home.content.decode()
    assert "Find more like" not in client_for(analyst).get(
        reverse("coding:reader", args=[project.uuid]), {"code": "not-a-uuid"}).content.decode()
    detail = client_for(analyst).get(reverse("coding:code_detail", args=[project.uuid, belonging.uuid])).content.decode()
    assert f"?code={belonging.uuid}" in detail

    url = reverse("coding:reader_start", args=[project.uuid])
    data = {"code": str(belonging.uuid), "with_critic": "on"}  # no model ticked: every interview
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(viewer).post(url, data).status_code == 403
    assert "1 window" in client_for(analyst).post(url, data).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client_for(analyst).post(url, data | {"confirm": "start"})
    run = SuggestionRun.objects.get()
    assert run.focus_code == belonging
    sent = json.loads(run.steps.get(agent="coder").request["messages"][1]["content"]
                      .split("Codebook (JSON):\n", 1)[1].split("\n\n", 1)[0])
    assert [(c["name"], c["coded_examples"]) for c in sent] == [("Belonging", [s[0].text])]
    # The fake coder proposes Belonging for s[0] (already coded: not "more"), s[1] and s[4] (the critic's change
    # to Migration, a code not sent, is dropped); its other codes were not sent, so they are dropped too.
    assert set(run.suggestions.values_list("segment_id", "code_id")) == {(s[1].pk, belonging.pk),
                                                                          (s[4].pk, belonging.pk)}
    dropped = reader.dropped_counts(run)
    assert dropped["sentence already coded with the code"] == 1 and dropped["code not in the codebook"] >= 3
    runs = client_for(analyst).get(reverse("coding:reader", args=[project.uuid])).content.decode()
    assert "more like “Belonging”" in runs


def test_the_estimate_shows_the_cost_at_the_prices_the_owner_set(
    project, owner, analyst, interview, participant_segments, codes, reading, client_for,
):
    url = reverse("coding:reader_start", args=[project.uuid])
    data = {"participants": [str(interview.participant.uuid)], "with_critic": "on"}
    assert 'id="reader-cost"' not in client_for(analyst).post(url, data).content.decode()  # no prices: no cost
    settings_url = reverse("coding:reader_settings", args=[project.uuid])
    prices = {"enabled": "on", "endpoint": str(reading.uuid), "price_input_per_million": "2.50",
              "price_output_per_million": "10"}
    assert client_for(analyst).post(settings_url, prices).status_code == 403
    assert client_for(owner).post(settings_url, prices | {"price_input_per_million": "-1"}).status_code == 400
    assert client_for(owner).post(settings_url, prices).status_code == 302
    figures = reader.estimate(project, [interview])
    # 7 sentences, coder and critic: 7 × 30 × 2 output tokens.
    assert figures["output_tokens"] == 420
    expected = (Decimal("2.50") * figures["input_tokens"] + 10 * figures["output_tokens"]) / 1_000_000
    assert figures["cost"] == expected.quantize(Decimal("0.01"))
    body = client_for(analyst).post(url, data).content.decode()
    assert f'<strong id="reader-cost">{figures["cost"]}</strong>' in body and "420 output tokens" in body


def test_json_true_is_not_an_id_for_the_coder_or_the_critic():
    answer = {"proposals": [{"segment_id": True, "code_id": 1}, {"segment_id": 1, "code_id": True},
                            {"segment_id": 1, "code_id": 2, "rationale": "fits"}],
              "new_code_ideas": [{"name": "Idea", "segment_ids": [True, 1]}]}
    proposals, ideas, dropped = reader.parse_coder(ReaderStep(ok=True, raw_answer=json.dumps(answer)),
                                                   segment_ids={1}, code_ids={1, 2})
    assert [(p["segment_id"], p["code_id"]) for p in proposals] == [(1, 2)]
    assert dropped == {"proposal not in the schema": 2} and ideas[0]["segment_ids"] == [1]
    verdicts = {"verdicts": [{"proposal": True, "segment_id": 1, "code_id": 2, "verdict": "reject"},
                             {"proposal": 0, "segment_id": True, "code_id": 2, "verdict": "reject"},
                             {"proposal": 1, "segment_id": 1, "code_id": 2, "verdict": "change", "new_code_id": True},
                             {"proposal": 0, "segment_id": 1, "code_id": 2, "verdict": "keep"}]}
    judged, _ = reader.parse_critic(ReaderStep(ok=True, raw_answer=json.dumps(verdicts)),
                                    proposals=[{"segment_id": 1, "code_id": 2}] * 2, code_ids={1, 2})
    assert judged[0]["verdict"] == "keep" and judged[1]["verdict"] == "reject"  # a change to true is no change


# -- transcript text goes only where an owner approved ------------------------------------------------------------


def edit_url(participant, base_url: str, project, user) -> None:
    live_participant_save(project=project, participant=participant, label=participant.label, provider="Fake",
                          model_id="coder-critic", base_url=base_url, temperature=0, top_p=None, seed=1,
                          max_tokens=None, timeout_seconds=5, api_key=None)


def test_an_analyst_who_re_aims_the_readers_participant_sends_nothing_until_an_owner_approves(
        project, owner, analyst, interview, reading, endpoint_server, client_for, django_capture_on_commit_callbacks):
    with FakeOpenAIServer() as analysts_own:
        analysts_own.script("coder-critic", answer='{"proposals": [], "new_code_ideas": []}')
        response = client_for(analyst).post(
            reverse("conduct:participant_edit", args=[project.uuid, reading.uuid]),
            {"label": "Reader", "model_id": "coder-critic", "base_url": analysts_own.base_url, "timeout_seconds": "5",
             "key": "none"})
        assert response.status_code == 302
        with pytest.raises(ValidationError) as refused:
            reader.run_start(project=project, user=analyst, interviews=[interview])
        assert refused.value.messages == [
            f"The second reader's endpoint now sends to {analysts_own.base_url}, not to {endpoint_server.base_url}, "
            "which an owner approved. Nothing was sent: an owner saves the second reader's settings to approve where "
            "transcript text goes."]
        page = client_for(analyst).get(reverse("coding:reader", args=[project.uuid])).content.decode()
        assert 'id="reader-unapproved"' in page and analysts_own.base_url in page
        assert analysts_own.chat_requests() == [] and endpoint_server.chat_requests() == []
        # The owner saves the settings again: that approves the new URL, and runs go there.
        reading.refresh_from_db()
        reader.reader_settings_save(project=project, user=owner, enabled=True, endpoint=reading, local_only=False)
        with django_capture_on_commit_callbacks(execute=True):
            run = reader.run_start(project=project, user=analyst, interviews=[interview])
        assert run.endpoint_url == analysts_own.base_url and len(analysts_own.chat_requests()) >= 1
        assert endpoint_server.chat_requests() == []


def test_a_run_keeps_the_url_it_started_with_when_the_participant_is_edited_mid_run(
        project, owner, make_interview, reading, endpoint_server, django_capture_on_commit_callbacks):
    first, second = make_interview(title="one", label="A"), make_interview(title="two", label="B")
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=owner, interviews=[first, second], with_critic=False)
    assert len(run.windows) == 2
    reader.window_run(run.pk, 0)
    asked = len(endpoint_server.chat_requests())
    assert asked == 1
    with FakeOpenAIServer() as elsewhere:
        edit_url(reading, elsewhere.base_url, project, owner)
        reader.window_run(run.pk, 1)
        assert elsewhere.chat_requests() == [] and len(endpoint_server.chat_requests()) == asked
    step = ReaderStep.objects.get(run=run, window=1)
    assert not step.ok and step.error == (
        f"The endpoint now sends to {elsewhere.base_url}, not to {endpoint_server.base_url} where this run started; "
        "nothing more is sent. Start a new run to use the new endpoint.")


def test_local_only_is_checked_on_every_connection_of_a_run(project, owner, interview, reading, endpoint_server,
                                                           django_capture_on_commit_callbacks):
    reader.reader_settings_save(project=project, user=owner, enabled=True, endpoint=reading, local_only=True)
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=owner, interviews=[interview], with_critic=False)
    endpoint, error = reader._run_endpoint(run)
    assert error == "" and endpoint.egress.local_only
    assert not endpoint_for(reading).egress.local_only  # the participant's own interviews are not limited
    endpoint.egress.check_url(endpoint_server.base_url)  # the local endpoint still passes
    with pytest.raises(EgressRefused, match="not on this machine or a private network"):
        endpoint.egress.check_url("http://93.184.215.14/v1")  # checked on connecting, so a name resolving here is refused


def test_a_finished_runs_failed_windows_are_asked_again_in_the_same_run_without_repeating_what_was_kept(
        project, analyst, viewer, outsider, make_interview, codes, reading, endpoint_server,
        django_capture_on_commit_callbacks, client_for):
    first, second = make_interview(title="one", label="A"), make_interview(title="two", label="B")
    endpoint_server.scripts["coder-critic"].fail_times = 4  # every attempt of window 0's coder request: 500
    endpoint_server.scripts["coder-critic"].status = 500
    run = start(project, analyst, [first, second], django_capture_on_commit_callbacks)
    assert run.status == SuggestionRun.Status.DONE and reader.progress(run)["failed_windows"] == 1
    kept = set(run.suggestions.values_list("segment_id", "code_id"))
    assert kept and {s.interview_id for s in run.suggestions.all()} == {second.pk}
    for suggestion in run.suggestions.exclude(critic_verdict="rejected"):
        decide(project, suggestion, analyst)
    page = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid])).content.decode()
    assert "Ask the 1 failed window again" in page
    target = reverse("coding:reader_retry_failed", args=[project.uuid, run.uuid])
    assert client_for(outsider).post(target).status_code == 404
    assert client_for(viewer).post(target).status_code == 403
    asked = len(endpoint_server.chat_requests())
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(target, follow=True)
    assert "Asking the 1 failed window again." in response.content.decode()
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE and reader.progress(run)["failed"] == 0
    assert len(endpoint_server.chat_requests()) == asked + 2  # window 0's coder and critic only
    assert {s.interview_id for s in run.suggestions.all()} == {first.pk, second.pk}
    assert set(run.suggestions.filter(interview=second).values_list("segment_id", "code_id")) == kept
    with pytest.raises(ValidationError, match="No window of this run failed"):
        reader.run_retry_failed(run=run, user=analyst)
    assert AuditEvent.objects.filter(target_id=str(run.uuid), summary="AI suggestion run: 1 failed window asked again").exists()


# -- the codebook changing under a run --------------------------------------------------------------------------------


def coder_answered(run: SuggestionRun, window: int = 0) -> None:
    """The coder's answer for a window is kept, as a worker has it before it asks the critic."""
    segments = reader._window_segments(run, window)
    reader._step(run, window, ReaderStep.Agent.CODER, lambda: reader._coder_messages(run, segments), reader.CODER_SCHEMA)


def test_a_code_purged_from_the_trash_mid_run_drops_its_proposals_and_the_run_finishes(
        project, owner, analyst, interview, participant_segments, codes, reading, django_capture_on_commit_callbacks):
    from projects.trash import trash_move, trash_purge

    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=analyst, interviews=[interview])
    coder_answered(run)
    food = Code.objects.get(pk=codes["Food"])
    trash_move(obj=food, actor=owner)
    trash_purge(project=project, actor=owner, kind="code", uuid=food.uuid)

    assert reader.window_run(run.pk, 0) == "done"
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE
    s = participant_segments
    assert set(run.suggestions.values_list("segment_id", "code_id")) == {
        (s[0].pk, codes["Belonging"]), (s[1].pk, codes["Belonging"]), (s[3].pk, codes["Migration"]),
        (s[4].pk, codes["Migration"])}
    assert reader.dropped_counts(run)["code deleted since the run started"] == 1


def test_proposals_of_a_code_merged_mid_run_go_to_the_code_it_was_merged_into(
        project, owner, analyst, interview, participant_segments, codes, reading, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=analyst, interviews=[interview])
    coder_answered(run)
    services.code_merge(source=Code.objects.get(pk=codes["Belonging"]), target=Code.objects.get(pk=codes["Migration"]),
                        actor=owner)

    reader.window_run(run.pk, 0)
    s = participant_segments
    made = {(x.segment_id, x.code_id): x for x in run.suggestions.all()}
    assert set(made) == {(s[0].pk, codes["Migration"]), (s[1].pk, codes["Migration"]), (s[3].pk, codes["Migration"]),
                         (s[4].pk, codes["Migration"]), (s[5].pk, codes["Food"])}
    # The critic's change is still told: the coder proposed Belonging, now part of Migration.
    assert made[(s[4].pk, codes["Migration"])].proposed_code_id == codes["Belonging"]
    assert decide(project, made[(s[0].pk, codes["Migration"])], analyst).decided


# -- requests that fail ----------------------------------------------------------------------------------------------


def test_a_coder_answer_not_in_the_schema_fails_its_window_which_is_asked_again_and_left_out_of_the_differences(
        project, analyst, make_interview, codes, reading, endpoint_server, django_capture_on_commit_callbacks,
        client_for):
    first, second = make_interview(title="one", label="A"), make_interview(title="two", label="B")
    answers = iter(["Sorry, I cannot help with that.", json.dumps({"codes": []})])
    good = endpoint_server.scripts["coder-critic"].answer
    endpoint_server.script("coder-critic", answer=lambda body: next(answers, None) or good(body))
    run = start(project, analyst, [first, second], django_capture_on_commit_callbacks, with_critic=False)

    assert run.status == SuggestionRun.Status.DONE
    progress = reader.progress(run)
    assert (progress["failed"], progress["failed_windows"]) == (2, 2)
    assert progress["errors"] == ["The coder's answer was not JSON in the schema it was asked for."]
    assert not run.suggestions.exists() and reader.read_windows(run) == set()
    segment = first.segments.filter(speaker="participant").first()
    Coding.objects.create(segment=segment, code_id=codes["Belonging"], coder=analyst, interview=first)
    figures = reader.differences(run)
    assert figures["rows"] == [] and figures["unread"] == 14  # not 7 sentences the AI "decided" had no code
    page = client_for(analyst).get(reverse("coding:reader_differ", args=[project.uuid, run.uuid])).content.decode()
    assert "The AI did not read 14 sentences of this run" in page

    with django_capture_on_commit_callbacks(execute=True):
        assert reader.run_retry_failed(run=run, user=analyst) == [0, 1]
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE and reader.read_windows(run) == {0, 1}
    assert run.suggestions.exists() and reader.differences(run)["unread"] == 0
    assert reader.differences(run)["rows"][0]["units"] == 7  # the sentences of the interview the researcher coded


def test_a_failed_critic_leaves_marked_unchecked_suggestions_that_are_not_accepted_at_once_and_is_asked_again(
        project, analyst, viewer, outsider, make_interview, codes, reading, endpoint_server,
        django_capture_on_commit_callbacks, client_for):
    interviews = [make_interview(title=f"I{i}", label=f"M{i}") for i in range(3)]
    with django_capture_on_commit_callbacks(execute=False):
        run = reader.run_start(project=project, user=analyst, interviews=interviews, with_critic=True)
    for window in range(3):
        coder_answered(run, window)
    endpoint_server.scripts["coder-critic"].status = 500  # every critic request fails
    for window in range(3):
        reader.window_run(run.pk, window)
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE
    progress = reader.progress(run)
    assert (progress["failed_coder"], progress["failed_critic"], progress["failed_windows"]) == (0, 3, 3)
    assert set(run.suggestions.values_list("critic_verdict", flat=True)) == {""}
    client = client_for(analyst)
    page_url = reverse("coding:reader_run", args=[project.uuid, run.uuid])
    page = client.get(page_url).content.decode()
    assert "3 of the critic's: the suggestions of their windows are there but not checked by the critic" in page
    assert "got no suggestions" not in page
    assert page.count("data-unchecked") == run.suggestions.count() == 15

    belonging = Code.objects.get(pk=codes["Belonging"])
    of_code = list(run.suggestions.filter(code=belonging).order_by("pk"))
    for suggestion in of_code[:3]:
        decide(project, suggestion, analyst)
    page = client.get(page_url).content.decode()
    assert "remaining “Belonging”" not in page  # nothing checked is left to accept at once
    assert services.suggestions_accept_rest(run=run, code=belonging, user=analyst) == 0
    assert run.suggestions.filter(code=belonging, status="pending").count() == 6

    target = reverse("coding:reader_retry_failed", args=[project.uuid, run.uuid])
    assert client_for(outsider).post(target).status_code == 404
    assert client_for(viewer).post(target).status_code == 403
    endpoint_server.scripts["coder-critic"].status = None
    asked = len(endpoint_server.chat_requests())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(target, follow=True)
    assert "Asking the 3 failed windows again." in response.content.decode()
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE and reader.progress(run)["failed"] == 0
    asked_again = [r.body["response_format"]["json_schema"]["name"] for r in endpoint_server.chat_requests()[asked:]]
    assert asked_again == ["proposal_verdicts"] * 3  # the coder's answers were kept
    # Decided suggestions stay as they were; the others now carry the critic's verdicts, none twice.
    assert run.suggestions.filter(status="accepted").count() == 3
    assert not run.suggestions.filter(status="pending", critic_verdict="").exists()
    assert run.suggestions.filter(critic_verdict="rejected", code_id=codes["Food"]).count() == 3
    # The first window's "Language" sentence: accepted as Belonging unchecked, now also the critic's Migration to decide.
    assert run.suggestions.count() == 16 and run.code_ideas.count() == 3


# -- what the critic says, checked ------------------------------------------------------------------------------------


def test_critic_verdicts_must_name_their_proposal_and_collisions_are_counted_not_lost(
        project, analyst, interview, participant_segments, codes, reading, endpoint_server,
        django_capture_on_commit_callbacks, client_for):
    s = participant_segments
    proposed = [(s[0], "Belonging"), (s[0], "Migration"), (s[1], "Belonging"), (s[3], "Migration"), (s[5], "Food")]

    def answer(body: dict) -> str:
        if body["response_format"]["json_schema"]["name"] == "code_proposals":
            return json.dumps({"new_code_ideas": [], "proposals": [
                {"segment_id": segment.pk, "code_id": codes[code], "rationale": "r", "evidence": ""}
                for segment, code in proposed]})
        listed = json.loads(body["messages"][1]["content"].split("Proposals (JSON):\n", 1)[1])

        def verdict(index: int, verdict: str, named: int | None = None, new_code_id: int | None = None) -> dict:
            item = listed[index if named is None else named]
            return {"proposal": index, "segment_id": item["segment_id"], "code_id": item["code_id"], "verdict": verdict,
                    "new_code_id": new_code_id, "reason": verdict}
        return json.dumps({"verdicts": [
            verdict(0, "change", new_code_id=codes["Migration"]),  # onto proposal 1's sentence and code
            verdict(1, "keep"),
            verdict(2, "keep"), verdict(2, "reject"),  # judged twice
            verdict(3, "reject", named=4),  # numbered 3, but names proposal 4's sentence and code
            verdict(4, "reject"),
        ]})
    endpoint_server.script("coder-critic", answer=answer)
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)

    made = dict(((x.segment_id, x.code.name), x.critic_verdict) for x in run.suggestions.select_related("code"))
    assert made == {(s[0].pk, "Migration"): "kept", (s[1].pk, "Belonging"): "", (s[3].pk, "Migration"): "",
                    (s[5].pk, "Food"): "rejected"}
    assert reader.dropped_counts(run) == {
        "same sentence and code as another suggestion": 1, "critic's verdicts for a proposal judged more than once": 2,
        "critic's verdict naming another sentence or code than its proposal": 1}
    page = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid])).content.decode()
    assert "1 (same sentence and code as another suggestion)" in page
    assert page.count("data-unchecked") == 2


def test_a_critic_answer_kept_before_verdicts_named_their_proposal_is_read_by_number():
    old_schema = {"json_schema": {"schema": {"properties": {"verdicts": {"items": {
        "required": ["proposal", "verdict", "code_id", "reason"]}}}}}}
    answer = {"verdicts": [{"proposal": 0, "verdict": "change", "code_id": 2, "reason": "fits better"}]}
    step = ReaderStep(ok=True, raw_answer=json.dumps(answer), request={"messages": [], "response_format": old_schema})
    judged, dropped = reader.parse_critic(step, proposals=[{"segment_id": 1, "code_id": 1}], code_ids={1, 2})
    assert judged == {0: {"verdict": "change", "code_id": 2, "reason": "fits better"}} and not dropped


def test_merging_a_code_moves_its_pending_suggestions_to_the_target_once(
        project, owner, analyst, interview, participant_segments, codes, reading, django_capture_on_commit_callbacks):
    from coding.models import Suggestion

    s = participant_segments
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    # The coder proposed both codes for the first sentence: after the merge they are one suggestion.
    Suggestion.objects.create(run=run, segment=s[0], interview=interview, code_id=codes["Migration"], rationale="both")
    rejected = run.suggestions.get(segment=s[1], code_id=codes["Belonging"])
    decide(project, rejected, analyst, accept=False)
    belonging, migration = Code.objects.get(pk=codes["Belonging"]), Code.objects.get(pk=codes["Migration"])

    services.code_merge(source=belonging, target=migration, actor=owner)

    assert set(run.suggestions.filter(status="pending").values_list("segment_id", "code_id")) == {
        (s[0].pk, migration.pk), (s[3].pk, migration.pk), (s[4].pk, migration.pk), (s[5].pk, codes["Food"])}
    assert run.suggestions.get(segment=s[0]).rationale == "both"
    rejected.refresh_from_db()
    assert (rejected.code_id, rejected.status) == (belonging.pk, "rejected")  # decided as it was
    assert decide(project, run.suggestions.get(segment=s[0]), analyst).decided
    assert Coding.objects.get().code == migration


def test_a_suggestion_left_on_a_merged_code_names_the_code_it_went_into(
        project, owner, analyst, interview, participant_segments, codes, reading, django_capture_on_commit_callbacks):
    from coding.models import Suggestion

    run = start(project, analyst, [interview], django_capture_on_commit_callbacks)
    belonging, migration = Code.objects.get(pk=codes["Belonging"]), Code.objects.get(pk=codes["Migration"])
    services.code_merge(source=belonging, target=migration, actor=owner)
    # As merges left them before they moved suggestions.
    left = Suggestion.objects.create(run=run, segment=participant_segments[2], interview=interview, code=belonging)
    refused = decide(project, left, analyst)
    assert refused.error == ("The code “Belonging” was merged into “Migration”; it cannot be applied. Code the sentence "
                             "with “Migration”, or reject this suggestion.")


# -- what the model writes, bounded ----------------------------------------------------------------------------------


def test_long_texts_are_cut_and_counted_and_evidence_not_in_the_sentence_is_marked_not_a_quote(
        project, analyst, interview, participant_segments, codes, reading, endpoint_server,
        django_capture_on_commit_callbacks, client_for):
    s = participant_segments

    def answer(body: dict) -> str:
        proposal = {"code_id": codes["Belonging"], "rationale": "r"}
        return json.dumps({"proposals": [
            proposal | {"segment_id": s[0].pk, "rationale": "R" * 300_000, "evidence": "E" * 100_000},
            proposal | {"segment_id": s[1].pk, "evidence": "Belonging  grows\nslowly"},  # its words, spaced otherwise
            proposal | {"segment_id": s[2].pk, "evidence": "time matters most"},  # words it never said
        ], "new_code_ideas": [{"name": "Idea", "definition": "D" * 5_000, "segment_ids": [], "rationale": ""}]})
    endpoint_server.script("coder-critic", answer=answer)
    run = start(project, analyst, [interview], django_capture_on_commit_callbacks, with_critic=False)

    long = run.suggestions.get(segment=s[0])
    assert len(long.rationale) == len(long.evidence) == reader.TEXT_LIMIT and long.rationale.endswith("R…")
    assert run.code_ideas.get().definition.endswith("D…")
    assert reader.dropped_counts(run) == {"rationale cut to 2,000 characters": 1, "evidence cut to 2,000 characters": 1,
                                          "idea's definition cut to 2,000 characters": 1}
    quoted = {x.segment_id: x.evidence_is_quote for x in run.suggestions.select_related("segment")}
    assert quoted == {s[0].pk: False, s[1].pk: True, s[2].pk: False}
    page = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid])).content.decode()
    assert len(page) < 50_000
    assert "Evidence: “Belonging  grows\nslowly”" in page
    assert "Evidence (<strong data-not-a-quote>not a quote</strong> of the sentence): time matters most" in page
    assert "“time matters most”" not in page and page.count("data-not-a-quote") == 2


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_suggestions_left_on_merged_codes_to_the_last_code_once(
        project, owner, interview, participant_segments, make_code):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from coding.models import Suggestion

    s = participant_segments
    a, b, c, trashed = (make_code(name) for name in ("Belonging", "Home", "Roots", "Food"))
    services.code_merge(source=a, target=b, actor=owner)
    services.code_merge(source=b, target=c, actor=owner)
    Code.objects.filter(pk=a.pk).update(deleted_at="2026-11-01T00:00:00Z")  # merged, then put in the trash
    Code.objects.filter(pk=trashed.pk).update(deleted_at="2026-11-01T00:00:00Z")
    runs = [SuggestionRun.objects.create(project=project, model="m", endpoint_url="http://x", prompt_version="1",
                                         codebook=[], windows=[]) for _ in range(2)]

    def left(code, segment, run=runs[0], **kw):  # as merges left them before they moved suggestions
        return Suggestion.objects.create(run=run, segment=segment, interview=interview, code=code, **kw)

    via_two_merges, other_run = left(a, s[0]), left(a, s[0], run=runs[1])
    on_target, same_as_target = left(c, s[1], rationale="kept"), left(b, s[1])
    first_of_two, second_of_two = left(a, s[2]), left(b, s[2])
    rejected = left(a, s[3], status="rejected")
    in_trash = left(trashed, s[4])

    def migrate_again() -> None:
        executor = MigrationExecutor(connection)
        executor.migrate([("coding", "0009_names_one_whatever_their_case")])
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    migrate_again()
    after = {x.pk: (x.segment_id, x.code_id, x.status) for x in Suggestion.objects.all()}
    assert after == {
        via_two_merges.pk: (s[0].pk, c.pk, "pending"), other_run.pk: (s[0].pk, c.pk, "pending"),
        on_target.pk: (s[1].pk, c.pk, "pending"),
        first_of_two.pk: (s[2].pk, c.pk, "pending"),
        rejected.pk: (s[3].pk, a.pk, "rejected"),  # decided with the code it named
        in_trash.pk: (s[4].pk, trashed.pk, "pending"),  # trashed, not merged: nowhere to go
    }
    assert not Suggestion.objects.filter(pk__in=[same_as_target.pk, second_of_two.pk]).exists()
    assert Suggestion.objects.get(pk=on_target.pk).rationale == "kept"
    migrate_again()
    assert {x.pk: (x.segment_id, x.code_id, x.status) for x in Suggestion.objects.all()} == after


def _bare_run(project, analyst, status) -> SuggestionRun:
    return SuggestionRun.objects.create(project=project, created_by=analyst, model="m", endpoint_url="http://x/v1",
                                        prompt_version="v", codebook=[], windows=[], status=status)


def test_the_cancel_button_goes_with_the_progress_when_the_run_finishes(project, analyst, client_for):
    # The progress part is polled while the run goes; a button outside it stayed beside "Done".
    url = reverse("coding:reader_run", args=[project.uuid, _bare_run(project, analyst, SuggestionRun.Status.RUNNING).uuid])
    assert "Cancel the run" in client_for(analyst).get(f"{url}?part=progress", headers={"HX-Request": "true"}).content.decode()
    done = reverse("coding:reader_run", args=[project.uuid, _bare_run(project, analyst, SuggestionRun.Status.DONE).uuid])
    assert "Cancel the run" not in client_for(analyst).get(f"{done}?part=progress", headers={"HX-Request": "true"}).content.decode()


def test_cancelling_a_finished_run_says_it_had_finished(project, analyst, viewer, outsider, client_for):
    run = _bare_run(project, analyst, SuggestionRun.Status.DONE)
    url = reverse("coding:reader_cancel", args=[project.uuid, run.uuid])
    assert client_for(outsider).post(url).status_code == 404
    assert client_for(viewer).post(url).status_code == 403
    page = client_for(analyst).post(url, follow=True).content.decode()
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.DONE
    assert "This run had already finished: there was nothing to cancel." in page and "Run cancelled" not in page


def test_cancelling_a_running_run_says_so(project, analyst, client_for):
    run = _bare_run(project, analyst, SuggestionRun.Status.RUNNING)
    page = client_for(analyst).post(reverse("coding:reader_cancel", args=[project.uuid, run.uuid]), follow=True).content.decode()
    run.refresh_from_db()
    assert run.status == SuggestionRun.Status.CANCELLED and "Run cancelled: nothing more is sent" in page
