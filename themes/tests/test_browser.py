"""The themes workflow in a real Chromium: board by dragging, exemplar, memo, thread, review meeting, snapshots, map."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from themes import services
from themes.models import Comment, Exemplar, Memo, Theme, ThemeCode

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def names_in(theme_name: str) -> list[str]:
    return list(ThemeCode.objects.filter(theme__name=theme_name, theme__deleted_at__isnull=True)
                .order_by("position").values_list("code__name", flat=True))


def test_build_themes_discuss_and_review(page, login, live_server, project, owner, analyst, make_code, make_interview, code_segment):
    codes = {n: make_code(n) for n in ("admits uncertainty", "patterns not experience", "user as friend")}
    _, gpt = make_interview("GPT-4o")
    _, claude = make_interview("Claude")
    code_segment(codes["admits uncertainty"], gpt[0], claude[0])
    code_segment(codes["patterns not experience"], gpt[1])
    code_segment(codes["user as friend"], gpt[3], claude[3])

    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/")
    expect(page.locator("#unassigned-count")).to_have_text("3 in no theme yet")

    # Two candidate themes, created on the board.
    for name in ("Honesty about limits", "Friendship"):
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_role("button", name="Add theme").click()
        expect(page.locator(f'[data-theme-name="{name}"]')).to_be_visible()

    def zone(name: str):
        return page.locator(f'[data-theme-name="{name}"] .theme-codes')

    def codebook_chip(code: str):
        return page.locator(f'[aria-labelledby="codebook-h"] .code-chip[data-code-name="{code}"]')

    # Drag codes from the codebook into the themes; each drop is one request.
    codebook_chip("admits uncertainty").drag_to(zone("Honesty about limits"))
    expect(zone("Honesty about limits")).to_contain_text("admits uncertainty")
    # Aimed at the theme's title, not its list: the card takes it all the same.
    codebook_chip("user as friend").drag_to(page.locator('[data-theme-name="Friendship"] .theme-name'))
    expect(zone("Friendship")).to_contain_text("user as friend")
    codebook_chip("patterns not experience").drag_to(zone("Friendship"))
    expect(zone("Friendship")).to_contain_text("patterns not experience")
    # Between themes: dropping onto a chip of Honesty moves the code there, placed before that chip.
    zone("Friendship").locator('.code-chip[data-code-name="patterns not experience"]').drag_to(zone("Honesty about limits"))
    expect(zone("Honesty about limits")).to_contain_text("patterns not experience")
    expect(zone("Friendship")).not_to_contain_text("patterns not experience")
    assert names_in("Honesty about limits") == ["patterns not experience", "admits uncertainty"]
    # Keyboard alternative: the Move… menu (also lets a code sit in two themes).
    zone("Honesty about limits").get_by_role("button", name="Move “patterns not experience” in Honesty about limits…").focus()
    page.keyboard.press("Enter")
    page.get_by_role("dialog").get_by_role("button", name="Move down").click()
    expect(zone("Honesty about limits").locator(".code-chip").first).to_have_attribute("data-code-name", "admits uncertainty")
    codebook_chip("user as friend").get_by_role("button").click()
    page.get_by_role("dialog").get_by_role("button", name="Add to Honesty about limits").click()
    expect(zone("Honesty about limits")).to_contain_text("user as friend")
    assert names_in("Honesty about limits") == ["admits uncertainty", "patterns not experience", "user as friend"]
    assert names_in("Friendship") == ["user as friend"]
    expect(page.locator("#unassigned-count")).to_have_text("Every code sits in at least one theme.")
    page.get_by_label("Find a code").fill("friend")
    expect(codebook_chip("admits uncertainty")).to_be_hidden()
    expect(codebook_chip("user as friend")).to_be_visible()
    page.get_by_label("Find a code").fill("")
    # Themes reorder by dragging their handle, or with the ← → buttons.
    columns = page.locator(".columns > [data-theme-card]")
    page.locator('[data-theme-name="Friendship"] [data-theme-drag]').drag_to(page.locator('[data-theme-name="Honesty about limits"] .theme-head'))
    expect(columns.first).to_have_attribute("data-theme-name", "Friendship")
    page.get_by_role("button", name="Move Friendship later").click()
    expect(columns.first).to_have_attribute("data-theme-name", "Honesty about limits")

    # Theme page: excerpts by model, pin a trimmed exemplar.
    page.get_by_role("link", name="Honesty about limits").click()
    expect(page.locator(".model-counts")).to_contain_text("GPT-4o")
    expect(page.locator(".model-counts")).to_contain_text("Claude")
    pin = page.locator("details.model-group", has_text="GPT-4o").locator("details.pin").first
    pin.locator("summary").click()
    pin.get_by_label("Quote").fill("I try to be honest [...] not from lived experience.")
    pin.get_by_role("button", name="Pin exemplar").click()
    expect(page.locator(".exemplars blockquote")).to_have_text("“I try to be honest [...] not from lived experience.”")
    assert Exemplar.objects.get().verify()

    # A memo on the theme, Markdown rendered.
    page.get_by_role("link", name="Write a memo").click()
    page.get_by_label("Title").fill("Why honesty matters")
    page.get_by_label("Type").select_option("analytic")
    page.get_by_label("Memo (Markdown)").fill("Models **hedge** a lot.")
    page.get_by_role("button", name="Save memo").click()
    expect(page.locator(".memo-body strong")).to_have_text("hedge")
    page.get_by_role("link", name="Honesty about limits").click()
    expect(page.locator(".memo-list")).to_contain_text("Why honesty matters")

    # The discussion: post with a mention, see a colleague's reply arrive without reloading, resolve.
    page.get_by_label("Comment (Markdown; write @username to mention a member)").fill("Is this one theme or two, @arjun?")
    page.get_by_role("button", name="Post").click()
    expect(page.locator("#thread .mention")).to_have_text("@arjun")
    expect(page.get_by_label("Comment (Markdown; write @username to mention a member)")).to_have_value("")
    services.comment_post(theme=Theme.objects.get(name="Honesty about limits"), actor=analyst, body="One theme, I think.",
                          parent=Comment.objects.get())
    expect(page.locator("#thread")).to_contain_text("One theme, I think.")
    expect(page.locator("#thread .badge.unread")).to_have_count(1)
    page.locator("#thread").get_by_role("button", name="Resolve").click()
    expect(page.locator("#thread")).to_contain_text("resolved by olivia")
    expect(page.locator("#thread")).to_contain_text("0 open threads")

    # A review meeting that merges Friendship into Honesty about limits.
    page.get_by_role("link", name="Review meetings").click()
    page.get_by_label("Title").fill("Review round 1")
    page.get_by_role("button", name="Schedule").click()
    page.get_by_role("link", name="Start presenter mode").click()
    expect(page.locator(".present-title")).to_contain_text("Honesty about limits")
    page.locator("body").press("ArrowRight")
    expect(page.locator(".present-title")).to_contain_text("Friendship")
    expect(page.locator(".present-title")).to_contain_text("Candidate")
    page.get_by_label("Decision on “Friendship”").select_option("merge")
    page.get_by_label("Merge into").select_option(label="Honesty about limits")
    page.get_by_label("Why (note)").fill("Friendship is one way models perform honesty")
    page.get_by_role("button", name="Record decision").click()
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Decision applied.")
    assert Theme.objects.get(name="Friendship").deleted_at is not None
    expect(page.locator("main")).to_contain_text("Merged into Honesty about limits.")
    page.locator("body").press("ArrowLeft")
    expect(page.locator(".present-title")).to_contain_text("Honesty about limits")
    page.get_by_role("link", name="← Review round 1").click()
    page.get_by_text("Close the meeting…").click()
    page.get_by_label("I understand that closing makes this meeting read-only").check()
    page.get_by_role("button", name="Close meeting", exact=True).click()
    page.get_by_role("link", name="What changed in this meeting").click()
    expect(page.locator(".removed")).to_contain_text("Friendship")
    expect(page.locator(".codes-moved")).to_contain_text("user as friend: out of Friendship")

    # The thematic map draws (without a warning from cytoscape about its options) and downloads as SVG and PNG.
    warnings: list[str] = []
    page.on("console", lambda msg: warnings.append(msg.text) if msg.type == "warning" else None)
    page.get_by_role("link", name="Thematic map").click()
    expect(page.locator("#cy[data-ready='1']")).to_have_count(1)
    assert not warnings
    with page.expect_download() as svg:
        page.get_by_role("button", name="Download SVG").click()
    svg_text = open(svg.value.path(), encoding="utf-8").read()
    assert svg_text.startswith("<svg") and "Honesty about limits (" in svg_text and "Friendship" not in svg_text
    with page.expect_download() as png:
        page.get_by_role("button", name="Download PNG").click()
    assert open(png.value.path(), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert Memo.objects.count() == 1


def test_memo_conflict_is_shown_not_lost(page, browser, login, live_server, project, owner, analyst):
    memo = services.memo_create(project=project, actor=owner, title="Familiarisation notes", body="Line one.", kind="familiarisation")
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/memos/{memo.uuid}/edit/")

    # A colleague opens the same memo in another browser and saves first.
    other = browser.new_context(base_url=live_server.url)
    colleague = other.new_page()
    login(colleague, analyst)
    colleague.goto(f"/p/{project.uuid}/themes/memos/{memo.uuid}/edit/")
    colleague.get_by_label("Memo (Markdown)").fill("Line one.\nArjun's addition.")
    colleague.get_by_role("button", name="Save as a new revision").click()
    expect(colleague.locator(".memo-body")).to_contain_text("Arjun's addition.")
    other.close()

    page.get_by_label("Memo (Markdown)").fill("Line one.\nOlivia's addition.")
    page.get_by_role("button", name="Save as a new revision").click()
    conflict = page.get_by_role("alert")
    expect(conflict).to_contain_text("Someone saved this memo while you were editing")
    expect(conflict.locator(".their-text")).to_contain_text("Arjun's addition.")
    expect(conflict.locator(".your-text")).to_contain_text("Olivia's addition.")
    expect(conflict.locator(".new-text ins")).to_contain_text("Olivia's")
    memo.refresh_from_db()
    assert memo.version == 2 and "Arjun's addition." in memo.body

    page.get_by_label("Memo (Markdown)").fill("Line one.\nArjun's addition.\nOlivia's addition.")
    page.get_by_role("button", name="Save my merged text as a new revision").click()
    expect(page.locator(".memo-body")).to_contain_text("Olivia's addition.")
    page.get_by_role("link", name="Revision 3").click()
    expect(page.locator(".new-text ins")).to_have_text("Olivia's addition.")
    memo.refresh_from_db()
    assert memo.version == 3


def test_theme_edit_conflict_is_shown_not_lost(page, browser, login, live_server, project, owner, analyst):
    theme = services.theme_create(project=project, actor=owner, name="Masks", definition="What the model hides.")
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/t/{theme.uuid}/edit/")

    # A colleague opens the same theme in another browser and saves first.
    other = browser.new_context(base_url=live_server.url)
    colleague = other.new_page()
    login(colleague, analyst)
    colleague.goto(f"/p/{project.uuid}/themes/t/{theme.uuid}/edit/")
    colleague.get_by_label("Definition").fill("What the model hides.\nArjun's boundary.")
    colleague.get_by_role("button", name="Save").click()
    expect(colleague.locator(".messages")).to_contain_text("Theme “Masks” saved.")
    other.close()

    page.get_by_label("Name").fill("Masks and faces")
    page.get_by_label("Definition").fill("What the model hides.\nOlivia's boundary.")
    page.get_by_role("button", name="Save").click()
    conflict = page.get_by_role("alert")
    expect(conflict).to_contain_text("Someone saved this theme while you were editing")
    expect(conflict.locator(".their-text")).to_contain_text("Arjun's boundary.")
    expect(conflict.locator(".your-text")).to_contain_text("Olivia's boundary.")
    expect(page.get_by_label("Name")).to_have_value("Masks and faces")
    theme.refresh_from_db()
    assert (theme.name, theme.version) == ("Masks", 2) and "Arjun's boundary." in theme.definition

    page.get_by_label("Definition").fill("What the model hides.\nArjun's boundary.\nOlivia's boundary.")
    page.get_by_role("button", name="Save my combined text").click()
    expect(page.locator(".messages")).to_contain_text("Theme “Masks and faces” saved.")
    theme.refresh_from_db()
    assert theme.version == 3 and theme.definition.endswith("Olivia's boundary.")


@pytest.mark.django_db(transaction=True)
def test_a_comment_mentions_a_member_from_the_at_list_and_posts_with_ctrl_enter(page, login, live_server, project,
                                                                               owner, analyst):
    theme = services.theme_create(project=project, actor=owner, name="Belonging")
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/themes/t/{theme.uuid}/")
    box = page.locator("#comment-body")
    box.click()
    page.keyboard.type("Could @ar")
    options = page.locator("#mention-list li")
    expect(options).to_have_text(["@arjun"])
    page.keyboard.press("Enter")  # takes the highlighted member, does not post
    expect(box).to_have_value("Could @arjun ")
    page.keyboard.type("look at this?")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#thread")).to_contain_text("look at this?")
    comment = Comment.objects.get()
    assert comment.body == "Could @arjun look at this?" and list(comment.mentions.all()) == [analyst]


@pytest.mark.django_db(transaction=True)
def test_a_double_click_on_post_makes_one_comment_and_the_next_comment_posts(page, login, live_server, project, owner):
    theme = services.theme_create(project=project, actor=owner, name="Belonging")
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/themes/t/{theme.uuid}/")
    thread = page.locator("#thread")
    page.locator("#comment-body").fill("Said once")
    page.get_by_role("button", name="Post").dblclick()
    expect(thread).to_contain_text("Said once")
    expect(page.get_by_role("button", name="Post")).to_be_enabled()
    # The composer's next comment is a new submission, not a repeat of the first one's key.
    page.locator("#comment-body").fill("Said twice")
    page.get_by_role("button", name="Post").click()
    expect(thread).to_contain_text("Said twice")
    assert sorted(Comment.objects.values_list("body", flat=True)) == ["Said once", "Said twice"]


@pytest.mark.django_db(transaction=True)
def test_older_threads_load_on_request_and_stay_when_posting(page, login, live_server, project, owner, analyst, make_code,
                                                             make_interview, code_segment):
    from themes.views import THREAD_LATEST

    theme = services.theme_create(project=project, actor=owner, name="Belonging")
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=theme, actor=owner, code=code)
    _, segments = make_interview("GPT-4o")
    code_segment(code, segments[0])
    for k in range(THREAD_LATEST + 2):
        services.comment_post(theme=theme, actor=analyst, body=f"Thread number {k}")
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/themes/t/{theme.uuid}/")
    # The counts by model arrive after the page.
    expect(page.locator("#excerpt-counts")).to_contain_text("1 of 1")
    expect(page.locator("#excerpt-total")).to_have_text("1")
    thread = page.locator("#thread")
    expect(thread).not_to_contain_text("Thread number 0")
    page.get_by_role("link", name="Show older threads").click()
    expect(thread).to_contain_text("Thread number 0")
    box = page.locator("#comment-body")
    box.fill("A new point")
    page.get_by_role("button", name="Post").click()
    expect(thread).to_contain_text("A new point")
    expect(thread).to_contain_text("Thread number 0")  # the older threads stay after posting
    assert page.url.endswith(f"/t/{theme.uuid}/")  # swapped in place, no page load


def test_board_code_list_is_one_tree_with_a_filter_and_drops_both_ways(page, login, live_server, project, owner, make_code):
    parent = make_code("Belonging framed as personal choice")
    child = make_code("Choice without papers")
    child.parent = parent
    child.save(update_fields=["parent"])
    make_code("Advice list")
    theme = services.theme_create(project=project, actor=owner, name="Neutrality that takes sides")

    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/")
    chips = page.locator(".code-tree .code-chip")
    expect(chips).to_have_count(3)  # each code once
    assert chips.evaluate_all("cs => cs.map(c => c.dataset.codeName)") == [
        "Advice list", "Belonging framed as personal choice", "Choice without papers"]
    parent_box = chips.nth(1).bounding_box()
    child_box = chips.nth(2).bounding_box()
    assert child_box["x"] > parent_box["x"] + 8  # indented under its parent

    zone = page.locator(f'[data-theme-name="{theme.name}"] .theme-codes')
    chips.nth(1).drag_to(zone)
    expect(zone).to_contain_text("Belonging framed as personal choice")
    expect(page.locator("#unassigned-count")).to_have_text("2 in no theme yet")
    assert names_in(theme.name) == ["Belonging framed as personal choice"]

    # Only the codes in no theme: the placed parent stays, dimmed, above its unplaced child.
    page.get_by_label("Only codes in no theme").check()
    expect(page.locator(".code-tree .code-chip:visible")).to_have_count(3)
    expect(page.locator('.code-tree .code-chip[data-code-name="Belonging framed as personal choice"]')).to_have_class(
        "code-chip context")
    page.get_by_label("Find a code").fill("advice")
    expect(page.locator(".code-tree .code-chip:visible")).to_have_count(1)
    page.get_by_label("Find a code").fill("zebra")
    expect(page.locator("#no-code-matches")).to_be_visible()
    page.get_by_label("Find a code").fill("")
    page.get_by_label("All codes").check()
    expect(page.locator(".code-tree .code-chip:visible")).to_have_count(3)

    # Dropped back on the list, a code leaves the theme it was dragged from.
    zone.locator(".code-chip").drag_to(page.locator(".code-tree h2"))
    expect(zone.locator(".code-chip")).to_have_count(0)
    expect(page.locator("#unassigned-count")).to_have_text("3 in no theme yet")
    assert names_in(theme.name) == []


@pytest.mark.django_db(transaction=True)
def test_resolve_while_a_refresh_is_in_flight_goes_and_the_older_refresh_is_dropped(page, login, live_server, project, owner,
                                                                                     analyst):
    """Resolve clicked while a refresh of #thread is on its way is sent, not dropped; and the refresh, read before
    Resolve committed but answered after it, must not put the unresolved thread back."""
    theme = services.theme_create(project=project, actor=owner, name="Belonging")
    services.comment_post(theme=theme, actor=analyst, body="Is belonging one theme?")
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/t/{theme.uuid}/")
    thread = page.locator("#thread")
    expect(thread).to_contain_text("1 open thread")
    # Counted on the refreshed element itself: once Resolve has replaced it, its events no longer reach the document,
    # and a count there would be any other GET of the page (a presence poll).
    page.evaluate("""() => { window.threadAnswers = 0;  // counted once htmx has swapped or dropped the held answer
      document.getElementById("thread").addEventListener("htmx:afterRequest", (e) => {
        if (e.detail.requestConfig.verb === "get") window.threadAnswers++; }); }""")
    refreshes: list = []

    def hold(route) -> None:  # read now, answered later (or, after the first, never)
        refreshes.append((route, route.fetch()))
        if len(refreshes) == 1:
            page.evaluate("() => { window.refreshHeld = true; }")

    page.route("**/thread/?*", hold)
    services.comment_post(theme=theme, actor=analyst, body="A second question")
    page.evaluate("htmx.trigger('#thread', 'live')")
    page.wait_for_function("() => window.refreshHeld === true")  # the server has read the thread as it was

    thread.locator("#comment-" + str(theme.comments.order_by("id").first().uuid)).get_by_role("button", name="Resolve").click()
    expect(thread).to_contain_text("resolved by olivia")
    assert theme.comments.filter(resolved_at__isnull=False).count() == 1
    route, stale = refreshes[0]
    route.fulfill(response=stale)
    page.wait_for_function("() => window.threadAnswers >= 1")
    expect(thread).to_contain_text("resolved by olivia")
    expect(thread).to_contain_text("A second question")
    page.unroute_all(behavior="ignoreErrors")  # refreshes still held end with the page
