"""Every themes page keeps a constant number of queries as themes, codes, excerpts, memos and comments grow."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from themes import services
from themes.models import AgendaItem, Snapshot, Theme

pytestmark = pytest.mark.django_db


@pytest.fixture
def grow(project, owner, analyst, make_code, make_interview, code_segment):
    """Each call adds themes with sub-themes, codes, coded excerpts from several models, exemplars, memos and comments."""
    state = {"round": 0, "first": None, "review": None, "memo": None}

    def more() -> None:
        state["round"] += 1
        n = state["round"]
        for i in range(3):
            theme = services.theme_create(project=project, actor=owner, name=f"Theme {n}.{i}")
            sub = services.theme_create(project=project, actor=owner, name=f"Sub {n}.{i}", parent=theme)
            state["first"] = state["first"] or theme
            for label in ("GPT-4o", "Claude", f"Model {n}"):
                code = make_code(f"code {n}.{i} {label}")
                services.theme_add_code(theme=theme, actor=owner, code=code)
                services.theme_add_code(theme=sub, actor=owner, code=code)
                services.theme_add_code(theme=state["first"], actor=owner, code=code)
                _, segments = make_interview(label)
                code_segment(code, segments[0], segments[1])
                code_segment(code, segments[3], coder=analyst)
                services.exemplar_pin(theme=state["first"], actor=owner, segment=segments[3])
            memo = services.memo_create(project=project, actor=owner, title=f"Memo {n}.{i}", body="**b** @arjun", kind="analytic", theme=theme)
            state["memo"] = state["memo"] or memo
            first_memo = state["memo"]
            first_memo.refresh_from_db()
            services.memo_update(memo=first_memo, actor=analyst, base_version=first_memo.version, title=first_memo.title,
                                 body=first_memo.body + f"\nline {n}.{i}", kind="analytic")
            services.memo_create(project=project, actor=analyst, title=f"Code memo {n}.{i}", body="c", kind="reflexive", code=code)
            top = services.comment_post(theme=state["first"], actor=owner, body=f"Point {n}.{i} for @arjun")
            services.comment_post(theme=state["first"], actor=analyst, body="reply", parent=top)
        make_code(f"unassigned {n}")
        if state["review"] is None:
            state["review"] = services.review_create(project=project, actor=owner, title="R", date="2026-11-22", attendees=[owner, analyst])
        AgendaItem.objects.bulk_create(
            [AgendaItem(review=state["review"], theme=t, position=t.position)
             for t in Theme.objects.for_project(project).exclude(id__in=AgendaItem.objects.filter(review=state["review"]).values("theme_id"))]
        )
        services.decision_record(review=state["review"], theme=state["first"], actor=owner, kind="status", payload={"status": "reviewed"})
        # Decisions aiming at another theme, which then goes to the trash: the page says so for each without a query each.
        target = services.theme_create(project=project, actor=owner, name=f"Target {n}")
        services.decision_record(review=state["review"], theme=state["first"], actor=owner, kind="merge", payload={"into": str(target.uuid)})
        services.decision_record(review=state["review"], theme=state["first"], actor=owner, kind="move_codes",
                                 payload={"to": str(target.uuid), "codes": [str(code.uuid)]})
        services.theme_delete(theme=target, actor=owner)
        services.snapshot_take(project=project, actor=owner, label=f"round {n}")

    more.state = state
    return more


PAGES = {
    "board": lambda p, s: reverse("themes:board", args=[p.uuid]),
    "map data": lambda p, s: reverse("themes:map_data", args=[p.uuid]),
    "map": lambda p, s: reverse("themes:map", args=[p.uuid]),
    "theme page": lambda p, s: reverse("themes:detail", args=[p.uuid, s["first"].uuid]),
    "theme editor": lambda p, s: reverse("themes:edit", args=[p.uuid, s["first"].uuid]),
    "theme excerpt counts": lambda p, s: reverse("themes:excerpt_counts", args=[p.uuid, s["first"].uuid]),
    "thread": lambda p, s: reverse("themes:thread", args=[p.uuid, s["first"].uuid]),
    "thread, every older thread": lambda p, s: reverse("themes:thread", args=[p.uuid, s["first"].uuid]) + "?since=0",
    "journal": lambda p, s: reverse("themes:journal", args=[p.uuid]),
    "mentions": lambda p, s: reverse("themes:mentions", args=[p.uuid]),
    "meetings": lambda p, s: reverse("themes:reviews", args=[p.uuid]),
    "meeting": lambda p, s: reverse("themes:review", args=[p.uuid, s["review"].uuid]),
    "presenter": lambda p, s: reverse("themes:present", args=[p.uuid, s["review"].uuid, 0]),
    "snapshots": lambda p, s: reverse("themes:snapshots", args=[p.uuid]),
    "snapshot compare": lambda p, s: reverse("themes:snapshot_compare", args=[p.uuid]) + "?a={}&b={}".format(
        *Snapshot.objects.filter(project=p).order_by("taken_at", "id").values_list("uuid", flat=True)[:1],
        Snapshot.objects.filter(project=p).latest("taken_at", "id").uuid),
    "memo": lambda p, s: reverse("themes:memo", args=[p.uuid, s["memo"].uuid]),
    "memo revision diff": lambda p, s: reverse("themes:memo_revision", args=[p.uuid, s["memo"].uuid, 2]),
    "memo editor": lambda p, s: reverse("themes:memo_edit", args=[p.uuid, s["memo"].uuid]),
    "new memo": lambda p, s: reverse("themes:memo_new", args=[p.uuid]),
}


@pytest.mark.parametrize("page", list(PAGES))
def test_queries_do_not_grow_with_rows(page, grow, project, analyst, client_for, django_assert_num_queries):
    client = client_for(analyst)
    grow()
    url = PAGES[page](project, grow.state)
    client.get(url)  # warm caches (content types, sessions)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    budget = len(small.captured_queries)
    grow()
    grow()
    client.get(url)  # pages' own caches fill again (the board's counts are kept per placement of codes)
    # Same number of queries with three times the themes, codes, excerpts, memos and comments.
    with django_assert_num_queries(budget):
        assert client.get(url).status_code == 200


def test_board_query_budget(grow, project, analyst, client_for, django_assert_num_queries):
    grow()
    client = client_for(analyst)
    url = reverse("themes:board", args=[project.uuid])
    client.get(url)
    # session, user, membership+project, themes, codes, theme-code placements, thread counts, unread-mentions badge;
    # the excerpt counts come from the copy the first request kept (themes.excerpts.recent_excerpt_counts).
    with django_assert_num_queries(8):
        client.get(url)
    grow()  # new placements: the counts are taken again, in two queries
    with django_assert_num_queries(10):
        client.get(url)


def test_theme_page_query_budget(grow, project, analyst, client_for, django_assert_num_queries):
    grow()
    client = client_for(analyst)
    url = PAGES["theme page"](project, grow.state)
    client.get(url)
    # session, user, membership+project, theme; its codes, a page of interviews, their codings, the turns' texts
    # (an excerpt's bounds come with its codings); exemplars, memos on the theme and on its codes, sub-themes,
    # status history; the thread (read marker, members to mention, threads, their comments); unread-mentions badge.
    with django_assert_num_queries(18):
        client.get(url)
