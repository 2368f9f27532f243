"""Every URL in the URLconf, for anonymous, outsider, viewer, analyst and owner.

The rules (DESIGN.md "Permissions"):
- anonymous: pages redirect to the login page, the API answers 401;
- outsider: 404 for anything inside a project (a private project's existence never leaks);
- viewer: reads work, writes (POST/PUT/PATCH/DELETE the owner may do) get 403;
- analyst and owner: 2xx/3xx/400/409/422, never 404 or 5xx; owner-only actions give
  analysts (and viewers) 403.

A view added later joins automatically: its kwargs are filled from tests/world.py by
name, and whether it writes is found by trying the methods. A kwarg the world cannot
fill fails with a message saying what to add; a rule a view deliberately breaks goes in
EXCEPTIONS with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.world import OUR_APPS, UnknownKwarg, World

# URL name → why it is outside the matrix, or which rule it breaks on purpose.
EXCLUDED = {
    "admin": "Django admin: staff only, its own permission system, not a project surface.",
}
PUBLIC = {
    "login": "The login page itself.",
    "logout": "Logging out is harmless for anyone.",
    "healthz": "Load balancer health check; tells nothing about projects.",
    "favicon": "A redirect to the app's icon, asked by browsers before any login.",
    "api-schema": "The API's shape is not confidential; data stays behind authentication.",
    "api-docs": "Interactive docs for the public schema.",
    "projects:invitation_accept": "Public by token: the link alone admits its holder (an account is created on the way); "
    "unknown tokens get 404 without naming any project and are rate-limited per address.",
}
# Views any member may POST to (they change only the member's own data).
MEMBER_WRITES = {
    "projects:positionality": "Each member, viewers included, writes their own positionality statement.",
    "coding:speaker_toggle": "A per-user display preference kept in the session.",
    "themes:thread_read": "Marks the theme's thread read for the requesting member only.",
    "reports:excerpts_export": "Exporting is reading: viewers may export the tables they can see.",
    "reports:frequency_export": "As reports:excerpts_export.",
    "reports:export_qdpx": "As reports:excerpts_export: viewers may export the project as .qdpx (a POST: a large one queues a job).",
}
# Views whose body is checked before membership: an outsider's empty POST gets 400, which
# reveals nothing; test_coding_hot_path_refuses_outsiders_with_a_valid_body covers the real case.
OUTSIDER_400 = {
    "coding:apply": "The hot path validates the body, then checks membership inside its one SQL statement.",
    "coding:remove": "As coding:apply.",
}
# GETs that need query parameters naming objects; without them members get 404.
MEMBER_GET_404 = {
    "themes:snapshot_compare": "Compares two snapshots named in the query string.",
    "api-theme-snapshot-compare": "As themes:snapshot_compare.",
}
NOT_PROJECT_SCOPED = {
    "password_change", "password_change_done", "projects:list", "projects:create", "api-project-list",
    "exchange_import",  # importing a REFI-QDA project creates a new project
    "api_tokens", "api_token_revoke",  # the account's own API tokens; someone else's token is a 404
}
# Not project-scoped, and one account's own: the world's owner started it, so anyone else (analyst, viewer and
# outsider alike) gets 404.
UPLOADER_ONLY = {
    "exchange_import_job": "A project import (restore or .qdpx) is its uploader's: its people step, progress and result.",
    "exchange_import_job_send_again": "As exchange_import_job.",
    "exchange_import_job_discard": "As exchange_import_job.",
}

WRITE_METHODS_PAGE = ["post"]
WRITE_METHODS_API = ["post", "put", "patch", "delete"]
# 415: an upload endpoint refusing a JSON body is a correct client error, not a failure.
MEMBER_OK = {200, 201, 202, 204, 301, 302, 303, 400, 409, 415, 422}


@dataclass(frozen=True)
class Route:
    name: str
    route: str
    kwargs: tuple[str, ...]

    @property
    def is_api(self) -> bool:
        return self.route.startswith("api/")

    def __str__(self) -> str:
        return self.name


def _walk(patterns, prefix: str = "", namespace: str = ""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = f"{namespace}:{p.namespace}" if namespace and p.namespace else (p.namespace or namespace)
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else (p.name or "")
            yield prefix + str(p.pattern), name, p


def all_routes() -> list[Route]:
    routes = []
    for route, name, _pattern in _walk(get_resolver().url_patterns):
        if name.split(":")[0] in EXCLUDED or route.startswith("admin/"):
            continue
        # DRF routers add a format-suffix twin of each route; the plain one is checked.
        if "(?P<format>" in route:
            continue
        routes.append(Route(name=name or f"<unnamed {route}>", route=route, kwargs=_kwargs(route)))
    return routes


def _kwargs(route: str) -> tuple[str, ...]:
    """Kwarg names of a whole route, path converters (<uuid:x>) and regex groups ((?P<x>)) alike."""
    return tuple(a or b for a, b in re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>", route))


ROUTES = all_routes()


def test_every_route_has_a_name():
    unnamed = [r.route for r in ROUTES if r.name.startswith("<unnamed")]
    assert not unnamed, f"Give these URL patterns a name= so the permission matrix can reverse them: {unnamed}"


def test_the_matrix_sees_the_whole_urlconf():
    # Guards the walker itself: if it silently found nothing, every check below would pass.
    names = {r.name for r in ROUTES}
    assert {"projects:list", "projects:members", "project_home", "api-project-list", "api-schema"} <= names
    assert not any(r.route.startswith("admin/") for r in ROUTES)


@pytest.fixture
def world(project, owner, analyst, viewer, outsider) -> World:
    w = World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider)
    w.populate()
    return w


def _url(route: Route, world: World) -> str:
    kwargs = {}
    for name in route.kwargs:
        try:
            kwargs[name] = world.kwarg(name, url_name=route.name)
        except UnknownKwarg as exc:
            pytest.fail(
                f"{route.name} ({route.route}) takes the URL kwarg {name!r}, which tests/world.py cannot fill "
                f"(no model named {exc.args[0]!r} in {', '.join(OUR_APPS)}). Add it to ALIASES or BUILDERS there."
            )
    return reverse(route.name, kwargs=kwargs)


def _call(client: Client, method: str, url: str, *, api: bool, htmx: bool = False):
    """One request whose database writes are rolled back, so every role sees the same world."""
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with transaction.atomic():
        if api and method in ("post", "put", "patch"):
            response = getattr(client, method)(url, data={}, content_type="application/json", **extra)
        else:
            response = getattr(client, method)(url, **extra)
        transaction.set_rollback(True)
    return response


def _describe(role: str, method: str, url: str, response) -> str:
    body = b"" if response.streaming else response.content[:300]
    return f"{role} {method.upper()} {url} → {response.status_code} {body!r}"


def _writes(response_fn):
    """The response and whether the request wrote to the database (sessions aside)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        response = response_fn()
    wrote = any(
        q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) and "django_session" not in q["sql"]
        and "auth_user" not in q["sql"].split("WHERE")[0]
        for q in ctx.captured_queries
    )
    return response, wrote


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_permission_matrix(route: Route, world: World, client_for, owner, analyst, viewer, outsider):
    url = _url(route, world)
    methods = ["get"] + (WRITE_METHODS_API if route.is_api else WRITE_METHODS_PAGE)
    clients = {"owner": client_for(owner), "analyst": client_for(analyst), "viewer": client_for(viewer), "outsider": client_for(outsider)}
    anonymous = Client()

    owner_status, owner_wrote = {}, {}
    for m in methods:
        owner_status[m], owner_wrote[m] = _writes(lambda m=m: _call(clients["owner"], m, url, api=route.is_api))
    allowed = {m for m, r in owner_status.items() if r.status_code != 405}
    failures: list[str] = []

    def expect(ok: bool, role: str, method: str, response, rule: str) -> None:
        if not ok:
            failures.append(f"{rule}: {_describe(role, method, url, response)}")

    for method in methods:
        if method not in allowed:
            continue
        response = _call(anonymous, method, url, api=route.is_api)
        if route.name in PUBLIC:
            expect(response.status_code < 500, "anonymous", method, response, "public view fails")
        elif route.is_api:
            expect(response.status_code == 401 and response.has_header("WWW-Authenticate"), "anonymous", method, response,
                   "the API must answer anonymous requests with 401 and WWW-Authenticate")
        else:
            expect(response.status_code == 302 and "/accounts/login/" in response["Location"], "anonymous", method, response,
                   "pages must send anonymous users to the login page")

    if route.name in PUBLIC:
        assert not failures, "\n".join(failures)
        return

    if route.name in UPLOADER_ONLY:
        for method in allowed:
            expect(owner_status[method].status_code in MEMBER_OK, "owner", method, owner_status[method],
                   "the uploader must be served")
            for role in ("analyst", "viewer", "outsider"):
                response = _call(clients[role], method, url, api=route.is_api)
                expect(response.status_code == 404, role, method, response, "someone else's import must be a 404")
        assert allowed and not failures, "\n".join(failures)
        return

    for method in allowed:
        is_read = method == "get"
        # A POST that the owner gets the page for, writing nothing, is a read answered on POST.
        read_on_post = (not is_read and "get" in allowed and owner_status[method].status_code == owner_status["get"].status_code
                        and owner_status[method].status_code < 300 and not owner_wrote[method])
        member_ok = MEMBER_OK | ({404} if (not is_read or route.name in MEMBER_GET_404) else set())
        owner_response = owner_status[method]
        expect(owner_response.status_code in member_ok, "owner", method, owner_response, "owners must be served")

        outsider_response = _call(clients["outsider"], method, url, api=route.is_api)
        if route.name in NOT_PROJECT_SCOPED:
            expect(outsider_response.status_code < 500, "outsider", method, outsider_response, "logged-in users must not get 5xx")
        else:
            allowed_outsider = {404} | ({400} if route.name in OUTSIDER_400 and not is_read else set())
            expect(outsider_response.status_code in allowed_outsider, "outsider", method, outsider_response, "outsiders must get 404")

        analyst_response = _call(clients["analyst"], method, url, api=route.is_api)
        viewer_response = _call(clients["viewer"], method, url, api=route.is_api)
        expect(analyst_response.status_code in member_ok | {403}, "analyst", method, analyst_response, "analysts must get an answer")
        owner_only = analyst_response.status_code == 403
        if is_read or read_on_post:
            # Viewers may be refused a form that only leads to a write ("new guide"), never get 404 or 5xx.
            expect(viewer_response.status_code in member_ok | {403}, "viewer", method, viewer_response, "viewers must be able to read")
            if owner_only:
                expect(viewer_response.status_code == 403, "viewer", method, viewer_response, "an owner-only page must refuse viewers too")
        elif route.name in MEMBER_WRITES or route.name in NOT_PROJECT_SCOPED:
            expect(viewer_response.status_code in member_ok, "viewer", method, viewer_response, "this write is open to viewers")
        elif route.name in OUTSIDER_400:
            expect(viewer_response.status_code in (400, 403), "viewer", method, viewer_response, "viewers must get 403 on writes")
        else:
            expect(viewer_response.status_code == 403, "viewer", method, viewer_response, "viewers must get 403 on writes")

    if "get" in allowed and not route.is_api:
        # The same URL serves the htmx fragment; it must not fail either.
        fragment = _call(clients["owner"], "get", url, api=False, htmx=True)
        expect(fragment.status_code in MEMBER_OK | ({404} if route.name in MEMBER_GET_404 else set()), "owner (htmx)", "get",
               fragment, "the htmx fragment must be served")

    assert allowed, f"{route.name}: the owner got 405 for every method; is the view wired up?"
    assert not failures, "\n".join(failures)


def test_coding_hot_path_refuses_outsiders_with_a_valid_body(world: World, client_for, outsider, viewer, analyst):
    """coding:apply/remove check membership inside their SQL: a well-formed request from an outsider is a 404."""
    interview = world.get(World.model_for("interview"))
    segment = world.get(World.model_for("segment"))
    code = world.get(World.model_for("code"))
    Coding = World.model_for("coding")
    before = Coding.objects.count()
    for name in ("coding:apply", "coding:remove"):
        url = reverse(name, kwargs={"project_uuid": world.project.uuid, "interview_uuid": interview.uuid})
        body = {"code": code.pk, "segment": [segment.pk]}
        assert client_for(outsider).post(url, body).status_code == 404
        assert client_for(viewer).post(url, body).status_code == 403
    assert Coding.objects.count() == before
    url = reverse("coding:apply", kwargs={"project_uuid": world.project.uuid, "interview_uuid": interview.uuid})
    assert client_for(analyst).post(url, {"code": code.pk, "segment": [segment.pk]}).status_code == 200
