"""Changes sent to a theme a colleague has since trashed or merged away: a page says what happened and keeps the text."""

from __future__ import annotations

import pytest

from themes import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def doomed(project, owner):
    return services.theme_create(project=project, actor=owner, name="Doomed theme")


def edit(client, project, theme, **fields):
    data = {"name": theme.name, "definition": "", "colour": "#72b7b2", "parent": "", "version": theme.version, **fields}
    return client.post(f"/p/{project.uuid}/themes/t/{theme.uuid}/edit/", data)


def test_saving_an_edit_to_a_trashed_theme_says_who_trashed_it_and_keeps_the_text(project, owner, analyst, doomed, client_for):
    services.theme_delete(theme=doomed, actor=owner)
    response = edit(client_for(analyst), project, doomed, definition="My careful definition, ten minutes of typing.")
    assert response.status_code == 409
    page = response.content.decode()
    assert "“Doomed theme” was moved to the trash by olivia at " in page
    assert "an owner can restore it from the trash to save this." in page
    assert "My careful definition, ten minutes of typing.</textarea>" in page


def test_an_owner_is_led_to_the_trash(project, owner, doomed, client_for):
    services.theme_delete(theme=doomed, actor=owner)
    response = edit(client_for(owner), project, doomed, definition="Mine")
    assert response.status_code == 409
    assert f'<a href="/p/{project.uuid}/trash/">restore it from the trash</a> to save this.' in response.content.decode()


def test_saving_an_edit_to_a_merged_theme_names_the_theme_it_went_into(project, owner, analyst, doomed, client_for):
    kept = services.theme_create(project=project, actor=owner, name="Kept theme")
    services.theme_merge(source=doomed, target=kept, actor=owner)
    response = edit(client_for(analyst), project, doomed, definition="Mine")
    assert response.status_code == 409
    page = response.content.decode()
    assert "“Doomed theme” was merged into" in page and "“Kept theme”</a> by olivia at " in page
    assert "Mine</textarea>" in page


def test_a_comment_posted_to_a_trashed_theme_is_kept_and_the_reason_given(project, owner, analyst, doomed, client_for):
    services.theme_delete(theme=doomed, actor=owner)
    url = f"/p/{project.uuid}/themes/t/{doomed.uuid}/thread/"
    page = client_for(analyst).post(url, {"body": "Is this one theme or two?"})
    assert page.status_code == 409
    assert "Is this one theme or two?</textarea>" in page.content.decode()
    # From the page's form (htmx) the comment stays in the form; the answer is the message to show.
    message = client_for(analyst).post(url, {"body": "Is this one theme or two?"}, headers={"HX-Request": "true"})
    assert message.status_code == 409
    assert message.content.decode().startswith("“Doomed theme” was moved to the trash by olivia at ")
    assert message.content.decode().endswith("an owner can restore it from the trash to post this.")


def test_viewers_and_outsiders_still_get_403_and_404(project, owner, viewer, outsider, doomed, client_for):
    services.theme_delete(theme=doomed, actor=owner)
    assert edit(client_for(viewer), project, doomed).status_code == 403
    assert edit(client_for(outsider), project, doomed).status_code == 404
    url = f"/p/{project.uuid}/themes/t/{doomed.uuid}/thread/"
    assert client_for(viewer).post(url, {"body": "x"}).status_code == 403
    assert client_for(outsider).post(url, {"body": "x"}).status_code == 404


def test_the_notice_says_whether_the_shown_theme_was_renamed_trashed_or_merged(project, owner, analyst, doomed, client_for):
    client = client_for(analyst)
    url = f"/p/{project.uuid}/themes/t/{doomed.uuid}/notice/"
    assert "message" not in client.get(url, {"name": "Doomed theme"}).content.decode()
    services.theme_update(theme=doomed, actor=owner, base_version=None, name="Doomed (renamed)")
    assert "This theme was renamed to “Doomed (renamed)” by olivia at " in client.get(url, {"name": "Doomed theme"}).content.decode()
    services.theme_delete(theme=doomed, actor=owner)
    assert "“Doomed (renamed)” was moved to the trash by olivia" in client.get(url, {"name": "Doomed theme"}).content.decode()


def test_the_notice_is_for_members_only(project, doomed, outsider, client_for):
    assert client_for(outsider).get(f"/p/{project.uuid}/themes/t/{doomed.uuid}/notice/").status_code == 404
