"""Reads shared by the themes pages and API, each a fixed number of queries."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from coding.models import Code
from projects.models import AuditEvent
from themes.excerpts import recent_excerpt_counts
from themes.models import Comment, Decision, Memo, Theme, ThemeCode, ThreadRead

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass
class BoardTheme:
    theme: Theme
    codes: list[Code] = field(default_factory=list)
    children: list[BoardTheme] = field(default_factory=list)
    excerpts: int = 0
    open_threads: int = 0
    unread: int = 0


def thread_counts(themes: list[Theme], user) -> dict[int, dict]:
    """Open threads and comments unread by `user` per theme id (1 query)."""
    last_read = ThreadRead.objects.filter(theme=OuterRef("theme_id"), user=user).values("last_read_at")[:1]
    rows = (
        Comment.objects.filter(theme__in=themes)
        .values("theme_id")
        .annotate(
            open=Count("id", filter=Q(parent__isnull=True, resolved_at__isnull=True)),
            unread=Count("id", filter=~Q(author=user) & Q(created_at__gt=Coalesce(Subquery(last_read), Value(EPOCH)))),
        )
    )
    return {r["theme_id"]: r for r in rows}


@dataclass
class ThreadWindow:
    """The comments of a theme's threads active since comment id `since`, and what the window leaves out.

    A thread (a top-level comment and its replies) is as recent as its newest comment, so a reply to an old
    thread brings it back into view. The counts are the whole thread's, shown or not.
    """

    comments: list[Comment]
    since: int
    older: int  # threads last active before `since`
    older_since: int  # the `since` that also shows the next `latest` of them
    token: str  # changes whenever a comment is posted, resolved or reopened
    open: int
    unread: int


# Counts over the theme's comments (by the theme index), none of them rendered: each thread's newest comment
# id ranks the threads. The unread rule is thread_context's: not by `user`, posted after they last read the
# thread or after the newest comment the polling page had shown.
_THREAD_WINDOW_SQL = """
WITH threads AS (
    SELECT COALESCE(parent_id, id) AS thread, MAX(id) AS last FROM themes_comment WHERE theme_id = %(theme)s GROUP BY 1
), ranked AS (
    SELECT last, ROW_NUMBER() OVER (ORDER BY last DESC) AS n FROM threads
), cut AS (
    SELECT {least}(COALESCE((SELECT last FROM ranked WHERE n = %(latest)s), 0), COALESCE(%(since)s, 9223372036854775807),
                 -- A returning reader sees every thread with a comment new to them: opening the page marks the
                 -- thread read, so one left out of view would never show as new.
                 COALESCE((SELECT MIN(id) FROM themes_comment WHERE theme_id = %(theme)s AND %(returning)s
                           AND author_id IS DISTINCT FROM %(user)s AND (created_at > %(read)s OR id > %(shown)s)),
                          9223372036854775807)) AS since
)
SELECT cut.since,
       (SELECT COUNT(*) FROM ranked WHERE last < cut.since),
       COALESCE((SELECT last FROM ranked WHERE last < cut.since ORDER BY last DESC LIMIT 1 OFFSET %(latest)s - 1), 0),
       c.last, c.n, c.resolved, c.open, c.unread
FROM cut, (
    SELECT COALESCE(MAX(id), 0) AS last, COUNT(*) AS n, COUNT(*) FILTER (WHERE resolved_at IS NOT NULL) AS resolved,
           COUNT(*) FILTER (WHERE parent_id IS NULL AND resolved_at IS NULL) AS open,
           COUNT(*) FILTER (WHERE author_id IS DISTINCT FROM %(user)s
                            AND (NOT %(returning)s OR created_at > %(read)s OR id > %(shown)s)) AS unread
    FROM themes_comment WHERE theme_id = %(theme)s
) c
"""


def _token(last: int, n: int, resolved: int) -> str:
    """Changes whenever a comment is posted, resolved or reopened; starts with the newest comment id."""
    return f"{last}-{n}-{resolved}"


def thread_token(theme: Theme) -> str:
    """The theme's thread token, as thread_window gives it (one aggregate query): a poll compares it first."""
    agg = Comment.objects.filter(theme=theme).aggregate(last=Max("id"), n=Count("id"), resolved=Count("id", filter=Q(resolved_at__isnull=False)))
    return _token(agg["last"] or 0, agg["n"], agg["resolved"])


def thread_window(theme: Theme, user, *, latest: int, since: int | None = None,
                  read_at: datetime.datetime | None = None, shown_up_to: int | None = None) -> ThreadWindow:
    """The `latest` most recently active threads of `theme`, every thread active since comment id `since`, and, for a
    reader who read the thread before (`read_at`), every thread with a comment new to them (2 queries)."""
    params = {"theme": theme.pk, "latest": latest, "since": since, "user": user.pk, "returning": read_at is not None,
              "read": connection.ops.adapt_datetimefield_value(read_at), "shown": shown_up_to}
    # SQLite, the laptop default, calls LEAST() MIN().
    least = "LEAST" if connection.vendor == "postgresql" else "MIN"
    with connection.cursor() as cursor:
        cursor.execute(_THREAD_WINDOW_SQL.format(least=least), params)
        cut, older, older_since, last, n, resolved, open_count, unread = cursor.fetchone()
    active = Comment.objects.filter(theme=theme, id__gte=cut).annotate(thread=Coalesce("parent_id", "id")).values("thread")
    comments = list(Comment.objects.filter(theme=theme).filter(Q(id__in=active) | Q(parent_id__in=active))
                    .select_related("author", "resolved_by"))
    return ThreadWindow(comments=comments, since=cut, older=older, older_since=older_since,
                        token=_token(last, n, resolved), open=open_count, unread=unread)


def seen_in_thread(user) -> Exists:
    """For a comment queryset: `user` has opened the comment's thread since it was posted."""
    return Exists(ThreadRead.objects.filter(theme=OuterRef("theme_id"), user=user, last_read_at__gte=OuterRef("created_at")))


# Plain SQL: the badge is on every project page, and the same count built with the ORM
# (joins, a subquery, a negated EXISTS) cost 4 ms of Python before the 1 ms query ran. The thread
# rule is seen_in_thread's, which the Mentions page uses: change both together.
_UNREAD_MENTIONS_SQL = """
SELECT count(*) FROM themes_comment c
JOIN themes_comment_mentions cm ON cm.comment_id = c.id
JOIN themes_theme t ON t.id = c.theme_id
LEFT JOIN themes_mentionsread mr ON mr.project_id = t.project_id AND mr.user_id = cm.user_id
WHERE cm.user_id = %(user)s AND t.project_id = %(project)s AND t.deleted_at IS NULL
  AND (c.author_id IS NULL OR c.author_id <> cm.user_id)
  AND (mr.last_read_at IS NULL OR c.created_at > mr.last_read_at)
  AND NOT EXISTS (SELECT 1 FROM themes_threadread tr
                  WHERE tr.theme_id = c.theme_id AND tr.user_id = cm.user_id AND tr.last_read_at >= c.created_at)
"""


def unread_mentions_count(project, user) -> int:
    """Comments mentioning `user` by someone else, seen neither on the Mentions page nor in their thread (1 query)."""
    with connection.cursor() as cursor:
        cursor.execute(_UNREAD_MENTIONS_SQL, {"user": user.pk, "project": project.pk})
        return cursor.fetchone()[0]


CODE_FILTERS = ("all", "unassigned")


def board(project, user, *, q: str = "", show: str = "all", changed: list[Theme] | None = None, moved: Code | None = None) -> dict:
    """Everything the themes board shows (6 queries, whatever the number of themes and codes).

    The codes come once, as the codebook's tree (parents before their children, each with its `depth`
    and `theme_count`); `q` and `show` mark the ones the code filter hides (`hidden`).
    With `changed` (the themes one move of the code `moved` touched), `columns` holds only the top-level columns
    around them, and counts are read for those columns and `moved` only: what a move's answer re-renders. The
    counts are recent_excerpt_counts' copies, so a move counts afresh only the themes whose codes it changed.
    """
    themes = list(Theme.objects.for_project(project).order_by("position", "name"))
    codes = list(Code.objects.for_project(project).filter(archived=False).order_by("position", "name"))
    code_by_id = {c.id: c for c in codes}
    placements = [(t, c) for t, c in ThemeCode.objects.filter(theme__in=themes).order_by("position", "id").values_list("theme_id", "code_id")
                  if c in code_by_id]
    shown = themes if changed is None else _same_columns(themes, changed)
    shown_ids = {t.id for t in shown}
    if changed is None:
        theme_counts, code_counts = recent_excerpt_counts(project, placements, list(code_by_id))
    else:
        code_ids = {c for t, c in placements if t in shown_ids} | ({moved.id} if moved else set())
        theme_counts, code_counts = recent_excerpt_counts(project, placements, list(code_by_id), themes=list(shown_ids),
                                                          codes=list(code_ids))
    for code in codes:
        code.segment_count = code_counts.get(code.id, 0)
    nodes = {t.id: BoardTheme(theme=t, excerpts=theme_counts.get(t.id, 0)) for t in shown}
    placed: dict[int, int] = {}
    for theme_id, code_id in placements:
        placed[code_id] = placed.get(code_id, 0) + 1
        if theme_id in nodes:
            nodes[theme_id].codes.append(code_by_id[code_id])
    for theme_id, counts in thread_counts(shown, user).items():
        nodes[theme_id].open_threads, nodes[theme_id].unread = counts["open"], counts["unread"]
    roots = []
    for theme in shown:
        parent = nodes.get(theme.parent_id)
        (parent.children if parent else roots).append(nodes[theme.id])
    tree = code_tree(codes, placed, q=q, show=show)
    return {
        "columns": [n for n in roots if n.theme.status != Theme.Status.DISCARDED],
        "discarded": [n for n in roots if n.theme.status == Theme.Status.DISCARDED],
        "codes": tree,
        "code_matches": any(not c.hidden for c in tree),
        "unassigned_count": sum(1 for c in codes if c.id not in placed),
        "all_themes": themes,
        "code_q": q,
        "code_show": show if show in CODE_FILTERS else "all",
    }


def _same_columns(themes: list[Theme], changed: list[Theme]) -> list[Theme]:
    """`themes` that sit in the same top-level column as one of `changed` (a column shows its sub-themes)."""
    parent = {t.id: t.parent_id for t in themes}

    def top(theme_id: int) -> int:
        seen = set()
        while parent.get(theme_id) in parent and theme_id not in seen:
            seen.add(theme_id)
            theme_id = parent[theme_id]
        return theme_id

    tops = {top(t.id) for t in changed}
    return [t for t in themes if top(t.id) in tops]


def code_tree(codes: list[Code], placed: dict[int, int], *, q: str = "", show: str = "all") -> list[Code]:
    """`codes` parents first, each with `depth`, `parent_uuid`, `theme_count` and `hidden` (by the filter).

    A code the filter hides stays shown (`context`) when one of its descendants is shown, so the tree reads.
    """
    ids = {c.id for c in codes}
    by_parent: dict[int | None, list[Code]] = {}
    for c in codes:  # a code under an archived parent stands at the top
        by_parent.setdefault(c.parent_id if c.parent_id in ids else None, []).append(c)
    ordered: list[Code] = []

    def walk(parent: Code | None, depth: int) -> None:
        for c in by_parent.get(parent.id if parent else None, []):
            c.depth, c.parent_uuid, c.theme_count = depth, parent.uuid if parent else "", placed.get(c.id, 0)
            ordered.append(c)
            walk(c, depth + 1)

    walk(None, 0)
    seen = {c.id for c in ordered}
    for c in codes:  # parents in a loop never hang from the top: listed there rather than lost
        if c.id not in seen:
            c.depth, c.parent_uuid, c.theme_count = 0, "", placed.get(c.id, 0)
            ordered.append(c)
    needle = q.strip().lower()
    revealed: set[str] = set()
    for c in reversed(ordered):  # children come after their parent: reveal ancestors on the way up
        matches = (show != "unassigned" or not c.theme_count) and needle in c.name.lower()
        c.context = not matches and str(c.uuid) in revealed
        c.hidden = not matches and not c.context
        if not c.hidden and c.parent_uuid:
            revealed.add(str(c.parent_uuid))
    return ordered


def map_data(project) -> dict:
    """Nodes (themes, sub-themes, codes; sized by excerpts) and edges of the thematic map (2 queries, 4 to count).

    The sizes are the board's counts (recent_excerpt_counts: copies of at most a minute ago, a moved code counted at
    once): counting every coding of the project took 420 ms at 50× the peer corpus, on every opening of the map.
    """
    themes = list(Theme.objects.for_project(project).exclude(status=Theme.Status.DISCARDED).order_by("position", "name"))
    theme_ids = {t.id for t in themes}
    placements = list(ThemeCode.objects.filter(theme__in=themes, code__deleted_at__isnull=True).select_related("code"))
    theme_counts, code_counts = recent_excerpt_counts(project, [(tc.theme_id, tc.code_id) for tc in placements],
                                                      sorted({tc.code_id for tc in placements}))
    nodes, edges, seen_codes = [], [], set()
    for t in themes:
        nodes.append({"data": {
            "id": f"t{t.id}", "uuid": str(t.uuid), "label": t.name, "kind": "subtheme" if t.parent_id in theme_ids else "theme",
            "status": t.status, "colour": t.colour, "size": theme_counts.get(t.id, 0),
        }})
        if t.parent_id in theme_ids:
            edges.append({"data": {"id": f"t{t.parent_id}-t{t.id}", "source": f"t{t.parent_id}", "target": f"t{t.id}", "kind": "subtheme"}})
    for tc in placements:
        if tc.code_id not in seen_codes:
            seen_codes.add(tc.code_id)
            nodes.append({"data": {"id": f"c{tc.code_id}", "label": tc.code.name, "kind": "code", "colour": tc.code.colour,
                                   "size": code_counts.get(tc.code_id, 0)}})
        edges.append({"data": {"id": f"t{tc.theme_id}-c{tc.code_id}", "source": f"t{tc.theme_id}", "target": f"c{tc.code_id}", "kind": "code"}})
    return {"nodes": nodes, "edges": edges}


def map_outline(data: dict) -> list[dict]:
    """The map (map_data) as a nested list, themes → sub-themes → codes: what the picture shows, for reading it
    without the picture (a screen reader, the keyboard) and for finding a node among many."""
    nodes = {node["data"]["id"]: node["data"] for node in data["nodes"]}
    children: dict[str, list[str]] = {}
    nested = set()
    for edge in data["edges"]:
        children.setdefault(edge["data"]["source"], []).append(edge["data"]["target"])
        if edge["data"]["kind"] == "subtheme":
            nested.add(edge["data"]["target"])

    def entry(node_id: str) -> dict:
        return {**nodes[node_id], "children": [entry(child) for child in children.get(node_id, [])]}

    return [entry(node_id) for node_id, node in nodes.items() if node["kind"] != "code" and node_id not in nested]


def theme_last_edit(theme: Theme) -> AuditEvent | None:
    """The audit event of the edit that made the theme's current version (who and when), if one was recorded."""
    return (AuditEvent.objects.filter(project_id=theme.project_id, target_type="theme", target_id=str(theme.uuid),
                                      action=AuditEvent.Action.CHANGED, data__version=theme.version)
            .select_related("actor").order_by("-created_at", "-id").first())


@dataclass
class ThemeNotice:
    """What became of a theme a page shows, for the people still looking at it: "trashed", "merged", "renamed" or
    "gone" (purged), with the theme as it is now, the theme it went into, and the audit event saying who and when."""

    what: str
    theme: Theme | None = None
    into: Theme | None = None
    event: AuditEvent | None = None


def theme_notice(project, theme_uuid, *, shown_name: str | None = None) -> ThemeNotice | None:
    """Whether the theme is still on the board as a page showed it (`shown_name`: the name it showed); None if so."""
    theme = Theme.objects.filter(project=project, uuid=theme_uuid).first()
    if theme is None:
        return ThemeNotice("gone")
    events = AuditEvent.objects.filter(project_id=project.pk, target_type="theme").select_related("actor").order_by("-created_at", "-id")
    if theme.merged_into_id:
        return ThemeNotice("merged", theme, Theme.objects.merge_destination(project, theme.uuid),
                           events.filter(data__source=str(theme.uuid)).first())
    if theme.deleted_at:
        # A sub-theme trashed with its parent has no event of its own: then only when is known.
        return ThemeNotice("trashed", theme, event=events.filter(target_id=str(theme.uuid), action=AuditEvent.Action.DELETED).first())
    if shown_name is not None and shown_name != theme.name:
        return ThemeNotice("renamed", theme, event=theme_last_edit(theme))
    return None


def with_target_themes(decisions: list[Decision]) -> list[Decision]:
    """Load the themes merges fold into and code moves go to, for all the decisions in one query (Decision.target_theme).
    Decisions whose target is already loaded (a list serializer did it for the page) are left as they are."""
    waiting = [d for d in decisions if d.kind in Decision.TARGET_KEYS and "target_theme" not in d.__dict__]
    wanted = {u for d in waiting if isinstance(u := d.payload.get(Decision.TARGET_KEYS[d.kind]), str)}
    found = {str(t.uuid): t for t in Theme.objects.filter(uuid__in=wanted).select_related("merged_into")} if wanted else {}
    for decision in waiting:
        decision.target_theme = found.get(decision.payload.get(Decision.TARGET_KEYS[decision.kind]))
    return decisions


def familiarisation_memos(interview) -> list[Memo]:
    """The journal's familiarisation memos on an interview, newest first, with their authors (one query): the coding
    workspace lists them beside its own familiarisation notes on the same interview."""
    return list(Memo.objects.alive().filter(interview=interview, kind=Memo.Kind.FAMILIARISATION)
                .select_related("author").order_by("-updated_at", "-id"))
