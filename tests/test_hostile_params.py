"""Malformed request parameters never produce a 5xx, on any page or API endpoint.

Every route of the URLconf (as tests/test_permission_matrix.py enumerates them, kwargs
filled from tests/world.py) is called by the project owner with parameters set to hostile
values: not a UUID, not an integer, an integer too big for the database or for int(), empty, a NUL
byte, very long, "null". The answer may be any 2xx/3xx/4xx (400 naming the parameter, 404
for a missing object), never 5xx. A new view joins automatically.

To keep the sweep fast, a first GET and POST (and PATCH for the API) sends every common
parameter name as "zzz" and records which names the view reads; the other hostile values
then go only to those names, all at once and each name alone, so a view rejecting one
parameter early does not hide a crash on another.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest
from django.db import transaction
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from tests.test_permission_matrix import ROUTES, Route
from tests.world import World

pytestmark = pytest.mark.django_db

SKIPPED = {
    "api-schema": "Generated from the code; takes no object parameters, and one generation takes seconds.",
    "api-docs": "A static page around api-schema.",
}

# Names views take from the query string or body: object references, ids, positions,
# filters and options. Form fields the views read are found and added by the sweep itself.
PARAMS = [
    "a", "b", "code", "codes", "theme", "themes", "parent", "before", "after", "into", "target", "to",
    "segment", "segments", "turn", "turns", "interview", "participant", "participants", "coder", "user",
    "author", "mentions", "page", "page_size", "q", "kind", "status", "position", "positions", "index",
    "base_version", "version", "depth", "format", "columns", "since", "until", "date", "poll", "view",
    "model", "role", "action", "direction", "counting", "resolved", "archived", "coded", "selected",
]
PROBE = "zzz"  # not a UUID, an id, a position, a date or a choice
HOSTILE = [
    "-1",
    "99999999999999999999",  # beyond a bigint
    "9" * 5000,  # beyond Python's int-from-text limit (4,300 digits): int() raises
    "",
    "%00\x00",
    "z" * 5000,
    "null",
]


def _url(route: Route, world: World) -> str:
    return reverse(route.name, kwargs={k: world.kwarg(k, url_name=route.name) for k in route.kwargs})


@contextmanager
def _names_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The keys looked up in any QueryDict (request.GET, request.POST, DRF request.data) meanwhile."""
    names: set[str] = set()

    def recording(method_name: str):
        original = getattr(QueryDict, method_name)

        def lookup(self, key, *args, **kwargs):
            names.add(key)
            return original(self, key, *args, **kwargs)

        return lookup

    # get and getlist, not only __getitem__ (which get calls): CPython may cache a class's
    # __getitem__ for `self[key]` and miss a patched one. Not __contains__: parsing a query
    # string checks it for every key, read or not.
    with monkeypatch.context() as m:
        for method_name in ("get", "getlist", "__getitem__"):
            m.setattr(QueryDict, method_name, recording(method_name))
        yield names


def _send(client: Client, method: str, url: str, params: dict[str, str]):
    """One request whose writes are rolled back, so every request sees the same world."""
    with transaction.atomic():
        if method == "get":
            response = client.get(url, params)
        elif method == "post":
            response = client.post(url, params)  # form-encoded: pages and the API alike accept it
        else:
            response = client.generic(method.upper(), url, urlencode(params), content_type="application/x-www-form-urlencoded")
        transaction.set_rollback(True)
    return response


def _describe(method: str, url: str, params: dict[str, str], response) -> str:
    value = next(iter(params.values()), "")
    shown = repr(value) if len(value) < 30 else f"{value[:5]!r}…({len(value)} chars)"
    names = ",".join(sorted(params)) if len(params) <= 3 else f"{len(params)} names"
    reason = ""
    if getattr(response, "exc_info", None):
        exc = response.exc_info[1]
        reason = f" {type(exc).__module__}.{type(exc).__name__}: {str(exc)[:160]}"
    return f"{method.upper()} {url} {names}={shown} → {response.status_code}{reason}"


def _probe(method: str, check, monkeypatch) -> set[str] | None:
    """The names the view reads (None when it does not take `method`).

    All names go out as PROBE; the names read are taken out and the rest sent again, until
    the view reads no more of them: a view rejecting one parameter early (DRF's `format`,
    a required object) then does not hide the others.
    """
    read: set[str] = set()
    unsent = set(PARAMS)
    while unsent:
        with _names_read(monkeypatch) as names:
            if check(method, dict.fromkeys(sorted(unsent), PROBE)).status_code == 405:
                return None
        read |= names
        if not names & unsent:
            break
        unsent -= names
    return read


@pytest.fixture
def world(project, owner, analyst, viewer, outsider) -> World:
    return World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()


@pytest.mark.parametrize("route", [r for r in ROUTES if r.name not in SKIPPED], ids=str)
def test_hostile_parameters_never_cause_a_server_error(route: Route, world: World, owner, monkeypatch):
    # The test client re-raises view exceptions by default; here a crash is a 500 to report.
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    url = _url(route, world)
    failures: list[str] = []

    def check(method: str, params: dict[str, str]):
        response = _send(client, method, url, params)
        if response.status_code >= 500:
            failures.append(_describe(method, url, params, response))
        return response

    for method in ["get", "post"] + (["patch"] if route.is_api else []):
        read = _probe(method, check, monkeypatch)
        if read is None:
            continue
        for name in read & set(PARAMS):
            for value in HOSTILE:
                check(method, {name: value})
        if fields := read - set(PARAMS):
            # Form fields found by the probe: forms validate every field, so all at once.
            for value in [PROBE, *HOSTILE]:
                check(method, dict.fromkeys(fields, value))
    assert not failures, f"{route.name} answered malformed parameters with a server error:\n" + "\n".join(failures)


def test_the_sweep_sees_the_names_a_view_reads(world: World, owner, monkeypatch):
    # Guards the probe itself: if it recorded nothing, every view would be called with "zzz" only.
    client = Client()
    client.force_login(owner)
    with _names_read(monkeypatch) as read:
        client.get(reverse("coding:search", args=[world.project.uuid]), {"q": "identity"})
    assert {"q", "coded"} <= read


def test_a_malformed_uuid_in_a_page_query_gives_a_400_naming_the_parameter(world: World, owner):
    client = Client()
    client.force_login(owner)
    response = client.get(reverse("themes:snapshot_compare", args=[world.project.uuid]), {"a": "zzz"})
    assert response.status_code == 400
    assert "Parameter “a”: “zzz” is not a valid UUID." in response.content.decode()


def test_the_api_answers_a_django_validation_error_with_a_400_json_naming_the_parameter():
    # Called directly: the API's own views validate their filters first, so this is the net
    # for one that forgets (Theme.objects.filter(uuid="zzz") raises ValidationError).
    from django.core.exceptions import ValidationError as DjangoValidationError
    from rest_framework.request import Request
    from rest_framework.settings import api_settings
    from rest_framework.test import APIRequestFactory

    from projects.api_exceptions import api_exception_handler
    from themes.models import Theme

    assert api_settings.EXCEPTION_HANDLER is api_exception_handler
    request = Request(APIRequestFactory().get("/api/", {"theme": "zzz"}))
    with pytest.raises(DjangoValidationError) as raised:
        Theme.objects.filter(uuid=request.query_params["theme"])
    response = api_exception_handler(raised.value, {"request": request})
    assert response.status_code == 400
    assert response.data == {"detail": "Parameter “theme”: “zzz” is not a valid UUID."}


def test_a_nul_character_in_a_parameter_gives_a_400_naming_it(world: World, owner):
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("coding:search", args=[world.project.uuid]), {"q": "identity\x00"})
    assert page.status_code == 400 and "Parameter “q” contains a NUL character" in page.content.decode()
    api = client.post(reverse("api-theme-list", args=[world.project.uuid]), {"name": "Identity\x00"})
    assert api.status_code == 400 and "Parameter “name” contains a NUL character" in api.json()["detail"]


def test_a_malformed_segment_id_is_refused_without_pinning(world: World, owner):
    theme = world.get(World.model_for("theme"))
    client = Client()
    client.force_login(owner)
    url = reverse("themes:exemplar_pin", args=[world.project.uuid, theme.uuid])
    before = theme.exemplars.count()
    for bad in ({"segment": "zzz"}, {"segment": "²"}, {"segment": str(world.get(World.model_for("segment")).pk), "end_segment": "x"}):
        response = client.post(url, bad)
        assert response.status_code == 400 and "must be segment ids" in response.content.decode()
    assert theme.exemplars.count() == before
