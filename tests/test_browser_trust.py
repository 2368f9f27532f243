"""In Chromium: the API docs, the audit log and the trash work under the Content-Security-Policy
(the `page` fixture fails the test on any console error, CSP violations included)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from coding.services import code_create
from projects.trash import trash_move

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_from_our_origin_under_csp(page, live_server, login, owner):
    login(page, owner)
    page.goto(f"{live_server.url}/api/docs/")
    # Swagger UI builds the operation list from /api/schema/ with its own (external, same-origin) script.
    expect(page.locator(".opblock").nth(3)).to_be_visible()  # more than three operations
    expect(page.locator("body")).to_contain_text("RTA Studio API")


def test_owner_restores_a_code_from_the_trash_and_finds_it_in_the_audit_log(page, live_server, login, owner, analyst, project):
    code = code_create(project=project, actor=analyst, name="Ambivalence")
    trash_move(obj=code, actor=analyst)
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/")
    page.get_by_role("navigation", name="Project").get_by_role("link", name="Trash").click()
    page.wait_for_url(f"**/p/{project.uuid}/trash/")
    row = page.get_by_role("row").filter(has_text="Ambivalence")
    assert "Arjun Analyst" in row.inner_text()
    row.get_by_role("button", name="Restore").click()
    # The same address before and after: wait for the new page's content, not the URL.
    expect(page.locator("body")).to_contain_text("Restored code “Ambivalence”")
    expect(page.locator("body")).to_contain_text("The trash is empty")

    page.get_by_role("link", name="Audit log").first.click()
    page.wait_for_url(f"**/p/{project.uuid}/audit/")
    page.select_option("#id_action", "restored")  # htmx swaps the table on change
    page.wait_for_function("() => !document.querySelector('#audit-table').innerText.includes('moved to the trash')")
    table = page.locator("#audit-table").inner_text()
    assert "Code “Ambivalence” restored from the trash" in table
    assert "action=restored" in page.url  # the filter is in the address, so it can be shared and reloaded


def test_emptying_the_trash_asks_for_confirmation_first(page, live_server, login, owner, analyst, project):
    trash_move(obj=code_create(project=project, actor=analyst, name="Obsolete"), actor=analyst)
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/trash/")
    page.get_by_role("button", name="Empty the trash").click()
    expect(page.locator("body")).to_contain_text("Tick the box to confirm")
    expect(page.get_by_role("row").filter(has_text="Obsolete")).to_have_count(1)
    page.get_by_label("I understand").check()
    page.get_by_role("button", name="Empty the trash").click()
    expect(page.locator("body")).to_contain_text("1 item deleted permanently")
