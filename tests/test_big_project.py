"""A project with 250,000 interviews: every list page is paged and bounded, a slow statement is cut off
with a clear message, never a 500.

The project is built once for the module with bulk SQL (generate_series), committed, and removed at
the end; each test still runs in its own rolled-back transaction. Run these alone with `-m big`.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.urls import reverse

pytestmark = [pytest.mark.big, pytest.mark.slow]

INTERVIEWS = 250_000
MODELS = ("Claude", "DeepSeek", "Gemini", "GPT-4o", "Meta AI")
MAX_PAGE_BYTES = 1_000_000
# A fixed ceiling over every page (a theme's page, the heaviest, runs 30); each page's exact budget, the same
# in a small and a large project, is in its own query-count test.
MAX_QUERIES = 32


def _bulk_insert(project, code, coder) -> None:
    """Interviews with one answer turn of one segment each, every segment coded: four INSERT … SELECTs."""
    with connection.cursor() as cur:
        # The rows below reference only rows made here: skip the per-row foreign-key triggers (twice as fast).
        cur.execute("SET session_replication_role = replica")
        cur.execute("""
            INSERT INTO interviews_interview (uuid, title, conducted_at, origin, status, depth, notes, source_format,
                source_filename, source_sha256, source_conversation_id, metadata, created_at, updated_at, project_id,
                participant_id, content_sha256)
            SELECT gen_random_uuid(), 'Interview ' || i, now() - i * interval '1 minute', 'imported', 'ready',
                CASE WHEN i %% 2 = 0 THEN 'brief' ELSE 'comprehensive' END, '', 'text', '', '', '', '{}', now(), now(),
                %(project)s, (SELECT array_agg(id ORDER BY label) FROM interviews_participant WHERE project_id = %(project)s)[1 + i %% 5], ''
            FROM generate_series(1, %(n)s) AS i""", {"project": project.pk, "n": INTERVIEWS})
        # Every answer shares the words "home" and "feeling" (a broad search); one in 10,000 says "lighthouse".
        cur.execute("""
            INSERT INTO interviews_turn (uuid, position, speaker, text, model_slug, status, metadata, interview_id)
            SELECT gen_random_uuid(), 0, 'participant',
                'Home is a feeling that grows with time' || CASE WHEN id %% 10000 = 0 THEN ', like a lighthouse' ELSE '' END
                || ' (' || id || ').', '', 'complete', '{}', id
            FROM interviews_interview WHERE project_id = %(project)s""", {"project": project.pk})
        cur.execute("""
            INSERT INTO interviews_segment (position, start, "end", text, kind, speaker, interview_id, turn_id)
            SELECT 0, 0, char_length(t.text), t.text, 'sentence', 'participant', t.interview_id, t.id
            FROM interviews_turn t JOIN interviews_interview i ON i.id = t.interview_id WHERE i.project_id = %(project)s""",
                    {"project": project.pk})
        cur.execute("""
            INSERT INTO coding_coding (origin, note, created_at, code_id, coder_id, interview_id, segment_id)
            SELECT 'human', '', now(), %(code)s, %(coder)s, s.interview_id, s.id
            FROM interviews_segment s JOIN interviews_interview i ON i.id = s.interview_id WHERE i.project_id = %(project)s""",
                    {"project": project.pk, "code": code.pk, "coder": coder.pk})
        cur.execute("SET session_replication_role = DEFAULT")
        cur.execute("ANALYZE interviews_interview; ANALYZE interviews_turn; ANALYZE interviews_segment; ANALYZE coding_coding")


@pytest.fixture(scope="module")
def big(django_db_setup, django_db_blocker):
    """The 250,000-interview project, its members and one code used on every answer."""
    from django.contrib.auth import get_user_model

    from coding.models import Code
    from interviews.models import Participant
    from projects.models import Membership, Project, Role
    from themes.models import AgendaItem, Memo, Review, Theme, ThemeCode

    with django_db_blocker.unblock():
        run = uuid.uuid4().hex[:8]  # a run that crashed before its clean-up does not block the next one
        users = {name: get_user_model().objects.create_user(username=f"big-{name}-{run}", password="x")
                 for name in ("owner", "viewer")}
        project = Project.objects.create(name="Big project", created_by=users["owner"])
        try:
            Membership.objects.create(project=project, user=users["owner"], role=Role.OWNER)
            Membership.objects.create(project=project, user=users["viewer"], role=Role.VIEWER)
            for label in MODELS:
                Participant.objects.create(project=project, label=label)
            code = Code.objects.create(project=project, name="Belonging")
            theme = Theme.objects.create(project=project, name="Home as feeling")
            ThemeCode.objects.create(theme=theme, code=code)
            review = Review.objects.create(project=project, title="Weekly", date=dt.date.today())
            AgendaItem.objects.create(review=review, theme=theme, theme_name=theme.name)
            Memo.objects.bulk_create(Memo(project=project, author=users["owner"], title=f"Memo {i}", body="Noticed *this*.")
                                     for i in range(120))
            _bulk_insert(project, code, users["owner"])
            yield {"project": project, "code": code, "theme": theme, "review": review, **users}
        finally:
            _remove(project, users.values())


def _remove(project, users) -> None:
    with connection.cursor() as cur:
        cur.execute("SET statement_timeout = 0")
        cur.execute("SET session_replication_role = replica")  # nothing else references these rows
        for table in ("coding_coding", "interviews_segment", "interviews_turn"):
            cur.execute(f"DELETE FROM {table} WHERE interview_id IN (SELECT id FROM interviews_interview "  # noqa: S608
                        "WHERE project_id = %s)", [project.pk])
        cur.execute("DELETE FROM interviews_interview WHERE project_id = %s", [project.pk])
        cur.execute("SET session_replication_role = DEFAULT")
    project.delete()
    for user in users:
        user.delete()


def _page(name: str, *objects: str, query: str = ""):
    """The URL of a project page; `objects` name the fixture's objects its URL also takes."""
    return lambda b: reverse(name, args=[b["project"].uuid, *(b[o].uuid for o in objects)]) + query


def _api(path: str):
    return lambda b: f"/api/projects/{b['project'].uuid}/{path}"


# Every list in the URLconf, and the pages that list something of the project's.
LIST_PAGES = {
    "interviews": _page("interviews:list"),
    "interviews, page 2000 of the brief ones": _page("interviews:list", query="?depth=brief&page=2000"),
    "participants": _page("interviews:participants"),
    "statistics": _page("interviews:statistics"),
    "codebook": _page("coding:codebook"),
    "codebook, interviews page 5000": _page("coding:codebook", query="?interviews=5000"),
    "a code's excerpts": _page("coding:excerpts", "code"),
    "a code's excerpts, past the last page": _page("coding:excerpts", "code", query="?page=999999"),
    "codebook history": _page("coding:history"),
    "narrow search": _page("coding:search", query="?q=lighthouse"),
    "a theme's page (its excerpts)": _page("themes:detail", "theme"),
    "a theme's excerpts, page 500": _page("themes:detail", "theme", query="?page=500"),
    "review presenter (the theme's excerpts)": lambda b: reverse("themes:present", args=[b["project"].uuid, b["review"].uuid, 0]),
    "memo journal": _page("themes:journal"),
    "new memo": _page("themes:memo_new"),
    "themes board": _page("themes:board"),
    "mentions": _page("themes:mentions"),
    "review meetings": _page("themes:reviews"),
    "snapshots": _page("themes:snapshots"),
    "audit log": _page("projects:audit"),
    "trash": _page("projects:trash"),
    "members": _page("projects:members"),
    "conduct": _page("conduct:home"),
    "guides": _page("conduct:guides"),
    "live participants": _page("conduct:participants"),
    "reports": _page("reports:index"),
    "excerpt table builder": _page("reports:excerpts"),
    "frequency table": _page("reports:frequency"),
    "exchange": _page("reports:exchange"),
    "API: interviews": _api("interviews/"),
    "API: participants": _api("participants/"),
    "API: codes": _api("codes/"),
    "API: codings": _api("codings/"),
    "API: memos": _api("memos/"),
    "API: themes": _api("themes/"),
    "API: audit events": _api("audit-events/"),
    "API: trash": _api("trash/"),
    "API: excerpt table": _api("reports/excerpts/"),
}


@pytest.fixture
def owner_client(big, client):
    client.force_login(big["owner"])
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(LIST_PAGES))
def test_every_list_page_is_bounded_in_size_and_queries(big, owner_client, django_assert_max_num_queries, name):
    url = LIST_PAGES[name](big)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = owner_client.get(url)
    assert response.status_code == 200, (name, response.status_code)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert len(body) < MAX_PAGE_BYTES, f"{name}: {len(body):,} bytes"


@pytest.mark.django_db
def test_the_interview_list_pages_keep_their_filters_and_work_as_htmx_fragments(big, owner_client):
    url = reverse("interviews:list", args=[big["project"].uuid])
    page = owner_client.get(url + "?depth=brief&page=3").content.decode()
    assert "101–150 of 125000 · page 3 of 2500" in page
    assert 'href="' + url + '?depth=brief&amp;page=4"' in page and 'href="' + url + '?depth=brief&amp;page=2"' in page
    assert page.count('<a href="/p/') >= 50
    fragment = owner_client.get(url + "?depth=brief&page=4", headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section id="interview-table"')
    assert 'hx-get="' + url + '?depth=brief&amp;page=5" hx-target="#interview-table"' in fragment


@pytest.mark.django_db
def test_a_broad_search_answers_or_says_it_is_too_broad_within_the_statement_timeout(big, owner_client, settings):
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 300
    url = reverse("coding:search", args=[big["project"].uuid])
    response = owner_client.get(url + "?q=home feeling")
    assert response.status_code == 200
    page = response.content.decode()
    assert "This search is too broad for the time allowed; narrow it" in page or "Segments 1–50" in page
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 20_000  # the default: a narrow search answers, however busy the machine
    narrow = owner_client.get(url + "?q=lighthouse").content.decode()
    assert "Segments 1–25, best match first." in narrow and "like a lighthouse" in narrow


@pytest.mark.django_db
def test_a_page_whose_statement_is_cancelled_gets_a_clear_503_not_a_500(big, owner_client, settings):
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 1  # no page of this project reads in a millisecond
    response = owner_client.get(reverse("interviews:list", args=[big["project"].uuid]))
    assert response.status_code == 503
    assert "more than the database can read in the time allowed (0.001 s)" in response.content.decode()


@pytest.mark.django_db
def test_an_api_request_whose_statement_is_cancelled_gets_a_json_503(big, owner_client, settings):
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 1
    response = owner_client.get(f"/api/projects/{big['project'].uuid}/interviews/")
    assert response.status_code == 503
    assert response.json()["code"] == "statement_timeout" and "Narrow it" in response.json()["detail"]
