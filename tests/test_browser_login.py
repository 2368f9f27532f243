from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_logs_in_and_opens_the_demo_project(page, live_server, demo_project):
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo-password-rta")
    page.click("button[type=submit]")
    page.get_by_role("link", name=demo_project.name).click()
    page.wait_for_url(f"**/p/{demo_project.uuid}/")
    assert page.get_by_role("heading", level=1).inner_text() == demo_project.name
    assert page.locator(".phase").count() == 6
    assert page.get_by_role("navigation", name="Project").get_by_role("link", name="Codebook").is_visible()


def test_wrong_password_shows_a_clear_message(page, live_server, demo_project):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    expect(page.locator("body")).to_contain_text("enter a correct username and password")
