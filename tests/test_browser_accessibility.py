"""The pages a team works in every day, checked by axe-core (tests/vendor/axe.min.js) in Chromium: no serious or critical
violation (missing labels, broken list or table semantics, names a screen reader cannot read), messages included."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
# Serious and critical only: "moderate" rules (landmarks, headings order) are advice, not barriers.
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(" | "));
}"""


def _pages(project) -> dict[str, str]:
    from themes.models import Theme

    interview = project.interviews.order_by("created_at").first()
    theme = Theme.objects.for_project(project).first()
    p = project.uuid
    return {
        "projects": reverse("projects:list"),
        "project home": reverse("project_home", args=[p]),
        "team": reverse("projects:members", args=[p]),
        "interviews": reverse("interviews:list", args=[p]),
        "statistics": reverse("interviews:statistics", args=[p]),
        "transcript": reverse("interviews:interview_detail", args=[p, interview.uuid]),
        "coding workspace": reverse("coding:workspace", args=[p, interview.uuid]),
        "codebook": reverse("coding:codebook", args=[p]),
        "second reader": reverse("coding:reader", args=[p]),
        "themes board": reverse("themes:board", args=[p]),
        "thematic map": reverse("themes:map", args=[p]),
        "theme page": reverse("themes:detail", args=[p, theme.uuid]),
        "journal": reverse("themes:journal", args=[p]),
        "meetings": reverse("themes:reviews", args=[p]),
        "reports": reverse("reports:index", args=[p]),
        "excerpt table": reverse("reports:excerpts", args=[p]),
        "frequency": reverse("reports:frequency", args=[p]),
        "frequency in sections": reverse("reports:frequency", args=[p]) + "?sections=provider&infinity=symbol",
        "probes": reverse("probes:list", args=[p]),
        "trash": reverse("projects:trash", args=[p]),
    }


def _with_axe(page, login, project):
    """Logged in as the project's owner, axe loaded into every page (as an init script: the pages' CSP allows no inline
    script, rightly)."""
    owner = project.memberships.get().user
    owner.set_password(PASSWORD)
    owner.save(update_fields=["password"])
    page.add_init_script(path=str(AXE))
    login(page, owner)


def test_daily_pages_have_no_serious_accessibility_violations(page, login, live_server, demo_project):
    _with_axe(page, login, demo_project)
    problems = {}
    for name, path in _pages(demo_project).items():
        response = page.goto(live_server.url + path)
        assert response.status == 200, (name, response.status)
        page.wait_for_load_state("networkidle")
        if name == "theme page":  # a message shown by the page's script, as after a failed save
            page.evaluate("RTA.flash('The server could not be reached; your last change was not saved.', 'error')")
        if found := page.evaluate(RUN_AXE):
            problems[name] = found
    assert not problems


def test_a_message_from_the_server_is_read_out_as_a_list_in_a_live_region(page, login, live_server, demo_project):
    _with_axe(page, login, demo_project)
    page.goto(live_server.url + reverse("projects:list"))
    page.get_by_label("Name").fill("Second study")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("status").get_by_role("listitem")).to_have_text("Project “Second study” created.")
    assert page.evaluate(RUN_AXE) == []
