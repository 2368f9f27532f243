"""The transcript reading page and the statistics page: server time for the heaviest corpus interview and a 10× one.

In-process through Django's test client (full middleware, templates, DEBUG
off, PostgreSQL), so the numbers are the server's share of opening the page;
the peers' (d) rows are over HTTP and include a little network and client time.
"Cold" clears the cache of rendered turns first (the first reader after an
import); "warm" is every later reader.
"""

from __future__ import annotations

import statistics
import time

from bench.common import Context, Section, corpus_module

TITLE = "Reading an interview, statistics"
NEEDS_DJANGO = True


def _timed(client, url: str, n: int, *, cold: bool = False) -> tuple[float, int]:
    from django.core.cache import cache

    times, size = [], 0
    for _ in range(n):
        if cold:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
        size = len(response.content)
    return statistics.median(times), size


def _store(project, participant, title: str, turns: list[tuple[str, list[str]]]):
    from interviews.models import Interview, Segment, Turn
    from interviews.segment_store import segments_for_turns

    interview = Interview.objects.create(project=project, participant=participant, title=title)
    rows = [Turn(interview=interview, position=i, speaker="interviewer" if sp == "Interviewer" else "participant",
                 text=" ".join(sents)) for i, (sp, sents) in enumerate(turns)]
    Turn.objects.bulk_create(rows)
    Segment.objects.bulk_create(segments_for_turns(interview, rows), batch_size=2000)
    return interview


def run(ctx: Context) -> Section:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from interviews.models import Participant
    from projects.models import Membership, Project, Role

    corpus = corpus_module()
    docs = corpus.make_corpus(n_docs=5 if ctx.quick else 20)
    user, _ = get_user_model().objects.get_or_create(username="bench-reader")
    project = Project.objects.create(name="bench reading", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    participant = Participant.objects.create(project=project, label="Corpus")
    heaviest = max(docs, key=lambda d: len(corpus.doc_sentences(d)))
    for d in docs:
        _store(project, participant, d["name"], d["turns"])
    one = _store(project, participant, "heaviest", heaviest["turns"])
    big = _store(project, participant, "10x", [t for _ in range(10) for t in heaviest["turns"]])
    client = Client()
    client.force_login(user)
    n = 3 if ctx.quick else 15
    rows = []
    for label, interview in (("heaviest interview", one), ("10× interview", big)):
        segs = interview.segments.count()
        for view in ("read", "segments"):
            url = f"/p/{project.uuid}/interviews/{interview.uuid}/?view={view}"
            warm, size = _timed(client, url, n)
            cold, _ = _timed(client, url, max(3, n // 5), cold=True) if view == "read" else (None, 0)
            with CaptureQueriesContext(connection) as queries:
                client.get(url)
            rows.append([f"{label} ({segs:,} segments), {view} view", round(warm, 1), None if cold is None else round(cold, 1),
                         len(queries), f"{size / 1024:.0f} KB"])
    stats_ms, size = _timed(client, f"/p/{project.uuid}/interviews/statistics/", 3 if ctx.quick else 5)
    rows.append([f"statistics page, {len(docs) + 2} interviews", round(stats_ms, 1), None, None, f"{size / 1024:.0f} KB"])
    return Section(
        title=TITLE, columns=["page", "warm p50 ms", "cold p50 ms", "queries", "HTML"], rows=rows,
        notes="Turn HTML (Markdown → nh3) is cached per text hash, so only the first reader pays the rendering; "
              "the query count is the same for any length. The statistics page re-segments every answer for "
              "readability on each request.",
    )
