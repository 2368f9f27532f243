"""The AI second reader: suggestions for a 440-segment interview with an endpoint answering in 800 ms,
and what reviewing one suggestion costs beside applying a code, in the same process and run."""

from __future__ import annotations

import json
import re
import statistics
import time

from bench.common import Context, Section

TITLE = "AI second reader: a 440-segment interview, 800 ms per request; review vs apply"
NEEDS_DJANGO = True
SEGMENTS = 440
LATENCY = 0.8


def _answer(codes: list[int]):
    """The coder proposes a code for every fifth sentence; the critic keeps everything."""
    def answer(body: dict) -> str:
        if body["response_format"]["json_schema"]["name"] == "code_proposals":
            ids = [int(i) for i in re.findall(r"^\[(\d+)\]", body["messages"][1]["content"], re.M)]
            proposals = [{"segment_id": i, "code_id": codes[i % len(codes)], "rationale": "fits", "evidence": "x"}
                         for i in ids[::5]]
            return json.dumps({"proposals": proposals, "new_code_ideas": []})
        listed = json.loads(body["messages"][1]["content"].split("Proposals (JSON):\n", 1)[1])
        return json.dumps({"verdicts": [{"proposal": p["proposal"], "segment_id": p["segment_id"], "code_id": p["code_id"],
                                         "verdict": "keep", "new_code_id": None, "reason": "ok"} for p in listed]})
    return answer


def run(ctx: Context) -> Section:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from coding import reader
    from coding.models import Suggestion, SuggestionRun
    from coding.services import code_create
    from conduct.services import live_participant_save
    from conduct.testing.fake_openai import FakeOpenAIServer
    from config.celery import app
    from interviews.models import Interview, Participant, Segment, Speaker, Turn
    from interviews.segment_store import segments_for_turns
    from projects.models import Membership, Project, Role

    settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS = True  # the fake endpoint listens on 127.0.0.1
    app.conf.task_always_eager = True  # windows run in threads of this process, READER_CONCURRENCY at a time
    user = get_user_model().objects.create_user(username=f"bench-reader-{time.time_ns()}", password="x")
    project = Project.objects.create(name="Bench reader", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    codes = [code_create(project=project, actor=user, name=f"Code {i}", definition=f"Definition {i}").pk for i in range(10)]
    participant = Participant.objects.create(project=project, label="Bench model")
    interview = Interview.objects.create(project=project, participant=participant, title="Heavy")
    turns = []
    for t in range(SEGMENTS // 20):
        turns.append(Turn(interview=interview, position=2 * t, speaker=Speaker.INTERVIEWER, text=f"Question {t}?"))
        turns.append(Turn(interview=interview, position=2 * t + 1, speaker=Speaker.PARTICIPANT,
                          text=" ".join(f"Sentence {t}-{i} says something about fairness." for i in range(20))))
    Segment.objects.bulk_create(segments_for_turns(interview, Turn.objects.bulk_create(turns)))
    participant_segments = Segment.objects.filter(interview=interview, speaker=Speaker.PARTICIPANT).count()

    server = FakeOpenAIServer().start()
    try:
        server.script("reader", answer=_answer(codes), first_delay=LATENCY)
        endpoint = live_participant_save(
            project=project, participant=None, label="Reader", provider="bench", model_id="reader",
            base_url=server.base_url, temperature=0, top_p=None, seed=None, max_tokens=None, timeout_seconds=30,
            api_key=None, stream_answers=False)
        reader.reader_settings_save(project=project, user=user, enabled=True, endpoint=endpoint, local_only=False)
        started = time.perf_counter()
        run_ = reader.run_start(project=project, user=user, interviews=[interview])
        while SuggestionRun.objects.get(pk=run_.pk).status == SuggestionRun.Status.RUNNING:
            time.sleep(0.05)
        ready = time.perf_counter() - started
        requests = len(server.chat_requests())
    finally:
        server.stop()

    client = Client()
    client.force_login(user)
    apply_url = reverse("coding:apply", args=[project.uuid, interview.uuid])
    free = list(Segment.objects.filter(interview=interview, speaker=Speaker.PARTICIPANT, suggestions__isnull=True)
                .values_list("pk", flat=True))
    pending = list(Suggestion.objects.filter(run=run_).values_list("uuid", flat=True))
    n = min(60 if not ctx.quick else 15, len(pending), len(free))
    apply_ms, review_ms = [], []
    for i in range(n):
        t0 = time.perf_counter()
        client.post(apply_url, {"code": codes[0], "segments": str(free[i])}, HTTP_HX_REQUEST="true")
        apply_ms.append((time.perf_counter() - t0) * 1000)
        decision = "accept" if i % 2 == 0 else "reject"
        t0 = time.perf_counter()
        client.post(reverse("coding:suggestion_decide", args=[project.uuid, pending[i], decision]),
                    HTTP_ACCEPT="application/json")
        review_ms.append((time.perf_counter() - t0) * 1000)
    windows = len(run_.windows)
    sequential = requests * LATENCY
    rows = [
        ["participant segments / windows / requests", f"{participant_segments} / {windows} / {requests}"],
        ["suggestions ready, s (target ≤ 15)", round(ready, 2)],
        ["the same requests one after another, s", round(sequential, 1)],
        ["speed-up from concurrent windows", round(sequential / ready, 1)],
        [f"apply a code, in-process p50 ms (n={n})", round(statistics.median(apply_ms), 2)],
        [f"accept or reject a suggestion, in-process p50 ms (n={n})", round(statistics.median(review_ms), 2)],
        ["review / apply", round(statistics.median(review_ms) / statistics.median(apply_ms), 2)],
    ]
    return Section(
        title=TITLE, columns=["metric", "RTA Studio"], rows=rows,
        notes=(f"The fake endpoint waits {LATENCY * 1000:.0f} ms before answering each request (coder and critic, "
               "non-streaming, strict JSON schema). Laptop mode reads READER_CONCURRENCY (4) windows at a time in "
               "threads of one process; a Celery threads worker sends them as concurrently as its pool allows. "
               "Review and apply are timed alternately through Django's test client in one process (no HTTP), "
               "so the ratio compares the two code paths, not the network."),
    )
