from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from themes import services
from themes.models import Comment, Decision, Exemplar, Memo, Review, Snapshot, Theme, ThemeCode

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(project, owner, make_code, make_interview, code_segment):
    """Two themes with codes, coded excerpts from two models, a memo, a comment, a meeting with a decision."""
    a = services.theme_create(project=project, actor=owner, name="Honesty about limits")
    b = services.theme_create(project=project, actor=owner, name="Friendship")
    x, y = make_code("admits uncertainty"), make_code("user as friend")
    services.theme_add_code(theme=a, actor=owner, code=x)
    services.theme_add_code(theme=b, actor=owner, code=y)
    interview, segments = make_interview("GPT-4o")
    code_segment(x, segments[0])
    code_segment(y, segments[3])
    exemplar = services.exemplar_pin(theme=a, actor=owner, segment=segments[0])
    memo = services.memo_create(project=project, actor=owner, title="Reading GPT", body="*first* thoughts", kind="reflexive", theme=a)
    comment = services.comment_post(theme=a, actor=owner, body="Is this @arjun's theme?")
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner], themes=[a, b])
    decision = services.decision_record(review=review, theme=b, actor=owner, kind="rename", payload={"name": "Being a friend"})
    return {"a": a, "b": b, "x": x, "y": y, "segments": segments, "exemplar": exemplar, "memo": memo, "comment": comment,
            "review": review, "decision": decision, "interview": interview}


def u(name, project, *args, **query):
    url = reverse(f"themes:{name}", args=[project.uuid, *args])
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


READ_PAGES = [
    ("board", lambda w: []), ("map", lambda w: []), ("map_data", lambda w: []), ("mentions", lambda w: []),
    ("detail", lambda w: [w["a"].uuid]), ("excerpt_counts", lambda w: [w["a"].uuid]), ("thread", lambda w: [w["a"].uuid]),
    ("journal", lambda w: []), ("memo", lambda w: [w["memo"].uuid]), ("memo_revision", lambda w: [w["memo"].uuid, 1]),
    ("reviews", lambda w: []), ("review", lambda w: [w["review"].uuid]), ("present", lambda w: [w["review"].uuid, 0]),
    ("snapshots", lambda w: []),
]


@pytest.mark.parametrize("name,args", READ_PAGES, ids=[p[0] for p in READ_PAGES])
def test_read_pages_open_for_members_and_404_for_outsiders(name, args, world, project, viewer, outsider, client_for):
    url = u(name, project, *args(world))
    assert client_for(viewer).get(url).status_code == 200
    assert client_for(outsider).get(url).status_code == 404


FORMS = [("edit", lambda w: [w["a"].uuid]), ("memo_new", lambda w: []), ("memo_edit", lambda w: [w["memo"].uuid])]


@pytest.mark.parametrize("name,args", FORMS, ids=[f[0] for f in FORMS])
def test_edit_forms_are_for_writers(name, args, world, project, analyst, viewer, outsider, client_for):
    url = u(name, project, *args(world))
    assert client_for(analyst).get(url).status_code == 200
    assert client_for(viewer).get(url).status_code == 403
    assert client_for(outsider).get(url).status_code == 404


def test_a_memo_can_be_about_a_code_or_interview_from_the_about_menu(world, project, analyst, client_for):
    client = client_for(analyst)
    assert f'value="code:{world["x"].uuid}"' in client.get(u("memo_new", project)).content.decode()
    client.post(u("memo_new", project), {"title": "On the code", "body": "", "kind": "analytic", "about": f"code:{world['x'].uuid}"})
    client.post(u("memo_new", project), {"title": "On the interview", "body": "", "kind": "familiarisation",
                                         "about": f"interview:{world['interview'].uuid}"})
    assert Memo.objects.get(title="On the code").code == world["x"]
    assert Memo.objects.get(title="On the interview").interview == world["interview"]
    assert client.post(u("memo_new", project), {"title": "x", "kind": "analytic", "about": "code:00000000-0000-0000-0000-000000000000"}).status_code == 404


def _writes(w) -> list[tuple[str, list, dict]]:
    """(url name, args, POST data) of every writing view, valid for an analyst."""
    return [
        ("create", [], {"name": "New theme"}),
        ("code_place", [], {"action": "add", "code": w["y"].uuid, "theme": w["a"].uuid}),
        ("edit", [w["a"].uuid], {"name": "Honesty", "definition": "d", "colour": "#123456", "parent": "", "version": "1"}),
        ("status", [w["a"].uuid], {"status": "reviewed"}),
        ("reorder", [w["b"].uuid], {"direction": "left"}),
        ("exemplar_pin", [w["a"].uuid], {"segment": w["segments"][0].id}),
        ("exemplar_change", [w["exemplar"].uuid], {"action": "down"}),
        ("thread", [w["a"].uuid], {"body": "A new point"}),
        ("comment_resolve", [w["comment"].uuid], {"resolved": "1"}),
        ("memo_new", [], {"title": "t", "body": "b", "kind": "analytic"}),
        ("memo_edit", [w["memo"].uuid], {"title": "t2", "body": "b2", "kind": "analytic", "base_version": "1"}),
        ("reviews", [], {"title": "Round 2", "date": "2026-11-29", "themes": w["a"].uuid}),
        ("review_notes", [w["review"].uuid], {"notes": "We agreed", "notes_version": "1"}),
        ("review_edit", [w["review"].uuid], {"title": "Round 1b", "date": "2026-11-23", "attendees": "arjun", "themes": [w["b"].uuid, w["a"].uuid]}),
        ("decision_create", [w["review"].uuid], {"theme": w["a"].uuid, "kind": "status", "status": "reviewed"}),
        ("decision_apply", [w["decision"].uuid], {}),
        ("decision_decline", [w["decision"].uuid], {"reason": "We kept it"}),
        ("review_close", [w["review"].uuid], {"confirm": "on"}),
        ("snapshots", [], {"label": "Now"}),
        ("memo_delete", [w["memo"].uuid], {}),
        ("delete", [w["b"].uuid], {}),
    ]


WRITE_NAMES = [w[0] for w in _writes({k: type("X", (), {"uuid": "0", "id": 0})() if k != "segments" else [type("S", (), {"id": 0})()]
                                      for k in ("a", "b", "x", "y", "segments", "exemplar", "memo", "comment", "review", "decision")})]


@pytest.mark.parametrize("index", range(len(WRITE_NAMES)), ids=WRITE_NAMES)
def test_writing_views_member_outsider_viewer(index, world, project, analyst, viewer, outsider, client_for):
    name, args, data = _writes(world)[index]
    url = u(name, project, *args)
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(viewer).post(url, data).status_code == 403
    response = client_for(analyst).post(url, data)
    assert response.status_code in (200, 302), (name, response.status_code, response.content[:500])


def test_code_place_returns_the_board_fragment_for_one_drag(world, project, analyst, client_for):
    response = client_for(analyst).post(u("code_place", project), {"action": "move", "code": world["x"].uuid,
                                                                    "source": world["a"].uuid, "theme": world["b"].uuid},
                                        headers={"X-Fragment": "1"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="board"') and "<html" not in html
    assert list(ThemeCode.objects.filter(theme=world["b"]).values_list("code__name", flat=True)) == ["user as friend", "admits uncertainty"]
    assert not ThemeCode.objects.filter(theme=world["a"]).exists()



def test_one_move_answers_with_only_what_it_changed(world, project, owner, analyst, client_for, make_code):
    bystander = services.theme_create(project=project, actor=owner, name="Untouched")
    sub = services.theme_create(project=project, actor=owner, name="Inside friendship", parent=world["b"])
    spare = make_code("spare")
    response = client_for(analyst).post(u("code_place", project), {"action": "move", "code": world["x"].uuid,
                                                                    "source": world["a"].uuid, "theme": sub.uuid},
                                        headers={"X-Fragment": "changes"})
    assert response.status_code == 200
    html = response.content.decode()
    ids = re.findall(r'<(?:section|li|p)\s[^>]*?\bid="([^"]+)"', html)
    # The two top-level columns (the sub-theme inside its parent's), the moved code's chip, the count.
    assert ids == [f"theme-{world['a'].uuid}", f"theme-{world['b'].uuid}", f"theme-{sub.uuid}", f"code-{world['x'].uuid}",
                   "unassigned-count"]
    assert str(bystander.uuid) not in html and str(spare.uuid) not in html and 'id="board"' not in html
    column_a = html.split(f'id="theme-{world["a"].uuid}"')[1].split("</section>")[0]
    assert "0 codes · 0 excerpts" in column_a
    column_sub = html.split(f'id="theme-{sub.uuid}"')[1].split("</section>")[0]
    assert "admits uncertainty" in column_sub and "1 code · 1 excerpt" in column_sub
    assert "1 in no theme yet" in html  # spare


def test_a_move_answers_in_the_same_queries_on_a_small_and_a_large_board(world, project, owner, analyst, client_for, make_code,
                                                                        django_assert_num_queries):
    client = client_for(analyst)

    def move(code, source, target):
        return client.post(u("code_place", project), {"action": "move", "code": code.uuid, "source": source.uuid, "theme": target.uuid},
                           headers={"X-Fragment": "changes"})

    # Each measured move leaves both themes with codes they never held, so both are counted afresh
    # (recent_excerpt_counts keeps a theme's count by the codes it holds).
    spare = [make_code(f"spare {i}") for i in range(2)]
    for code in spare:
        services.theme_add_code(theme=world["a"], actor=owner, code=code)
    move(world["x"], world["a"], world["b"])
    with CaptureQueriesContext(connection) as small:
        assert move(spare[1], world["a"], world["b"]).status_code == 200  # the last in its theme: no renumbering
    for i in range(8):
        theme = services.theme_create(project=project, actor=owner, name=f"More {i}")
        services.theme_add_code(theme=theme, actor=owner, code=make_code(f"more {i}"))
        services.comment_post(theme=theme, actor=owner, body="a point")
    with django_assert_num_queries(len(small)):
        assert move(spare[0], world["a"], world["b"]).status_code == 200


def test_a_move_counts_afresh_only_the_themes_it_changed_and_the_board_keeps_them(world, project, owner, analyst, client_for,
                                                                                 code_segment):
    client = client_for(analyst)

    def counted(response) -> list[str]:
        return [q["sql"] for q in response if "WITH coded AS" in q["sql"] or "COUNT(DISTINCT c.segment_id)" in q["sql"]]

    def column(html: str, theme) -> str:
        return html.split(f'id="theme-{theme.uuid}"')[1].split("</section>")[0]

    client.get(u("board", project))
    with CaptureQueriesContext(connection) as moving:
        html = client.post(u("code_place", project), {"action": "move", "code": world["x"].uuid, "source": world["a"].uuid,
                                                      "theme": world["b"].uuid}, headers={"X-Fragment": "changes"}).content.decode()
    (themes_counted,) = counted(moving.captured_queries)  # the codes' counts are the board's copy: a move does not change them
    assert "WITH coded AS" in themes_counted and "2 codes · 2 excerpts" in column(html, world["b"])
    with CaptureQueriesContext(connection) as board:
        html = client.get(u("board", project)).content.decode()
    assert counted(board.captured_queries) == []
    assert "0 codes · 0 excerpts" in column(html, world["a"]) and "2 codes · 2 excerpts" in column(html, world["b"])


def test_a_new_code_shows_its_count_on_the_board_at_once(world, project, owner, analyst, client_for, make_code, code_segment):
    client = client_for(analyst)
    client.get(u("board", project))
    fresh = make_code("fresh")
    code_segment(fresh, world["segments"][2])
    html = client.get(u("board", project)).content.decode()
    chip = html.split(f'id="code-{fresh.uuid}"')[1].split("</li>")[0]
    assert '<span class="count" title="coded segments">1</span>' in chip


def test_the_board_escapes_code_and_theme_names_in_chips(world, project, owner, analyst, viewer, client_for, make_code):
    odd = make_code('<b>"bold" & co</b>')
    services.theme_add_code(theme=world["a"], actor=owner, code=odd)
    html = client_for(analyst).get(u("board", project)).content.decode()
    assert "<b>" not in html
    assert html.count('data-code-name="&lt;b&gt;&quot;bold&quot; &amp; co&lt;/b&gt;"') == 2  # the list and the column
    assert 'aria-label="Move “&lt;b&gt;&quot;bold&quot; &amp; co&lt;/b&gt;” in Honesty about limits…"' in html
    read_only = client_for(viewer).get(u("board", project)).content.decode()
    assert "move-btn" not in read_only and 'draggable="true"' not in read_only


def test_the_board_counts_excerpts_once_a_minute_but_shows_a_move_at_once(world, project, owner, analyst, client_for,
                                                                         code_segment):
    client = client_for(analyst)

    def column(html: str, theme) -> str:
        return html.split(f'id="theme-{theme.uuid}"')[1].split("</section>")[0]

    assert "1 code · 1 excerpt" in column(client.get(u("board", project)).content.decode(), world["b"])
    code_segment(world["y"], world["segments"][1])  # a new coding: counted again within the minute, not per view
    with CaptureQueriesContext(connection) as queries:
        html = client.get(u("board", project)).content.decode()
    assert "1 code · 1 excerpt" in column(html, world["b"])
    assert not any("WITH coded AS" in q["sql"] for q in queries.captured_queries)
    services.theme_add_code(theme=world["b"], actor=owner, code=world["x"])  # a move changes the counts' key
    html = client.get(u("board", project)).content.decode()
    assert "2 codes · 2 excerpts" in column(html, world["b"])  # x's segment 0 and y's segments 1 and 3: two runs

def test_code_place_explains_a_bad_request(world, project, analyst, client_for):
    response = client_for(analyst).post(u("code_place", project), {"action": "fly", "code": world["x"].uuid}, headers={"X-Fragment": "1"})
    assert response.status_code == 400
    assert "add, move, remove, up or down" in response.content.decode()


def _code_list(html: str) -> list[tuple[str, str, bool]]:
    """(name, depth, hidden) of each code in the board's code list, in order."""
    import re

    listed = html.split('aria-labelledby="codebook-h"')[1].split("</section>")[0]
    return [(name, depth, bool(hidden)) for depth, hidden, name in
            re.findall(r'style="--depth: (\d+)"( hidden)?[^>]*>.*?<span class="code-name">([^<]+)</span>', listed, re.S)]


def test_board_lists_each_code_once_as_a_tree_and_counts_the_unassigned(world, project, analyst, make_code, client_for):
    lonely = make_code("lonely code")
    child = make_code("lonelier child")
    child.parent = lonely
    child.save(update_fields=["parent"])
    world["y"].parent = world["x"]
    world["y"].save(update_fields=["parent"])
    html = client_for(analyst).get(u("board", project)).content.decode()
    assert _code_list(html) == [("admits uncertainty", "0", False), ("user as friend", "1", False),
                                ("lonely code", "0", False), ("lonelier child", "1", False)]
    assert "2 in no theme yet" in html
    assert "1 new" in html  # the owner's comment is unread for the analyst
    client_for(analyst).get(u("detail", project, world["a"].uuid))
    assert "1 new" not in client_for(analyst).get(u("board", project)).content.decode()


def test_board_code_filter_works_without_javascript_and_keeps_the_parents_of_what_it_shows(
        world, project, analyst, make_code, client_for):
    child = make_code("unplaced child")
    child.parent = world["x"]  # "admits uncertainty" sits in a theme
    child.save(update_fields=["parent"])
    c = client_for(analyst)
    unassigned = c.get(u("board", project, show="unassigned")).content.decode()
    assert _code_list(unassigned) == [("admits uncertainty", "0", False), ("unplaced child", "1", False),
                                      ("user as friend", "0", True)]
    assert 'class="code-chip context"' in unassigned  # the parent is shown for the tree, dimmed
    assert 'value="unassigned" checked' in unassigned
    by_name = c.get(u("board", project, q="FRIEND")).content.decode()
    assert [hidden for _, _, hidden in _code_list(by_name)] == [True, True, False]
    nothing = c.get(u("board", project, q="zebra")).content.decode()
    assert '<p class="empty" id="no-code-matches">' in nothing


def test_theme_page_shows_excerpts_by_model_exemplars_memos_and_thread(world, project, viewer, client_for):
    html = client_for(viewer).get(u("detail", project, world["a"].uuid)).content.decode()
    assert "GPT-4o" in html and "I try to be honest" in html
    counts_url = u("excerpt_counts", project, world["a"].uuid)
    assert f'hx-get="{counts_url}" hx-trigger="load"' in html  # the counts by model come once the page is shown
    counts = client_for(viewer).get(counts_url).content.decode()
    assert "1 of 1" in counts and '<span class="badge" id="excerpt-total" hx-swap-oob="true">1</span>' in counts
    assert "“I try to be honest about what I do not know.”" in html  # the exemplar
    assert "Reading GPT" in html
    assert '<span class="mention">@arjun</span>' in html
    services.memo_create(project=project, actor=viewer, title="About uncertainty", body="", kind="analytic", code=world["x"])
    assert "About uncertainty" in client_for(viewer).get(u("detail", project, world["a"].uuid)).content.decode()
    assert "Pin as exemplar" not in html  # viewers cannot pin


def test_thread_poll_returns_204_until_something_changes(world, project, analyst, owner, client_for):
    client = client_for(analyst)
    first = client.get(u("thread", project, world["a"].uuid))
    token = first.content.decode().split("token=")[1].split('"')[0]
    assert client.get(u("thread", project, world["a"].uuid, token=token)).status_code == 204
    services.comment_post(theme=world["a"], actor=owner, body="Another thought")
    again = client.get(u("thread", project, world["a"].uuid, token=token))
    assert again.status_code == 200 and "Another thought" in again.content.decode()
    assert 'class="badge unread">new' in again.content.decode()


def test_a_colleagues_comment_stays_new_to_a_page_that_had_not_shown_it_though_another_render_read_it(
    world, project, analyst, owner, client_for,
):
    client = client_for(analyst)
    first = client.get(u("thread", project, world["a"].uuid))
    token = first.content.decode().split("token=")[1].split('"')[0]
    services.comment_post(theme=world["a"], actor=owner, body="Another thought")
    client.get(u("detail", project, world["a"].uuid))  # the theme page in another tab marks the thread read
    again = client.get(u("thread", project, world["a"].uuid, token=token)).content.decode()
    assert "Another thought" in again and again.count('class="badge unread">new') == 1
    fresh = client.get(u("thread", project, world["a"].uuid)).content.decode()
    assert 'class="badge unread">new' not in fresh  # read, for a page that shows the thread anew


def test_opening_a_theme_writes_the_read_marker_only_when_it_shows_something_new(world, project, analyst, owner, client_for):
    client = client_for(analyst)

    def open_theme() -> tuple[str, list[str]]:
        with CaptureQueriesContext(connection) as queries:
            html = client.get(u("detail", project, world["a"].uuid)).content.decode()
        return html, [q["sql"] for q in queries.captured_queries if "themes_threadread" in q["sql"] and "INSERT" in q["sql"]]

    html, writes = open_theme()
    assert 'class="badge unread">new' in html and len(writes) == 1  # the colleagues' comments, new on a first visit
    html, writes = open_theme()
    assert 'class="badge unread">new' not in html and writes == []  # nothing new: the marker stays
    services.comment_post(theme=world["a"], actor=analyst, body="My own point")  # posting reads the thread up to it
    services.comment_post(theme=world["a"], actor=owner, body="A new point")
    html, writes = open_theme()
    assert html.count('class="badge unread">new') == 1 and len(writes) == 1  # the colleague's only
    html, writes = open_theme()
    assert 'class="badge unread">new' not in html and writes == []


def test_mentions_lists_comments_mentioning_a_member(world, project, analyst, client_for):
    html = client_for(analyst).get(u("mentions", project)).content.decode()
    assert "Is this" in html and world["a"].name in html
    html = client_for(analyst).get(u("mentions", project, user="olivia")).content.decode()
    assert "Nobody has mentioned @olivia" in html


def test_map_data_has_themes_codes_and_sizes(world, project, viewer, client_for):
    data = client_for(viewer).get(u("map_data", project)).json()
    themes = {n["data"]["label"]: n["data"] for n in data["nodes"] if n["data"]["kind"] == "theme"}
    assert themes["Honesty about limits"]["size"] == 1 and themes["Honesty about limits"]["status"] == "candidate"
    assert {"source": f"t{world['a'].id}", "target": f"c{world['x'].id}"}.items() <= next(
        e["data"] for e in data["edges"] if e["data"]["target"] == f"c{world['x'].id}").items()


def test_the_map_sizes_are_the_boards_kept_counts_and_a_code_placed_is_counted_at_once(world, project, owner, viewer,
                                                                                       client_for, make_code, code_segment):
    client = client_for(viewer)

    def sizes() -> tuple[dict[str, int], list[str]]:
        with CaptureQueriesContext(connection) as queries:
            data = client.get(u("map_data", project)).json()
        counted = [q["sql"] for q in queries if "WITH coded AS" in q["sql"] or "COUNT(DISTINCT c.segment_id)" in q["sql"]]
        return {n["data"]["label"]: n["data"]["size"] for n in data["nodes"]}, counted

    first, counted = sizes()
    assert first["Honesty about limits"] == 1 and first["admits uncertainty"] == 1 and len(counted) == 2
    again, counted = sizes()
    assert again == first and counted == []  # opened again within the minute: nothing counted
    placed = make_code("placed later")
    code_segment(placed, world["segments"][2])
    services.theme_add_code(theme=world["a"], actor=owner, code=placed)
    now, counted = sizes()
    # The theme that changed and the codes shown (a new one among them) are counted afresh; the other theme is kept.
    assert now["Honesty about limits"] == 2 and now["placed later"] == 1 and now["Friendship"] == first["Friendship"]
    assert len(counted) == 2 and "WITH coded AS" in counted[0] and "= ANY(" in counted[0]


def test_the_map_page_gives_the_map_as_a_nested_list_for_reading_without_the_picture(world, project, owner, viewer,
                                                                                      client_for):
    services.theme_set_parent(theme=world["b"], actor=owner, parent=world["a"])
    html = client_for(viewer).get(u("map", project)).content.decode()
    outline = html.split('id="map-outline"')[1].split("</details>")[0]
    honesty = f'<a href="{u("detail", project, world["a"].uuid)}">Honesty about limits</a>'
    friendship = f'<a href="{u("detail", project, world["b"].uuid)}">Friendship</a>'
    assert honesty in outline and "(theme, candidate, 1 excerpt)" in outline
    # The sub-theme sits inside its theme's item, before the theme's codes; each code under the node it belongs to.
    after_honesty = outline.split(honesty)[1]
    assert after_honesty.index(friendship) < after_honesty.index(world["x"].name)
    assert "(sub-theme, candidate," in after_honesty and world["y"].name in after_honesty.split(friendship)[1]


def test_memo_edit_conflict_shows_both_texts_and_keeps_the_newer_revision(world, project, owner, analyst, client_for):
    memo = world["memo"]
    services.memo_update(memo=memo, actor=analyst, base_version=1, title=memo.title, body="*first* thoughts\nanalyst's line", kind="reflexive")
    response = client_for(owner).post(u("memo_edit", project, memo.uuid),
                                      {"title": memo.title, "body": "*first* thoughts\nowner's line", "kind": "reflexive", "base_version": "1"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Someone saved this memo while you were editing" in html
    assert "analyst&#x27;s line" in html and "owner&#x27;s line" in html
    assert 'name="base_version" value="2"' in html
    memo.refresh_from_db()
    assert memo.version == 2 and "analyst's line" in memo.body
    # Saving again from the conflict page (base 2) is a deliberate merge, not an overwrite.
    ok = client_for(owner).post(u("memo_edit", project, memo.uuid), {"title": memo.title, "body": "both lines", "kind": "reflexive", "base_version": "2"})
    assert ok.status_code == 302
    memo.refresh_from_db()
    assert memo.version == 3 and memo.body == "both lines"


def test_theme_edit_conflict_shows_their_text_next_to_yours_and_keeps_yours_in_the_form(world, project, owner, analyst, client_for):
    theme = world["a"]
    services.theme_update(theme=theme, actor=analyst, base_version=1, definition="Admitting limits\nanalyst's boundary")
    mine = {"name": "Honesty, owner's name", "definition": "Admitting limits\nowner's boundary", "colour": theme.colour,
            "parent": "", "version": "1"}
    response = client_for(owner).post(u("edit", project, theme.uuid), mine)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Someone saved this theme while you were editing" in html
    their_text = html.split('class="their-text">')[1].split("</pre>")[0]
    assert their_text == "Admitting limits\nanalyst&#x27;s boundary"
    assert 'value="Honesty, owner&#x27;s name"' in html
    assert ">Admitting limits\nowner&#x27;s boundary</textarea>" in html
    assert 'name="version" value="2"' in html
    assert "<del>analyst&#x27;s</del> boundary" in html and "<ins>owner&#x27;s</ins> boundary" in html  # word by word
    theme.refresh_from_db()
    assert (theme.name, theme.version) == ("Honesty about limits", 2) and "analyst's boundary" in theme.definition
    # Saving again from the conflict page (version 2) is a deliberate merge, not an overwrite.
    ok = client_for(owner).post(u("edit", project, theme.uuid), {**mine, "definition": "both boundaries", "version": "2"})
    assert ok.status_code == 302
    theme.refresh_from_db()
    assert (theme.name, theme.definition, theme.version) == ("Honesty, owner's name", "both boundaries", 3)


def test_theme_edit_without_a_version_is_refused_not_forced(world, project, analyst, client_for):
    theme = world["a"]
    response = client_for(analyst).post(u("edit", project, theme.uuid), {"name": "Forced", "definition": "", "parent": ""})
    assert "Someone saved this theme while you were editing" in response.content.decode()
    theme.refresh_from_db()
    assert theme.name == "Honesty about limits"


def test_theme_edit_with_a_refused_parent_saves_nothing_and_keeps_the_typed_text(world, project, owner, analyst, client_for):
    parent, child = world["a"], world["b"]
    services.theme_set_parent(theme=child, actor=owner, parent=parent)
    response = client_for(analyst).post(u("edit", project, parent.uuid), {"name": "Typed name", "definition": "Typed definition",
                                                                          "colour": parent.colour, "parent": child.uuid, "version": "1"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "cannot sit under itself" in html and 'value="Typed name"' in html and ">Typed definition</textarea>" in html
    parent.refresh_from_db()
    assert (parent.name, parent.version, parent.parent_id) == ("Honesty about limits", 1, None)


def test_memo_revision_diff(world, project, owner, client_for):
    memo = world["memo"]
    services.memo_update(memo=memo, actor=owner, base_version=1, title=memo.title, body="*first* thoughts\nsecond line", kind="reflexive")
    html = client_for(owner).get(u("memo_revision", project, memo.uuid, 2)).content.decode()
    assert "<h4 class=\"small\">Revision 1</h4>" in html and "<ins>second line</ins>" in html


@pytest.mark.parametrize("payload", [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
    '<a href="#" onclick="alert(1)">x</a>', "![x](javascript:alert(1))", "<iframe src=//evil></iframe>",
])
def test_memo_and_comment_markdown_is_sanitised(payload, world, project, owner, client_for):
    memo = services.memo_create(project=project, actor=owner, title="xss", body=payload, kind="analytic")
    services.comment_post(theme=world["a"], actor=owner, body=payload)
    for url in (u("memo", project, memo.uuid), u("journal", project), u("detail", project, world["a"].uuid)):
        html = client_for(owner).get(url).content.decode()
        assert _dangerous(html.split('<main id="main"')[1]) == []


def _dangerous(html: str) -> list[str]:
    """Real elements (not escaped text) that could run script: script/iframe/img tags, on* handlers, javascript: URLs."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Finder(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "script" and dict(attrs).get("type") == "application/json":
                return  # a data block (json_script), never run
            if tag in ("script", "iframe", "img", "object", "embed"):
                found.append(tag)
            for name, value in attrs:
                if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                    found.append(f"{tag} {name}={value}")

    Finder().feed(html)
    return found


def test_journal_filters_by_type_author_and_target(world, project, owner, analyst, client_for):
    services.memo_create(project=project, actor=analyst, title="Method note", body="", kind="methodological")
    client = client_for(owner)
    assert "Method note" in client.get(u("journal", project, kind="methodological")).content.decode()
    assert "Reading GPT" not in client.get(u("journal", project, kind="methodological")).content.decode()
    assert "Reading GPT" not in client.get(u("journal", project, author="arjun")).content.decode()
    assert "Method note" not in client.get(u("journal", project, target="theme")).content.decode()
    assert "Method note" in client.get(u("journal", project, target="project")).content.decode()
    one = client.get(u("journal", project, target=f"theme:{world['a'].uuid}")).content.decode()
    assert "Reading GPT" in one and "Method note" not in one
    assert "Reading GPT" not in client.get(u("journal", project, target=f"theme:{world['b'].uuid}")).content.decode()
    assert client.get(u("journal", project, target="theme:not-a-uuid")).status_code == 200


def test_memos_on_a_trashed_theme_leave_the_journal_with_it(world, project, owner, client_for):
    services.theme_delete(theme=world["a"], actor=owner)
    client = client_for(owner)
    assert "Reading GPT" not in client.get(u("journal", project)).content.decode()
    assert client.get(u("memo", project, world["memo"].uuid)).status_code == 404
    Theme.objects.filter(pk=world["a"].pk).update(deleted_at=None)  # restored from the trash
    assert "Reading GPT" in client.get(u("journal", project)).content.decode()


def test_deleted_memos_and_themes_leave_the_pages(world, project, owner, client_for):
    services.memo_delete(memo=world["memo"], actor=owner)
    services.theme_delete(theme=world["b"], actor=owner)
    client = client_for(owner)
    assert "Reading GPT" not in client.get(u("journal", project)).content.decode()
    assert client.get(u("memo", project, world["memo"].uuid)).status_code == 404
    assert client.get(u("detail", project, world["b"].uuid)).status_code == 404
    assert "Friendship" not in client.get(u("board", project)).content.decode()
    assert Memo.objects.filter(pk=world["memo"].pk).exists()


def test_meeting_merge_decision_applied_from_presenter_and_snapshots_compared(world, project, owner, client_for):
    client = client_for(owner)
    review = world["review"]
    present = u("present", project, review.uuid, 0)
    client.post(u("decision_create", project, review.uuid), {"theme": world["a"].uuid, "kind": "merge", "into": world["b"].uuid, "next": present})
    merge = Decision.objects.get(kind="merge")
    response = client.post(reverse("themes:decision_apply", args=[project.uuid, merge.uuid]), {"next": present})
    assert response.status_code == 302 and response["Location"] == present
    assert Theme.objects.get(pk=world["a"].pk).deleted_at is not None
    # The merged theme stays on the agenda, marked, and its old page leads to the theme it joined.
    assert "Merged into" in client.get(present).content.decode()
    old_page = client.get(u("detail", project, world["a"].uuid))
    assert old_page.status_code == 302 and old_page["Location"] == u("detail", project, world["b"].uuid)
    client.post(u("review_close", project, review.uuid), {"confirm": "on"})
    before, after = Snapshot.objects.filter(review=review).order_by("taken_at", "id")
    html = client.get(u("snapshot_compare", project, a=before.uuid, b=after.uuid)).content.decode()
    assert "Themes removed" in html and "Honesty about limits" in html
    assert "admits uncertainty: out of Honesty about limits; into Friendship" in html
    assert Review.objects.get(pk=review.pk).status == "closed"


def test_a_theme_merged_twice_leads_to_where_it_ended_up(world, project, owner, client_for):
    a, b = world["a"], world["b"]
    c = services.theme_create(project=project, actor=owner, name="Candour")
    services.theme_merge(source=a, target=b, actor=owner)
    services.theme_merge(source=b, target=c, actor=owner)
    old_page = client_for(owner).get(u("detail", project, a.uuid))
    assert old_page.status_code == 302 and old_page["Location"] == u("detail", project, c.uuid)
    services.theme_delete(theme=c, actor=owner)
    assert client_for(owner).get(u("detail", project, a.uuid)).status_code == 404


def test_next_never_redirects_off_site(world, project, owner, client_for):
    response = client_for(owner).post(u("review_notes", project, world["review"].uuid), {"notes": "x", "notes_version": "1",
                                                                                       "next": "https://evil.example/"})
    assert response["Location"] == u("review", project, world["review"].uuid)


def test_exemplar_pin_refuses_segments_of_other_projects(world, project, analyst, client_for, make_interview):
    from projects.models import Project

    other = Project.objects.create(name="Other")
    _, foreign = make_interview(proj=other)
    response = client_for(analyst).post(u("exemplar_pin", project, world["a"].uuid), {"segment": foreign[0].id})
    assert response.status_code == 404
    assert Exemplar.objects.count() == 1


@pytest.mark.parametrize("fields", [{"segment": "9999999999999999999"}, {"segment": "0"}, {"segment": "x"},
                                    {"segment": "1", "end_segment": str(2 ** 63)}])
def test_exemplar_pin_refuses_what_is_no_segment_id(world, project, analyst, client_for, fields):
    response = client_for(analyst).post(u("exemplar_pin", project, world["a"].uuid), fields)
    assert response.status_code == 400 and "must be segment ids" in response.content.decode()
    assert Exemplar.objects.count() == 1


def test_comment_post_requires_text(world, project, analyst, client_for):
    response = client_for(analyst).post(u("thread", project, world["a"].uuid), {"body": "  "}, headers={"HX-Request": "true"})
    # htmx only swaps 2xx answers, so the error comes back inside the thread fragment.
    assert response.status_code == 200 and "Write something before posting." in response.content.decode()
    plain = client_for(analyst).post(u("thread", project, world["a"].uuid), {"body": ""})
    assert plain.status_code == 302
    assert Comment.objects.count() == 1


def test_htmx_board_errors_are_shown_in_the_swapped_fragment(world, project, analyst, client_for):
    response = client_for(analyst).post(u("create", project), {"name": " "}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "Give the theme a name." in response.content.decode()
    assert client_for(analyst).post(u("create", project), {"name": " "}).status_code == 400


def test_meeting_agenda_and_attendees_can_change(world, project, analyst, client_for):
    review = world["review"]
    client_for(analyst).post(u("review_edit", project, review.uuid),
                             {"title": "Round 1b", "date": "2026-11-23", "attendees": ["arjun"], "themes": [world["b"].uuid]})
    review.refresh_from_db()
    assert review.title == "Round 1b" and str(review.date) == "2026-11-23"
    assert list(review.attendees.values_list("username", flat=True)) == ["arjun"]
    assert list(review.agenda.values_list("theme__name", flat=True)) == ["Friendship"]
    bad = client_for(analyst).post(u("review_edit", project, review.uuid), {"title": "x", "date": "tomorrow"}, follow=True)
    assert "YYYY-MM-DD" in bad.content.decode()
    review.refresh_from_db()
    assert review.title == "Round 1b"


def test_theme_page_shows_models_that_never_express_the_theme(world, project, viewer, client_for, make_interview):
    make_interview("Gemini")
    html = client_for(viewer).get(u("excerpt_counts", project, world["a"].uuid)).content.decode()
    row = html.split("<td>Gemini</td>")[1].split("</tr>")[0]
    assert '<td class="num">0</td>' in row and "0 of 1" in row


def test_exemplars_from_a_trashed_interview_are_hidden(world, project, owner, client_for):
    from interviews.models import Interview

    Interview.objects.filter(pk=world["interview"].pk).update(deleted_at="2026-11-22T00:00:00Z")
    html = client_for(owner).get(u("detail", project, world["a"].uuid)).content.decode()
    assert "Exemplar quotes <span class=\"badge\">0</span>" in html


def test_a_decision_on_a_theme_edited_since_shows_both_texts_and_changes_nothing_until_confirmed(world, project, owner, analyst, client_for):
    b, decision, review = world["b"], world["decision"], world["review"]
    services.theme_update(theme=b, actor=analyst, base_version=b.version, name="Companionship")
    client = client_for(owner)
    page = client.post(u("decision_apply", project, decision.uuid))
    html = page.content.decode()
    assert page.status_code == 200 and "was edited after Round 1 decided this" in html
    assert "Companionship" in html and "Being a friend" in html and "by arjun" in html
    assert 'name="version" value="2"' in html and "<del>Companionship</del>" in html and "<ins>Being a friend</ins>" in html
    assert Theme.objects.get(pk=b.pk).name == "Companionship"
    assert Decision.objects.get(pk=decision.pk).applied_at is None
    applied = client.post(u("decision_apply", project, decision.uuid), {"version": "2"})
    assert applied.status_code == 302 and applied["Location"] == u("review", project, review.uuid)
    assert Theme.objects.get(pk=b.pk).name == "Being a friend"


@pytest.mark.parametrize("page", ["review", "present"])
def test_the_decision_form_carries_the_theme_version_on_the_page(page, world, project, owner, analyst, client_for):
    b, review = world["b"], world["review"]
    services.theme_update(theme=b, actor=analyst, base_version=b.version, definition="Edited before the page opened.")
    args = [review.uuid] if page == "review" else [review.uuid, 1]
    html = client_for(owner).get(u(page, project, *args)).content.decode()
    form = html.split(f'name="theme" value="{b.uuid}"')[1].split("</form>")[0]
    assert '<input type="hidden" name="theme_version" value="2">' in form


def test_a_decision_made_on_a_page_opened_before_an_edit_is_recorded_with_a_notice_and_apply_asks(world, project, owner, analyst, client_for):
    b, review = world["b"], world["review"]
    services.theme_update(theme=b, actor=analyst, base_version=b.version, definition="Analyst's edit while the page was open.")
    client = client_for(owner)
    page = client.post(u("decision_create", project, review.uuid),
                       {"theme": b.uuid, "theme_version": "1", "kind": "redefine", "definition": "The meeting's definition."}, follow=True)
    assert "The theme changed since you opened this page (now version 2)" in page.content.decode()
    decision = Decision.objects.get(kind="redefine")
    assert decision.theme_version == 1
    asked = client.post(u("decision_apply", project, decision.uuid))
    assert asked.status_code == 200 and "was edited after Round 1 decided this" in asked.content.decode()
    assert Theme.objects.get(pk=b.pk).definition == "Analyst's edit while the page was open."


def test_a_decision_with_a_version_the_theme_never_had_is_not_recorded(world, project, owner, client_for):
    page = client_for(owner).post(u("decision_create", project, world["review"].uuid),
                                  {"theme": world["b"].uuid, "theme_version": "7", "kind": "rename", "name": "X"}, follow=True)
    assert "not recorded. Theme version: The theme version the decision was made on must be a whole number from 1 to 1" in page.content.decode()
    assert not Decision.objects.filter(kind="rename", payload__name="X").exists()


def test_keeping_the_current_text_leaves_the_theme_and_shows_the_decision_not_applied(world, project, owner, analyst, client_for):
    b, decision, review = world["b"], world["decision"], world["review"]
    services.theme_update(theme=b, actor=analyst, base_version=b.version, name="Companionship")
    client = client_for(owner)
    garbled = client.post(u("decision_apply", project, decision.uuid), {"version": "two"})
    assert "was edited after" in garbled.content.decode()  # a garbled confirmation asks again, never forces
    response = client.post(u("decision_decline", project, decision.uuid), {"reason": "The new name says it better."})
    assert response.status_code == 302
    assert Theme.objects.get(pk=b.pk).name == "Companionship"
    html = client.get(u("review", project, review.uuid)).content.decode()
    assert "not applied" in html and "The new name says it better." in html
    again = client.post(u("decision_apply", project, decision.uuid), {"version": "2"}, follow=True)
    assert "was not applied" in again.content.decode() and Theme.objects.get(pk=b.pk).name == "Companionship"


# --- meeting notes ------------------------------------------------------------------------------------------


def test_second_notes_save_from_the_same_page_load_is_told_and_keeps_its_text(world, project, owner, analyst, client_for):
    review = world["review"]
    url = u("review_notes", project, review.uuid)
    page = client_for(analyst).get(u("review", project, review.uuid)).content.decode()
    assert 'name="notes_version" value="1"' in page  # both opened the meeting at this version
    assert client_for(owner).post(url, {"notes": "Owner: merge Friendship.", "notes_version": "1"}).status_code == 302
    response = client_for(analyst).post(url, {"notes": "Analyst: keep Friendship apart.", "notes_version": "1"})
    body = response.content.decode()
    assert response.status_code == 200 and "Someone saved these notes while you were writing" in body
    # Theirs and yours in full, under words a researcher uses, the words that differ marked; no diff jargon.
    assert "Their version (saved at " in body and " by olivia)" in body and "Your version (not saved)" in body
    assert '<p class="text old-text"><del>Owner: merge Friendship.</del></p>' in body
    assert '<p class="text new-text"><ins>Analyst: keep Friendship apart.</ins></p>' in body
    assert not any(jargon in body for jargon in ("--- their notes", "+++ your notes", "@@ -"))
    # Yours, kept, and marked unsaved: a colleague's next save, arriving live, does not replace it.
    assert '<textarea id="notes" name="notes" rows="8" data-unsaved="1">Analyst: keep Friendship apart.</textarea>' in body
    assert 'name="notes_version" value="2"' in body  # saving again means "I have seen theirs"
    review.refresh_from_db()
    assert review.notes == "Owner: merge Friendship." and review.notes_version == 2
    combined = client_for(analyst).post(url, {"notes": "Both: merge, but note the doubt.", "notes_version": "2"})
    assert combined.status_code == 302
    review.refresh_from_db()
    assert review.notes == "Both: merge, but note the doubt." and review.notes_version == 3


def test_a_notes_save_without_a_version_is_refused_never_forced(world, project, analyst, client_for):
    response = client_for(analyst).post(u("review_notes", project, world["review"].uuid), {"notes": "Blind save"})
    assert "Someone saved these notes" in response.content.decode()
    assert Review.objects.get(pk=world["review"].pk).notes == ""


def test_notes_of_a_closed_meeting_are_read_only(world, project, owner, analyst, client_for):
    review = world["review"]
    services.review_save_notes(review=review, actor=owner, notes="Final words.", base_version=1)
    services.review_close(review=review, actor=owner)
    page = client_for(analyst).get(u("review", project, review.uuid)).content.decode()
    assert 'name="notes"' not in page and "Final words." in page and "its notes are kept as they were" in page
    presenter = client_for(analyst).get(u("present", project, review.uuid, 0)).content.decode()
    assert 'name="notes"' not in presenter
    response = client_for(analyst).post(u("review_notes", project, review.uuid), {"notes": "Edited later", "notes_version": "2"})
    assert response.status_code == 409
    assert "is closed; its notes can no longer be changed" in response.content.decode()
    assert Review.objects.get(pk=review.pk).notes == "Final words."


def test_board_lists_codes_whose_parents_loop_rather_than_losing_them(world, project, analyst, make_code, client_for):
    from coding.models import Code

    a, b = make_code("loop a"), make_code("loop b")
    Code.objects.filter(pk=a.pk).update(parent=b)
    Code.objects.filter(pk=b.pk).update(parent=a)
    names = [name for name, _, _ in _code_list(client_for(analyst).get(u("board", project)).content.decode())]
    assert sorted(names) == ["admits uncertainty", "loop a", "loop b", "user as friend"]
