"""The scale curve: the daily pages and API lists at 1×, 10× and 50× the peer corpus.

Each size is its own project. The 20 corpus interviews are stored once through the app's own
segmentation (as the reading phase does), codes, themes, a meeting and the first memo and comment
through the app's services; the copies that make a project 10× or 50× are made in PostgreSQL
(INSERT … SELECT over the stored rows, foreign-key triggers off for the copy), so the 50× build
takes about a minute. Every participant sentence is coded once (runs of three share a code).

Env ``BENCH_SCALES`` (default "1,10,50", "1,10" with ``--quick``) chooses the sizes.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass

from bench.common import Context, Section, corpus_module

TITLE = "Scale curve: daily pages at 1×, 10× and 50× the peer corpus"
NEEDS_DJANGO = True

LABELS = ("GPT-4o", "Claude", "Gemini", "DeepSeek", "Llama")
# At 50×: 100 codes, 30 themes, 2,000 memos and 1,000 comments; smaller sizes scale down, with a floor so a
# 1× project still has a codebook and a theme board worth the name.
CODES_AT_50, THEMES_AT_50, MEMOS_AT_50, COMMENTS_AT_50 = 100, 30, 2000, 1000
# Every theme holds this many codes at every size (the other codes stay outside themes): the theme and the
# meeting's agenda opened hold the same content at 1× and at 50×, so what grows is the project around them.
CODES_PER_THEME = 2
BOUNDED, PROJECT_WIDE = "bounded", "project-wide"
CASE_CODES = 10  # the case matrix's columns (case features); the trajectories follow the first three


@dataclass
class Built:
    scale: int
    project: object
    user: object
    interview: object  # the heaviest corpus interview's first copy: the same content at every size
    code: object  # the most used code
    theme: object
    review: object
    # The first codes of the codebook: the case matrix's columns and the trajectories' code set.
    first_codes: list
    interviews: int
    segments: int
    codings: int
    memos: int
    comments: int
    seconds: float


def _scales(ctx: Context) -> list[int]:
    default = "1,10" if ctx.quick else "1,10,50"
    return [int(s) for s in os.environ.get("BENCH_SCALES", default).split(",") if s.strip()]


def _columns(model) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if not f.primary_key]


def _insert_select(model, overrides: dict[str, str], source: str) -> str:
    """INSERT INTO <model> (every column but id) SELECT <override or src.column> … FROM <source>."""
    cols = _columns(model)
    exprs = [overrides.get(c, f'src."{c}"') for c in cols]
    return (f'INSERT INTO {model._meta.db_table} ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
            f'SELECT {", ".join(exprs)} FROM {source}')


def _copy_corpus(template, project, copies: int) -> None:
    """Copy the template project's interviews, turns and segments ``copies`` times into ``project``."""
    from django.db import connection

    from interviews.models import Interview, Segment, Turn

    p = {"template": template.pk, "project": project.pk, "copies": copies}
    with connection.cursor() as cur:
        # Every row below references rows made here or the project's own: the per-row FK checks only double the time.
        cur.execute("SET session_replication_role = replica")
        # Copying 400,000 segments on a busy machine can outlast the web's statement timeout; RESET restores it.
        cur.execute("SET statement_timeout = 0")
        cur.execute("DROP TABLE IF EXISTS scale_iv, scale_turn")
        cur.execute("""CREATE TEMP TABLE scale_iv AS
            SELECT i.id AS old_id, c AS copy, gen_random_uuid() AS new_uuid,
                   (SELECT np.id FROM interviews_participant np JOIN interviews_participant op ON op.label = np.label
                    WHERE op.id = i.participant_id AND np.project_id = %(project)s) AS participant_id
            FROM interviews_interview i, generate_series(1, %(copies)s) AS c WHERE i.project_id = %(template)s""", p)
        cur.execute(_insert_select(Interview, {
            "uuid": "m.new_uuid", "project_id": "%(project)s", "participant_id": "m.participant_id",
            "title": "src.title || ' · ' || m.copy",
            "conducted_at": "src.conducted_at - m.copy * interval '1 day'",
        }, "scale_iv m JOIN interviews_interview src ON src.id = m.old_id"), p)
        cur.execute("""CREATE TEMP TABLE scale_turn AS
            SELECT t.id AS old_id, m.copy, gen_random_uuid() AS new_uuid, ni.id AS interview_id
            FROM interviews_turn t JOIN scale_iv m ON m.old_id = t.interview_id
            JOIN interviews_interview ni ON ni.uuid = m.new_uuid""")
        cur.execute("CREATE INDEX ON scale_turn (old_id, copy)")
        cur.execute(_insert_select(Turn, {"uuid": "m.new_uuid", "interview_id": "m.interview_id"},
                                   "scale_turn m JOIN interviews_turn src ON src.id = m.old_id"), p)
        cur.execute(_insert_select(Segment, {"interview_id": "m.interview_id", "turn_id": "nt.id"},
                                   "interviews_segment src JOIN scale_turn m ON m.old_id = src.turn_id "
                                   "JOIN interviews_turn nt ON nt.uuid = m.new_uuid"), p)
        cur.execute("SET session_replication_role = DEFAULT")
        cur.execute("RESET statement_timeout")
        cur.execute("DROP TABLE scale_iv, scale_turn")


def _code_everything(project, user, codes) -> None:
    """Every participant sentence coded once; runs of three sentences share a code, as in real coding."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SET session_replication_role = replica")
        cur.execute("SET statement_timeout = 0")
        cur.execute("""
            INSERT INTO coding_coding (origin, note, created_at, code_id, coder_id, interview_id, segment_id)
            SELECT 'human', '', now(), (%(codes)s::bigint[])[1 + (s.position / 3) %% %(n)s], %(user)s, s.interview_id, s.id
            FROM interviews_segment s JOIN interviews_interview i ON i.id = s.interview_id
            WHERE i.project_id = %(project)s AND s.speaker = 'participant'""",
                    {"codes": [c.pk for c in codes], "n": len(codes), "user": user.pk, "project": project.pk})
        cur.execute("SET session_replication_role = DEFAULT")
        cur.execute("RESET statement_timeout")


def _talk(project, user, themes, codes, interviews, n_memos: int, n_comments: int) -> None:
    """Memos on the project, interviews, codes and themes, and a discussion on every theme."""
    from themes import services
    from themes.models import Comment, Memo, MemoRevision

    body = "Some **reflexive** text about what this shows.\n\n- a first thought\n- a second one"
    services.memo_create(project=project, actor=user, title="Memo 0", body=body, kind="reflexive", theme=themes[0])
    services.comment_post(theme=themes[0], actor=user, body=f"First point @{user.username}")
    targets = [{"theme": themes[k % len(themes)]} for k in range(4)] + [{"code": codes[k]} for k in range(3)] + [
        {"interview": interviews[0]}, {}]
    memos = Memo.objects.bulk_create(
        [Memo(project=project, title=f"Memo {m}", body=body, kind="reflexive" if m % 3 else "analytic", author=user,
              updated_by=user, **targets[m % len(targets)]) for m in range(1, n_memos)], batch_size=2000)
    MemoRevision.objects.bulk_create([MemoRevision(memo=m, number=1, title=m.title, body=m.body, kind=m.kind, author=user)
                                      for m in memos], batch_size=2000)
    Comment.objects.bulk_create([Comment(theme=themes[c % len(themes)], author=user, body=f"Point {c}: what about the excerpts?")
                                 for c in range(1, n_comments)], batch_size=2000)


def template_project(user):
    """The peer corpus's 20 interviews as a project of their own, which `build` copies."""
    from bench.phases.reading import _store
    from interviews.models import Participant
    from projects.models import Membership, Project, Role

    template = Project.objects.create(name="bench scale template", created_by=user)
    Membership.objects.create(project=template, user=user, role=Role.OWNER)
    participants = [Participant.objects.create(project=template, label=label) for label in LABELS]
    for k, d in enumerate(corpus_module().make_corpus(n_docs=20)):
        _store(template, participants[k % len(participants)], d["name"], d["turns"])
    return template


def build(template, scale: int, user) -> Built:
    from django.db import connection
    from django.db.models import Count

    from coding import services as coding_services
    from coding.models import Code, Coding
    from interviews.models import Interview, Participant, Segment
    from projects.models import Membership, Project, Role
    from themes import services

    started = time.perf_counter()
    project = Project.objects.create(name=f"bench scale {scale}×", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    for label in LABELS:
        Participant.objects.create(project=project, label=label)
    _copy_corpus(template, project, scale)
    n_themes = max(6, THEMES_AT_50 * scale // 50)
    n_codes = max(n_themes * CODES_PER_THEME, CODES_AT_50 * scale // 50)
    codes = [coding_services.code_create(project=project, actor=user, name=f"code {i:03d}") for i in range(n_codes)]
    _code_everything(project, user, codes)
    themes = [services.theme_create(project=project, actor=user, name=f"Theme {t}") for t in range(n_themes)]
    for k, code in enumerate(codes[:n_themes * CODES_PER_THEME]):
        services.theme_add_code(theme=themes[k % n_themes], actor=user, code=code)
    interviews = list(Interview.objects.filter(project=project).order_by("id")[:1])
    n_memos, n_comments = max(40, MEMOS_AT_50 * scale // 50), max(20, COMMENTS_AT_50 * scale // 50)
    _talk(project, user, themes, codes, interviews, n_memos, n_comments)
    review = services.review_create(project=project, actor=user, title="Weekly review", date=dt.date(2026, 11, 22),
                                    attendees=[user], themes=themes[:6])
    with connection.cursor() as cur:
        # What autovacuum would have done after such a load: plans made on stale statistics are not the app's.
        cur.execute("SET statement_timeout = 0")
        cur.execute("ANALYZE")
        cur.execute("RESET statement_timeout")
    heaviest = (Interview.objects.filter(project=project, title__endswith=" · 1").annotate(n=Count("segments"))
                .order_by("-n").first())
    top_code = Code.objects.filter(pk__in=[c.pk for c in codes]).annotate(n=Count("codings")).order_by("-n").first()
    return Built(scale=scale, project=project, user=user, interview=heaviest, code=top_code, theme=themes[0], review=review,
                 first_codes=codes[:CASE_CODES],
                 interviews=Interview.objects.filter(project=project).count(),
                 segments=Segment.objects.filter(interview__project=project).count(),
                 codings=Coding.objects.filter(code__project=project).count(), memos=n_memos, comments=n_comments,
                 seconds=time.perf_counter() - started)


def _api_rows(response) -> int:
    return len(response.json()["results"])


def _interview_rows(response) -> int:
    return response.content.decode().count(' answer segments">')  # one per row: its "Answers coded" cell


def pages(b: Built) -> list[tuple[str, str, str, str, dict | None]]:
    """(label, kind, method, url, POST data) for every page and API list a researcher opens daily."""
    p, i = b.project.uuid, b.interview.uuid
    api = f"/api/projects/{p}"
    codes = "&".join(f"codes={c.uuid}" for c in b.first_codes)
    first_three = "&".join(f"codes={c.uuid}" for c in b.first_codes[:3])
    return [
        ("project home", BOUNDED, "get", f"/p/{p}/", None),
        ("interview list (first page)", BOUNDED, "get", f"/p/{p}/interviews/", None),
        ("an interview, read view", BOUNDED, "get", f"/p/{p}/interviews/{i}/?view=read", None),
        ("an interview, coding page", BOUNDED, "get", f"/p/{p}/interviews/{i}/code/", None),
        ("participants", BOUNDED, "get", f"/p/{p}/interviews/participants/", None),
        ("codebook with counts", PROJECT_WIDE, "get", f"/p/{p}/codebook/", None),
        ("a code's page", BOUNDED, "get", f"/p/{p}/codebook/{b.code.uuid}/", None),
        ("a code's excerpts (first page)", BOUNDED, "get", f"/p/{p}/codebook/{b.code.uuid}/excerpts/", None),
        ("a code's excerpts to split (on request)", BOUNDED, "get", f"/p/{p}/codebook/{b.code.uuid}/split/excerpts/", None),
        ("theme board", PROJECT_WIDE, "get", f"/p/{p}/themes/", None),
        ("a theme page", BOUNDED, "get", f"/p/{p}/themes/t/{b.theme.uuid}/", None),
        ("a theme's excerpt counts by model (loaded after the theme page)", PROJECT_WIDE, "get",
         f"/p/{p}/themes/t/{b.theme.uuid}/excerpt-counts/", None),
        ("a theme's thread", BOUNDED, "get", f"/p/{p}/themes/t/{b.theme.uuid}/thread/", None),
        ("reflexive journal (first page)", BOUNDED, "get", f"/p/{p}/themes/memos/", None),
        ("meeting page", BOUNDED, "get", f"/p/{p}/themes/reviews/{b.review.uuid}/", None),
        ("meetings list", BOUNDED, "get", f"/p/{p}/themes/reviews/", None),
        ("thematic map", PROJECT_WIDE, "get", f"/p/{p}/themes/map/", None),
        ("thematic map, its data", PROJECT_WIDE, "get", f"/p/{p}/themes/map/data/", None),
        ("statistics", PROJECT_WIDE, "get", f"/p/{p}/interviews/statistics/", None),
        ("frequency table", PROJECT_WIDE, "get", f"/p/{p}/reports/frequency/", None),
        ("reports home", BOUNDED, "get", f"/p/{p}/reports/", None),
        ("excerpt table (first page)", BOUNDED, "get", f"/p/{p}/reports/excerpts/", None),
        (f"case matrix, {CASE_CODES} codes (first page)", PROJECT_WIDE, "get", f"/p/{p}/reports/cases/?{codes}", None),
        ("trajectories, 3 codes", PROJECT_WIDE, "get", f"/p/{p}/reports/trajectories/?{first_three}", None),
        ("excerpt export, all codings (CSV or job)", PROJECT_WIDE, "post", f"/p/{p}/reports/excerpts/export/", {"format": "csv"}),
        ("search, a common word (\"patients\")", PROJECT_WIDE, "get", f"/p/{p}/search/?q=patients", None),
        ("second-reader queue", BOUNDED, "get", f"/p/{p}/second-reader/", None),
        ("probes list", BOUNDED, "get", f"/p/{p}/probes/", None),
        ("API interviews list", BOUNDED, "get", f"{api}/interviews/", None),
        ("API codes list", BOUNDED, "get", f"{api}/codes/", None),
        ("API codings list", BOUNDED, "get", f"{api}/codings/", None),
        ("API memos list", BOUNDED, "get", f"{api}/memos/", None),
        ("API comments list", BOUNDED, "get", f"{api}/comments/", None),
        ("API themes list", BOUNDED, "get", f"{api}/themes/", None),
    ]


# A list's first page shows min(its rows, a page) rows: a 1× project holds fewer than a page of some of them
# (20 interviews, 10 codes, 20 comments…), so its page shows fewer rows than the same page at 50×. Counted for
# these pages, so a bounded page is also compared with the smallest size whose page shows as many rows.
ROWS_SHOWN = {
    "interview list (first page)": _interview_rows,
    "API interviews list": _api_rows, "API codes list": _api_rows, "API codings list": _api_rows,
    "API memos list": _api_rows, "API comments list": _api_rows, "API themes list": _api_rows,
}


def rows_shown(label: str, client, method: str, url: str, data: dict | None) -> int | None:
    """How many rows the page shows, for the lists in ROWS_SHOWN (None for other pages)."""
    count = ROWS_SHOWN.get(label)
    return None if count is None else count(getattr(client, method)(url, data or {}))


def like_for_like(times: list[float], rows: list[int | None], scales: list[int]) -> tuple[float, int] | None:
    """(largest size's time ÷ the time at the smallest size showing as many rows, that size) when the smallest
    size shows fewer rows than the largest; None when it shows as many (the plain ratio compares like for like)."""
    if rows[0] is None or rows[0] >= rows[-1]:
        return None
    for t, n, scale in zip(times[:-1], rows[:-1], scales[:-1], strict=True):
        if n >= rows[-1] and t:
            return times[-1] / t, scale
    return None


def _request(client, method: str, url: str, data: dict | None):
    response = getattr(client, method)(url, data or {})
    if getattr(response, "streaming", False):
        for _ in response.streaming_content:
            pass
    return response


def warm(client, method: str, url: str, data: dict | None) -> int:
    """The query count of a warm request: one warm-up fills caches, the second is counted."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = _request(client, method, url, data)
    assert first.status_code in (200, 302), (url, first.status_code)
    with CaptureQueriesContext(connection) as captured:
        _request(client, method, url, data)
    return len(captured)


def interleaved_best(client, requests: list[tuple[str, str, dict | None]], repeats: int) -> list[float]:
    """Best ms of each request over ``repeats`` rounds that take the requests in turn.

    In turn, not one size after the other: a slow minute of a shared machine then lands on every size
    alike instead of on whichever size was being measured, and the ratio between sizes survives it.
    """
    best = [float("inf")] * len(requests)
    for _ in range(repeats):
        for k, (method, url, data) in enumerate(requests):
            started = time.perf_counter()
            _request(client, method, url, data)
            best[k] = min(best[k], (time.perf_counter() - started) * 1000)
    return best


def run(ctx: Context) -> Section:
    from django.contrib.auth import get_user_model
    from django.test import Client


    scales = _scales(ctx)
    user, _ = get_user_model().objects.get_or_create(username="bench-scale")
    template = template_project(user)

    client = Client()
    client.force_login(user)
    repeats = 2 if ctx.quick else 5
    built, results = [], {}
    for scale in scales:
        b = build(template, scale, user)
        built.append(b)
        print(f"bench: scale {scale}× built in {b.seconds:.1f} s ({b.interviews:,} interviews, {b.segments:,} segments, "
              f"{b.codings:,} codings)", flush=True)
    # Every size is built before any is measured, so each is measured beside the others' rows, as a project is
    # in a shared database; the sizes are then timed in turn.
    for same_page in zip(*(pages(b) for b in built), strict=True):
        label = same_page[0][0]
        warmed = [(warm(client, method, url, data), rows_shown(label, client, method, url, data))
                  for _, _, method, url, data in same_page]
        best = interleaved_best(client, [(method, url, data) for _, _, method, url, data in same_page], repeats)
        for scale, ms, (queries, shown) in zip(scales, best, warmed, strict=True):
            results[(label, scale)] = (ms, queries, shown)
            print(f"bench:   {scale:>3}× {label}: {ms:.1f} ms, {queries} queries"
                  + ("" if shown is None else f", {shown} rows"), flush=True)

    first, last = scales[0], scales[-1]
    columns = (["page", "kind"] + [f"{s}× ms" for s in scales] + [f"{s}× queries" for s in scales]
               + [f"{last}×/{first}× time", "rows shown", "like for like"])
    rows = []
    for label, kind, *_ in pages(built[0]):
        times = [results[(label, s)][0] for s in scales]
        queries = [results[(label, s)][1] for s in scales]
        shown = [results[(label, s)][2] for s in scales]
        ratio = times[-1] / times[0] if times[0] else None
        fair = like_for_like(times, shown, scales)
        # A bounded page is judged like for like: against the smallest size showing as many rows when the
        # smallest size shows fewer; with no such size, on the plain ratio (its growth is not excused).
        judged = fair[0] if fair else ratio
        flag = ""
        if kind == BOUNDED and judged is not None and judged > 1.5:
            flag = " ⚠"
        if kind == PROJECT_WIDE and times[-1] > 300:
            flag = " ⚠ >300 ms"
        rows.append([label, kind, *[round(t, 1) for t in times], *queries,
                     f"{ratio:.2f}×{'' if fair else flag}" if ratio else None,
                     " / ".join(str(n) for n in shown) if shown[0] is not None else "",
                     f"{fair[0]:.2f}× vs {fair[1]}×{flag}" if fair else ""])
    sizes = "; ".join(f"{b.scale}×: {b.interviews:,} interviews, {b.segments:,} segments, {b.codings:,} codings, "
                      f"{b.memos:,} memos, {b.comments:,} comments (built in {b.seconds:.0f} s)" for b in built)
    return Section(
        title=TITLE, columns=columns, rows=rows,
        notes=f"{sizes}. In-process test client (full middleware and templates, DEBUG off, PostgreSQL, sessions and "
              f"users from Redis as in production). Every size is built before any is measured; each page is then timed {repeats} times at each size, the sizes in turn (a slow spell of the machine falls on all of them), best of each after one warm-up, so caches are warm. The interview, "
              "code and theme opened are the same corpus content at every size. Bounded pages show a bounded amount "
              "and should stay within 1.5× from the smallest to the largest size (⚠ when not). A list whose page at the "
              "smallest size shows fewer rows than at the largest (\"rows shown\": its project holds less than a page) "
              "is judged like for like: against the smallest size whose page shows as many rows, or on the plain "
              "ratio when none does. Project-wide pages may "
              "grow, at most linearly, and are flagged when over 300 ms at the largest size. The export row is a "
              "download when the table is small and a queued worker export (a redirect) when it is large. "
              "The machine is shared: read the ratios, not the milliseconds.",
    )
