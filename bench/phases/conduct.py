"""Live interviews: how soon and how smoothly streamed answers become visible, alone and five at once.

Answers run through the real path (services.question_ask → answering.answer_run
with the official openai client → PostgreSQL) against the local fake
chat-completions server, in worker-like threads. The page's poll (GET of one
turn fragment) is timed with Django's test client while answers stream.
"""

from __future__ import annotations

import threading
import time

from bench.common import Context, Section

TITLE = "Conduct: streamed answers"
NEEDS_DJANGO = True
PEERS_ONLY = False

CHUNKS, CHUNK_CHARS, DELAY = 200, 8, 0.01  # ≈ 2 s per answer, 1,600 characters


def _pct(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def run(ctx: Context) -> Section:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from conduct import answering, services
    from conduct.client import Endpoint, stream_answer
    from conduct.testing.fake_openai import FakeOpenAIServer
    from config.celery import app
    from interviews.models import Turn
    from projects.models import Membership, Project, Role

    answer = "".join(f"w{i:05d} " for i in range(CHUNKS))[: CHUNKS * CHUNK_CHARS]
    settings.OPENAI_API_KEY = "sk-bench"
    settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS = True  # the fake server listens on 127.0.0.1
    app.conf.task_always_eager = True  # answers run in threads of this process, like a threads-pool worker
    user = get_user_model().objects.create_user(username=f"bench-conduct-{time.time_ns()}", password="x")
    project = Project.objects.create(name="Bench conduct", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    guide = services.guide_create(project=project, user=user, name="Bench", opening_prompt="Tell me about fairness.")
    version = guide.versions.get()

    saves: list[tuple[int, float]] = []
    real_save = answering._save_partial

    def counting_save(turn_id: int, token: str, text: str) -> None:
        saves.append((turn_id, time.perf_counter()))
        real_save(turn_id, token, text)

    answering._save_partial = counting_save
    server = FakeOpenAIServer().start()
    rows: list[list] = []
    try:
        for model in ("m0", "m1", "m2", "m3", "m4"):
            server.script(model, answer=answer, chunk_chars=CHUNK_CHARS, delay=DELAY)
        participants = [
            services.live_participant_save(
                project=project, participant=None, label=f"Model {i}", provider="bench", model_id=f"m{i}",
                base_url=server.base_url, temperature=None, top_p=None, seed=None, max_tokens=None,
                timeout_seconds=30, api_key=None,
            )
            for i in range(5)
        ]
        # The bare client, no database: the floor for one answer.
        bare = _bare(stream_answer, Endpoint, server, ctx)
        client = Client()
        client.force_login(user)
        # Warm up: imports, templates, the first client construction.
        _session(1, participants[:1], version, project, user, client, services, Turn, reverse, CaptureQueriesContext, connection)
        for n in (1, 5):
            saves.clear()
            result = _session(n, participants[:n], version, project, user, client, services, Turn, reverse,
                              CaptureQueriesContext, connection)
            gaps = [
                b - a
                for turn_id in {t for t, _ in saves}
                for a, b in zip(*(lambda ts: (ts, ts[1:]))([at for t, at in saves if t == turn_id]), strict=False)
            ]
            rows += [
                [f"{n} model(s): first words visible after ask, ms", round(result["first_visible_ms"])],
                [f"{n} model(s): all answers complete, s (bare client alone: {bare:.2f} s)", round(result["complete_s"], 2)],
                [f"{n} model(s): partial-text saves per answer", round(len(saves) / n)],
                [f"{n} model(s): gap between saves p50 / p95, ms", f"{_pct(gaps, 50) * 1000:.0f} / {_pct(gaps, 95) * 1000:.0f}"],
                [f"{n} model(s): poll fragment p50 / p95, ms (while streaming)",
                 f"{_pct(result['poll'], 50) * 1000:.1f} / {_pct(result['poll'], 95) * 1000:.1f}"],
                [f"{n} model(s): queries per poll", result["poll_queries"]],
            ]
    finally:
        answering._save_partial = real_save
        server.stop()
    return Section(
        title=TITLE,
        columns=["metric", "RTA Studio"],
        rows=rows,
        notes=(
            f"Each answer: {CHUNKS} chunks of {CHUNK_CHARS} characters, {DELAY * 1000:.0f} ms apart, from the local "
            "fake endpoint over loopback HTTP with the official openai client. Partial text is saved at most every "
            "150 ms (CONDUCT_SAVE_INTERVAL), so the page, polling every 300 ms, is at most ~450 ms behind the model. "
            "'First words visible' is from the interviewer's question being saved to the first non-empty text "
            "readable in PostgreSQL (sampled every 5 ms). Answers run in threads of one process, as in a "
            "threads-pool worker."
        ),
    )


def _bare(stream_answer, Endpoint, server, ctx: Context) -> float:  # noqa: N803 - passed-in classes
    from conduct.egress import EgressPolicy

    best = float("inf")
    for _ in range(1 if ctx.quick else 3):
        t0 = time.perf_counter()
        endpoint = Endpoint(model="m0", base_url=server.base_url, api_key="k",
                            egress=EgressPolicy(allow_private_networks=True))
        stream_answer(endpoint, [{"role": "user", "content": "x"}])
        best = min(best, time.perf_counter() - t0)
    return best


def _session(n, participants, version, project, user, client, services, Turn, reverse, CaptureQueriesContext, connection):  # noqa: N803
    t0 = time.perf_counter()
    session = services.session_start(project=project, user=user, guide_version=version, participants=participants)
    answers = list(Turn.objects.filter(interview__conduct_seat__session=session, speaker="participant"))
    first_visible = None
    poll: list[float] = []
    poll_queries = 0
    done = threading.Event()
    while not done.is_set():
        rows = list(Turn.objects.filter(pk__in=[a.pk for a in answers]).values_list("status", "text"))
        if first_visible is None and any(text for _, text in rows):
            first_visible = time.perf_counter() - t0
        if all(status == "complete" for status, _ in rows):
            done.set()
            break
        if first_visible is not None:
            url = reverse("conduct:turn", args=[project.uuid, answers[len(poll) % n].uuid])
            with CaptureQueriesContext(connection) as queries:
                p0 = time.perf_counter()
                client.get(url, HTTP_HX_REQUEST="true", secure=True)
                poll.append(time.perf_counter() - p0)
            poll_queries = len(queries.captured_queries)
        if time.perf_counter() - t0 > 60:
            raise RuntimeError("answers did not complete within 60 s")
        time.sleep(0.005)
    return {
        "first_visible_ms": (first_visible or 0) * 1000,
        "complete_s": time.perf_counter() - t0,
        "poll": poll,
        "poll_queries": poll_queries,
    }
