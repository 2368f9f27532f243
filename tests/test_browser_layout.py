"""The main pages fit a 1280 px screen and a laptop's 1366×768: no sideways scrolling, the navigation in view."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = [(1366, 768), (1280, 720)]

# Everything that sticks out sideways: the widest element and where it ends, for a useful failure message.
OVERFLOW_JS = """() => {
  const limit = window.innerWidth;
  let worst = null;
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > limit + 0.5 && (!worst || r.right > worst.right)) {
      worst = {right: Math.round(r.right), what: el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
               (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : "")};
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: limit, worst: worst};
}"""


@pytest.fixture
def demo(demo_project, make_user):
    """The demo project, its owner able to log in with the test password, and a colleague who mentioned them."""
    from projects.models import Membership, Role
    from themes.models import Theme
    from themes.services import comment_post, theme_create

    owner = demo_project.memberships.get().user
    owner.set_password(PASSWORD)
    owner.save(update_fields=["password"])
    colleague = make_user("colleague-with-a-rather-long-username")
    Membership.objects.create(project=demo_project, user=colleague, role=Role.ANALYST)
    theme = Theme.objects.for_project(demo_project).first()
    # In a theme of its own: reading a theme's thread (its page polls it) counts as seeing its mentions.
    discussed = theme_create(project=demo_project, actor=colleague, name="Home as a place one is granted")
    comment_post(theme=discussed, actor=colleague, body=f"Does this hold for Claude too, @{owner.username}?")
    return demo_project, owner, theme


def _pages(project, theme) -> dict[str, str]:
    interview = project.interviews.order_by("created_at").first()
    p = project.uuid
    return {
        "project home": reverse("project_home", args=[p]),
        "interviews": reverse("interviews:list", args=[p]),
        "transcript": reverse("interviews:interview_detail", args=[p, interview.uuid]),
        "coding workspace": reverse("coding:workspace", args=[p, interview.uuid]),
        "codebook": reverse("coding:codebook", args=[p]),
        "themes board": reverse("themes:board", args=[p]),
        "theme page": reverse("themes:detail", args=[p, theme.uuid]),
        "mentions": reverse("themes:mentions", args=[p]) + "?user=colleague-with-a-rather-long-username",
        "reports": reverse("reports:index", args=[p]),
        "excerpt table": reverse("reports:excerpts", args=[p]),
        "frequency": reverse("reports:frequency", args=[p]),
    }


def test_main_pages_fit_1280_and_laptop_screens_with_the_navigation_in_view(page, login, live_server, demo):
    project, owner, theme = demo
    login(page, owner)
    problems = []
    for width, height in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        for name, path in _pages(project, theme).items():
            response = page.goto(live_server.url + path)
            assert response.status == 200, (name, response.status)
            page.wait_for_load_state("networkidle")
            fit = page.evaluate(OVERFLOW_JS)
            if fit["scrollWidth"] > fit["innerWidth"]:
                problems.append(f"{name} at {width}×{height}: {fit['scrollWidth']} px wide, widest: {fit['worst']}")
            nav = page.locator("nav.project-nav")
            if not nav.is_visible():
                problems.append(f"{name} at {width}×{height}: the project navigation is hidden")
                continue
            for link in nav.locator("a").all():
                box = link.bounding_box()
                if box is None or box["x"] < 0 or box["x"] + box["width"] > width or box["y"] < 0:
                    problems.append(f"{name} at {width}×{height}: nav link {link.inner_text()!r} is outside the screen")
            # On a laptop's short screen the header stays one row (three rows took a fifth of a 720 px screen).
            header = page.locator("header.topbar").bounding_box()["height"]
            if header > height * 0.1:
                problems.append(f"{name} at {width}×{height}: the header is {header:.0f} px high (more than one row)")
            # The unread-mentions badge is part of the navigation everywhere but on your own Mentions page.
            if not page.locator("nav.project-nav .mentions-badge").is_visible():
                problems.append(f"{name} at {width}×{height}: no unread-mentions badge")
    assert not problems, "\n".join(problems)


def test_the_mentions_badge_leads_to_the_mentions_and_goes_away(page, login, live_server, demo):
    project, owner, theme = demo
    login(page, owner)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(live_server.url + reverse("coding:codebook", args=[project.uuid]))
    badge = page.locator("nav.project-nav .mentions-badge")
    assert badge.inner_text() == "@ 1" and badge.get_attribute("aria-label") == "1 unread mention"
    badge.click()
    page.wait_for_url(f"**{reverse('themes:mentions', args=[project.uuid])}")
    assert "Does this hold for Claude too" in page.locator(".comment.is-unread").inner_text()
    assert page.locator("nav.project-nav .mentions-badge").count() == 0
    page.goto(live_server.url + reverse("project_home", args=[project.uuid]))
    assert page.locator("nav.project-nav .mentions-badge").count() == 0


PHONE = (390, 844)


def test_pages_fit_a_phone_without_sideways_scrolling(page, login, live_server, demo, make_user):
    """On a 390 px phone a page never scrolls sideways: wide tables scroll inside themselves, long names break."""
    from projects.models import Membership, Project, Role
    from projects.services import invitation_create

    project, owner, theme = demo
    unbroken = Project.objects.create(name="x" * 200)
    Membership.objects.create(project=unbroken, user=owner, role=Role.OWNER)
    invitation_create(project=project, actor=owner, role=Role.ANALYST, email="someone.with.a.long.address@example.org")
    login(page, owner)
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    pages = {"project list": reverse("projects:list"), "team": reverse("projects:members", args=[project.uuid]),
             "probes": reverse("probes:list", args=[project.uuid]),
             **{name: path for name, path in _pages(project, theme).items()
                if name not in ("themes board", "theme page", "coding workspace")}}
    problems = []
    for name, path in pages.items():
        response = page.goto(live_server.url + path)
        assert response.status == 200, (name, response.status)
        page.wait_for_load_state("networkidle")
        fit = page.evaluate(OVERFLOW_JS)
        if fit["scrollWidth"] > fit["innerWidth"]:
            problems.append(f"{name}: {fit['scrollWidth']} px wide, widest: {fit['worst']}")
    assert not problems, "\n".join(problems)
