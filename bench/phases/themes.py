"""Themes pages on the full corpus: board, one drag (code move), map data, theme page, journal, thread poll, presenter.

In-process through Django's test client (full middleware and templates, PostgreSQL), so the
numbers are the server's share. Every participant sentence of the corpus is coded once, codes
are spread over 12 themes with sub-themes, and there are 300 memos and 100 comments.
"""

from __future__ import annotations

import statistics
import time

from bench.common import Context, Section, corpus_module

TITLE = "Themes: board, moves, map, theme page, journal"
NEEDS_DJANGO = True


def _timed(client, method: str, url: str, n: int, data=None, headers=None) -> tuple[float, float, int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, size, queries = [], 0, 0
    for _ in range(n):
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(url, data or {}, headers=headers or {})
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code in (200, 204), (url, response.status_code)
        size, queries = len(response.content), len(captured)
    ordered = sorted(times)
    return statistics.median(times), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], queries, size


def run(ctx: Context) -> Section:  # noqa: PLR0915 - one linear setup
    from django.contrib.auth import get_user_model
    from django.test import Client

    from bench.phases.reading import _store
    from coding.models import Code, Coding
    from interviews.models import Participant, Segment
    from projects.models import Membership, Project, Role
    from themes import services
    from themes.models import Theme

    corpus = corpus_module()
    docs = corpus.make_corpus(n_docs=5 if ctx.quick else 20)
    user, _ = get_user_model().objects.get_or_create(username="bench-themes")
    project = Project.objects.create(name="bench themes", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    labels = ["GPT-4o", "Claude", "Gemini", "DeepSeek", "Llama"]
    participants = [Participant.objects.create(project=project, label=label) for label in labels]
    for i, d in enumerate(docs):
        _store(project, participants[i % len(participants)], d["name"], d["turns"])
    codes = [Code.objects.create(project=project, name=f"code {i:02d}", created_by=user) for i in range(60)]
    segments = list(Segment.objects.filter(interview__project=project, speaker="participant").values_list("id", "interview_id", "turn_id"))
    # Runs of three sentences share a code, so excerpts are multi-sentence as in real coding.
    Coding.objects.bulk_create(
        [Coding(segment_id=s, interview_id=iv, code=codes[(k // 3) % len(codes)], coder=user) for k, (s, iv, _) in enumerate(segments)],
        batch_size=5000,
    )
    themes = []
    for t in range(12):
        theme = services.theme_create(project=project, actor=user, name=f"Theme {t}")
        sub = services.theme_create(project=project, actor=user, name=f"Sub {t}", parent=theme)
        for c in codes[t * 5:(t + 1) * 5]:
            services.theme_add_code(theme=theme, actor=user, code=c)
        services.theme_add_code(theme=sub, actor=user, code=codes[t * 5])
        themes.append(theme)
    for m in range(300):
        services.memo_create(project=project, actor=user, title=f"Memo {m}", body="Some **reflexive** text.\n\n- a\n- b", kind="reflexive",
                             theme=themes[m % 12])
    for c in range(100):
        services.comment_post(theme=themes[0], actor=user, body=f"Point {c} @bench-themes")
    review = services.review_create(project=project, actor=user, title="Bench review", date="2026-11-22", themes=themes)

    client = Client()
    client.force_login(user)
    n = 3 if ctx.quick else 15
    base = f"/p/{project.uuid}/themes"
    rows = []
    for label, url in (
        ("board (12 themes + 12 sub-themes, 60 codes)", f"{base}/"),
        ("map data JSON", f"{base}/map/data/"),
        ("theme page (largest theme)", f"{base}/t/{themes[0].uuid}/"),
        ("its excerpt counts by model (loaded after the page)", f"{base}/t/{themes[0].uuid}/excerpt-counts/"),
        ("thread poll, nothing new (204)", None),
        ("reflexive journal (300 memos)", f"{base}/memos/"),
        ("presenter mode, one theme", f"{base}/reviews/{review.uuid}/present/0/"),
    ):
        if url is None:
            page = client.get(f"{base}/t/{themes[0].uuid}/thread/").content.decode()
            token = page.split("token=")[1].split('"')[0]
            url = f"{base}/t/{themes[0].uuid}/thread/?token={token}"
        p50, p95, queries, size = _timed(client, "get", url, n)
        rows.append([label, round(p50, 1), round(p95, 1), queries, f"{size / 1024:.0f} KB"])
    # One drag: move a code between two themes and get back what changed (the two columns, the chip, the count).
    moves = []
    for i in range(n):
        source, target = (themes[1], themes[2]) if i % 2 == 0 else (themes[2], themes[1])
        moves.append(_timed(client, "post", f"{base}/codes/place/", 1,
                            data={"action": "move", "code": str(codes[5].uuid), "source": str(source.uuid), "target": "", "theme": str(target.uuid)},
                            headers={"X-Fragment": "changes"}))
    rows.append(["one drag: move a code + the changed columns", round(statistics.median(m[0] for m in moves), 1),
                 round(max(m[0] for m in moves), 1), moves[-1][2], f"{moves[-1][3] / 1024:.0f} KB"])
    # The board keeps each theme's count by the codes it holds (themes.excerpts.recent_excerpt_counts), so a code
    # dragged back and forth is counted once; here every move leaves both themes with codes they never held.
    fresh = []
    for i in range(n):
        pair = 3 + 2 * (i // 5)
        source, target = themes[pair], themes[pair + 1]
        fresh.append(_timed(client, "post", f"{base}/codes/place/", 1,
                            data={"action": "move", "code": str(codes[pair * 5 + i % 5].uuid), "source": str(source.uuid), "target": "",
                                  "theme": str(target.uuid)}, headers={"X-Fragment": "changes"}))
    rows.append(["one drag into code sets never counted (both columns counted afresh)", round(statistics.median(m[0] for m in fresh), 1),
                 round(max(m[0] for m in fresh), 1), fresh[-1][2], f"{fresh[-1][3] / 1024:.0f} KB"])
    excerpts = Theme.objects.filter(pk=themes[0].pk).count()
    return Section(
        title=TITLE, columns=["page", "p50 ms", "p95 ms", "queries", "response"], rows=rows,
        notes=f"{len(docs)} interviews, {len(segments):,} participant sentences each coded once (runs of 3), "
              f"{excerpts and 12} themes. Query counts do not depend on the number of themes, codes, excerpts, memos or "
              "comments (themes/tests/test_query_counts.py). A move is one POST whose answer is the columns it changed, the code's chip and the count of codes in no theme.",
    )
