"""Every page view declares the HTTP methods it answers; a read never runs for POST.

A view that reads (a page, a download, a poll, a fragment) and accepts any method answers a POST
as if it were a GET: a form or a script aimed at the wrong URL "works", caches and proxies see
a POST that changed nothing, and a CSRF-exempt mistake later would be a write path nobody meant.
Each view in the URLconf is asked with a method no view answers: the 405 it must give names in
its Allow header the methods the view declares (require_GET/require_POST/require_http_methods,
or a class-based view's handlers). A view whose Allow lists POST writes on purpose; any other
must answer POST with 405 too. DRF views declare their methods on the class and are left out.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import get_resolver
from rest_framework.views import APIView

from tests.test_permission_matrix import _url, _walk, all_routes
from tests.world import World

# The method the probe uses: no view in the project answers it, so a view that runs its body for it runs it for
# anything, POST included.
UNDECLARED_METHOD = "PROPFIND"


def _is_drf(callback) -> bool:
    view_class = getattr(callback, "cls", None)
    return isinstance(view_class, type) and issubclass(view_class, APIView)


def _page_routes():
    callbacks = {name: pattern.callback for _route, name, pattern in _walk(get_resolver().url_patterns)}
    return [route for route in all_routes() if not _is_drf(callbacks[route.name])]


PAGE_ROUTES = _page_routes()


@pytest.fixture
def world(project, owner, analyst, viewer, outsider) -> World:
    return World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()


def _allow(response) -> set[str]:
    return {m.strip().upper() for m in response.get("Allow", "").split(",") if m.strip()}


@pytest.mark.parametrize("route", PAGE_ROUTES, ids=str)
def test_a_view_answers_only_the_methods_it_declares(route, world: World, owner):
    client = Client()
    client.force_login(owner)
    url = _url(route, world)

    probe = client.generic(UNDECLARED_METHOD, url)
    assert probe.status_code == 405 and _allow(probe), (
        f"{route.name} ({url}) ran for {UNDECLARED_METHOD} ({probe.status_code}): it must declare its methods "
        "(require_GET for a read, require_POST for a write, require_http_methods for a page with its form)")
    declared = _allow(probe)
    if "POST" in declared:
        return  # a writer: it declared POST on purpose
    post = client.post(url)
    assert post.status_code == 405 and _allow(post) == declared, (
        f"{route.name} ({url}) declares {sorted(declared)} but answered POST with {post.status_code}")


def test_the_walk_covers_pages_of_every_app_and_leaves_out_the_api():
    names = {route.name for route in PAGE_ROUTES}
    assert {"project_home", "projects:list", "api_tokens", "healthz", "themes:journal", "coding:workspace"} <= names
    assert not any(name.startswith("api-") for name in names)
