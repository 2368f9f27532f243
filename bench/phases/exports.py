"""Excerpt-table exports: all codings of the peer corpus as CSV, XLSX and DOCX; memory and queries vs rows.

Owned by the reports issue (reports/excerpts.py, reports/writers/). Same corpus and the same
coding workload as the peers (every item one code, every 5th a second one: ~4,050 codings),
codes placed in themes so the theme columns are real joins. "Server time" is the view's
work without the network: the excerpt query streamed through the writer into a buffer,
best of N, plus the whole request through Django's test client (middleware, permission
check, streaming) for CSV/XLSX/DOCX.
"""

from __future__ import annotations

import io
import tempfile
import tracemalloc
from pathlib import Path

from bench.common import Context, Section, best_of, corpus_module

TITLE = "Exports: excerpt tables (CSV, XLSX, DOCX)"
NEEDS_DJANGO = True
COLUMNS = ("theme", "subtheme", "code", "model", "interview", "turn", "quote", "provenance")
TARGETS_MS = {"csv": 200, "xlsx": 400, "docx": 1500}
TAGUETTE_MS = {"csv": 667, "xlsx": 847, "docx": 7000}  # shared/peer-bench README reference figures


def _setup(corpus, quick: bool):
    from django.contrib.auth import get_user_model

    from coding.models import Coding
    from coding.services import code_create
    from interviews.models import Segment, Speaker
    from interviews.services_import import ImportOptions, import_paths
    from projects.models import Membership, Project, Role
    from themes.models import Theme, ThemeCode

    user = get_user_model().objects.create_user("exporter", first_name="Ex", last_name="Porter")
    project = Project.objects.create(name="bench exports", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    docs = corpus.make_corpus(n_docs=5 if quick else 20)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for d in docs:
            p = Path(tmp) / f"{d['name']}.txt"
            p.write_text(corpus.doc_to_text(d))
            paths.append(str(p))
        import_paths(project=project, user=user, paths=paths,
                     options=ImportOptions(participant="new:Participant", allow_duplicates=True))
    codes = [code_create(project=project, actor=user, name=f"code-{i:02d}", definition=f"Code number {i}")
             for i in range(1, 11)]
    top = Theme.objects.create(project=project, name="Workload and pressure", position=0)
    sub = Theme.objects.create(project=project, name="Rotas", position=0, parent=top)
    other = Theme.objects.create(project=project, name="Trust", position=1)
    for i, c in enumerate(codes):
        ThemeCode.objects.create(theme=(top, sub, other)[i % 3], code=c, position=i)
    # The peers' workload: 2,000 + 2,000 highlights over the participants' sentences,
    # each with one code and every fifth with a second (benchlib.tags_for).
    segments = list(Segment.objects.filter(interview__project=project, speaker=Speaker.PARTICIPANT)
                    .order_by("interview_id", "position").values_list("pk", "interview_id"))
    items = min(len(segments), 3375 if not quick else 800)
    step = len(segments) / items
    rows = []
    for i in range(items):
        seg_id, interview_id = segments[int(i * step)]
        ids = [i % 10] + ([(i + 3) % 10] if i % 5 == 0 else [])
        rows += [Coding(segment_id=seg_id, interview_id=interview_id, code=codes[k], coder=user) for k in ids]
    Coding.objects.bulk_create(rows, batch_size=2000)
    # Fresh tables have no planner statistics until autovacuum's analyze (within a minute
    # on a live server); without them PostgreSQL picks nested loops for 4,000 rows.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return user, project, codes, len(rows)


class _Sink(io.RawIOBase):
    """Counts bytes and keeps none, like a socket: memory probes see the writer, not the file."""

    def __init__(self) -> None:
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.size += len(b)
        return len(b)


def _more_codes(project, user, codes) -> list:
    from coding.models import Coding
    from coding.services import code_create
    from themes.models import Theme, ThemeCode

    extra = [code_create(project=project, actor=user, name=f"extra-{i:02d}") for i in range(30)]
    theme = Theme.objects.create(project=project, name="More codes", position=2)
    ThemeCode.objects.bulk_create([ThemeCode(theme=theme, code=c, position=i) for i, c in enumerate(extra)])
    base = list(Coding.objects.filter(code__in=codes).values_list("segment_id", "interview_id", "code_id"))
    index = {c.pk: i for i, c in enumerate(codes)}
    Coding.objects.bulk_create([Coding(segment_id=s, interview_id=iv, code=extra[index[c] + 10 * k], coder=user)
                                for s, iv, c in base for k in range(3)], batch_size=2000)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return extra


def _write(project, spec, fmt: str) -> int:
    from reports.exports import excerpt_table
    from reports.writers import write_table

    out = _Sink()
    write_table(fmt, excerpt_table(project, spec), out)
    return out.size


def run(ctx: Context) -> Section:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from reports.excerpts import ExcerptSpec, excerpt_count, excerpt_rows

    user, project, codes, n_codings = _setup(corpus_module(), ctx.quick)
    spec = ExcerptSpec(columns=COLUMNS)
    n_rows = sum(1 for _ in excerpt_rows(project, spec))
    repeats = 1 if ctx.quick else 5
    taguette = ctx.peer_results.get("taguette", {}).get("e_exports", {})
    peer = {"csv": "highlights all csv", "xlsx": "highlights all xlsx", "docx": "highlights all docx"}
    rows = [["codings / excerpt rows (theme placements included)", f"{n_codings:,} / {n_rows:,}", None, None]]
    client = Client()
    client.force_login(user)
    url = reverse("reports:excerpts_export", args=[project.uuid])
    for fmt in ("csv", "xlsx", "docx"):
        seconds, size = best_of(repeats, lambda fmt=fmt: _write(project, spec, fmt))
        view_s, _ = best_of(repeats, lambda fmt=fmt: _request(client, url, fmt))
        peer_ms = taguette.get(peer[fmt], {}).get("p50_ms") or TAGUETTE_MS[fmt]
        ctx.figures[f"export_{fmt}_ms"] = view_s * 1000  # the whole request, as the peers' figures are
        rows.append([f"all codings → {fmt.upper()} ms (target ≤ {TARGETS_MS[fmt]}; {size // 1024} KB)",
                     round(seconds * 1000), round(view_s * 1000), peer_ms])
    # Memory and queries against the number of rows: 1 and 10 codes, then 40 codes after
    # coding the same segments with 30 more codes (4x the rows).
    codes += _more_codes(project, user, codes)
    probes = []
    for k in (1, 10, 40):
        sub = ExcerptSpec(columns=COLUMNS, codes=frozenset(c.pk for c in codes[:k]))
        n = excerpt_count(project, sub)
        for fmt in ("csv", "xlsx", "docx"):
            tracemalloc.start()
            with CaptureQueriesContext(connection) as queries:
                _write(project, sub, fmt)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            probes.append((k, n, fmt, peak, len(queries)))
    for k, n, fmt, peak, q in probes:
        rows.append([f"{k} code(s), {n:,} codings → {fmt.upper()}: Python peak KB / queries", round(peak / 1024), q, None])
    return Section(
        title=TITLE,
        columns=["metric", "RTA Studio (writer)", "RTA Studio (whole request)", "Taguette"],
        rows=rows,
        notes=(
            f"Columns: {', '.join(COLUMNS)} (the heaviest table: every row carries theme, sub-theme and provenance). "
            "Writer = excerpt query streamed through the writer into memory, best of "
            f"{repeats}; whole request = POST to the export view through Django's test client (auth, permission "
            "check, streaming), best of the same. Taguette: its 'highlights all' exports from this run when PEERS=1, "
            "else the peer-bench README reference figures. Memory is tracemalloc's peak of Python allocations while "
            "writing (output goes to a byte-counting sink, as to a socket); "
            "queries are counted with CaptureQueriesContext and do not grow with the rows."
        ),
    )


def _request(client, url: str, fmt: str) -> int:
    from reports.excerpts import COLUMNS as ALL

    response = client.post(url, {"format": fmt, "columns": list(COLUMNS)})
    assert response.status_code == 200, response.status_code
    assert set(COLUMNS) <= set(ALL)
    if response.streaming:
        return sum(len(chunk) for chunk in response.streaming_content)
    return len(response.content)
