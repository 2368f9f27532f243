"""An analyst makes an API token in the browser, uses it from a script, and revokes it."""

from __future__ import annotations

import pytest
import requests

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_creates_uses_and_revokes_an_api_token(page, live_server, login, project, analyst):
    login(page, analyst)
    page.get_by_role("link", name="API tokens").click()
    assert "acts as you in every project you belong to" in page.locator("#token-scope").inner_text()
    page.fill("#id_name", "Analysis notebook")
    page.select_option("#id_lifetime_days", "30")
    page.get_by_role("button", name="Create token").click()
    key = page.locator("#new-token-key").input_value()
    assert key.startswith("rta_")

    api = f"{live_server.url}/api/projects/"
    answer = requests.get(api, headers={"Authorization": f"Token {key}"}, timeout=10)
    assert answer.status_code == 200 and answer.json()["results"][0]["uuid"] == str(project.uuid)

    page.get_by_role("button", name="Revoke the token Analysis notebook").click()
    page.get_by_text("Token “Analysis notebook” revoked").wait_for()
    assert requests.get(api, headers={"Authorization": f"Token {key}"}, timeout=10).status_code == 401
