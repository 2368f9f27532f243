"""Hostile content across every page and API response, and secrets that must never leave.

The world (tests/world.py: one object of every kind) is filled with hostile text in every
human-written field (transcripts, memos, code and theme names, labels, notes...); then every
GET route is rendered for the owner. A new page joins automatically.
"""

from __future__ import annotations

import re

import pytest
from django.db import models
from django.urls import reverse

from tests.test_permission_matrix import MEMBER_GET_404, PUBLIC, ROUTES, Route
from tests.world import World

pytestmark = pytest.mark.django_db

SCRIPT = '<script>alert("xss")</script>'
IMG = "<img src=x onerror=alert(1)>"
QUOTE_BREAK = '"><svg onload=alert(2)>'
HOSTILE = f"Hostile {SCRIPT} {IMG} {QUOTE_BREAK} [link](javascript:alert(3)) end."
# Fields people write; other text fields hold formats, hashes, colours or enum-like values.
HUMAN_FIELDS = {
    "title", "name", "text", "body", "label", "definition", "description", "notes", "note", "summary", "quote",
    "positionality", "research_question", "include_when", "exclude_when", "example", "rationale", "reason",
    "opening_prompt", "system_prompt", "source_filename", "agenda", "decision", "content",
}
UNESCAPED = [SCRIPT, IMG, "<svg onload", 'href="javascript:', "href='javascript:"]


def _poison(world: World) -> None:
    """Hostile text in every human-written field of every world object; segments keep valid offsets."""
    for model, obj in world.objects.items():
        values = {}
        for f in model._meta.concrete_fields:
            if isinstance(f, (models.CharField, models.TextField)) and f.name in HUMAN_FIELDS and not f.choices:
                values[f.name] = HOSTILE[: f.max_length] if f.max_length else HOSTILE
        if model._meta.label == "interviews.Segment":
            values.update(start=0, end=len(HOSTILE), text=HOSTILE)
        if values:
            model._default_manager.filter(pk=obj.pk).update(**values)
    user = world.users["owner"]
    user.first_name, user.last_name = SCRIPT, IMG
    user.save(update_fields=["first_name", "last_name"])


def _inline_code(body: str) -> bool:
    """An executable inline <script> or an on*= handler attribute (JSON data blocks are fine)."""
    scripts = re.findall(r"<script\b([^>]*)>", body)
    if any("src=" not in attrs and 'type="application/json"' not in attrs for attrs in scripts):
        return True
    # Script contents and quoted attribute values are data (escaped hostile text lives there).
    stripped = re.sub(r"<script\b[^>]*>.*?</script>", "", body, flags=re.S)
    stripped = re.sub(r"\"[^\"]*\"|'[^']*'", '""', stripped)  # one pass: whichever quote opens a value closes it
    return bool(re.search(r"<[a-zA-Z][^<>]*\son[a-z]+\s*=", stripped))


def _readable_routes() -> list[Route]:
    return [r for r in ROUTES if r.name not in PUBLIC and r.name not in MEMBER_GET_404]


@pytest.fixture
def hostile_world(project, owner, analyst, viewer, outsider) -> World:
    world = World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()
    project.name = HOSTILE[:200]
    project.description = HOSTILE
    project.save(update_fields=["name", "description"])
    _poison(world)
    return world


def _get_all(world: World, client) -> dict[str, tuple[int, str]]:
    pages = {}
    for route in _readable_routes():
        url = reverse(route.name, kwargs={k: world.kwarg(k, url_name=route.name) for k in route.kwargs})
        for htmx in (False, True):
            response = client.get(url, HTTP_HX_REQUEST="true") if htmx else client.get(url)
            if response.streaming or response.status_code != 200:
                continue
            content_type = response.get("Content-Type", "")
            if "html" in content_type or "json" in content_type or "text" in content_type:
                pages[f"{url}{' (htmx)' if htmx else ''}"] = (response.status_code, response.content.decode("utf-8", "replace"))
    return pages


def test_hostile_text_is_escaped_or_sanitised_everywhere(hostile_world, client_for, owner):
    pages = _get_all(hostile_world, client_for(owner))
    html_pages = {u: b for u, (_, b) in pages.items() if "<html" in b or "<div" in b or "<span" in b or "<tr" in b}
    assert len(html_pages) > 10, "too few pages rendered to be a meaningful sweep"
    leaks = [f"{url}: {marker}" for url, body in html_pages.items() for marker in UNESCAPED if marker in body]
    assert not leaks, "Unescaped hostile content:\n" + "\n".join(leaks)
    # CSP forbids inline script and handlers; a template that adds one breaks in the browser.
    inline = [url for url, body in html_pages.items() if _inline_code(body)]
    assert not inline, f"Inline script or on*= handlers (blocked by CSP) at: {inline}"
    # The text itself is still shown (escaped), not silently dropped.
    assert any("&lt;script&gt;alert(" in body for body in html_pages.values())


def test_json_api_returns_hostile_text_as_data_with_json_content_type(hostile_world, client_for, owner):
    client = client_for(owner)
    response = client.get(f"/api/projects/{hostile_world.project.uuid}/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert response.json()["name"].startswith("Hostile <script>")
    assert response["X-Content-Type-Options"] == "nosniff"


SECRET = "sk-live-TOPSECRET-4f9a8b7c6d5e4f3a2b1c"


def test_stored_api_keys_never_appear_in_pages_api_responses_or_exports(project, owner, analyst, viewer, outsider, client_for):
    from conduct.services import endpoint_key_store

    world = World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()
    key = endpoint_key_store(project=project, user=owner, label="Lab account", plain_key=SECRET,
                             base_url="https://api.example.org/v1")
    assert key.reveal() == SECRET  # stored, and retrievable by the worker only
    client = client_for(owner)
    pages = _get_all(world, client)
    assert any("/api/" in url for url in pages) and len(pages) > 10
    # Every 200 GET, pages, fragments and API alike, including export downloads.
    leaks = [url for url, (_, body) in pages.items() if SECRET in body or SECRET[8:] in body]
    assert not leaks, f"The stored API key leaks at: {leaks}"
    # Exports and backups: every download route a member can reach.
    downloads = _downloads(world, client)
    leaks = [url for url, content in downloads.items() if SECRET.encode() in content or SECRET[8:].encode() in content]
    assert not leaks, f"The stored API key is exported at: {leaks}"


def _downloads(world: World, client) -> dict[str, bytes]:
    """Every route answering with an attachment (exports, backups), fully read."""
    out = {}
    for route in _readable_routes():
        if not re.search(r"export|download|backup|qdpx|csv|xlsx|docx", route.name + route.route):
            continue
        url = reverse(route.name, kwargs={k: world.kwarg(k, url_name=route.name) for k in route.kwargs})
        response = client.get(url)
        if response.status_code == 200:
            out[url] = b"".join(response.streaming_content) if response.streaming else response.content
    return out
