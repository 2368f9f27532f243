from __future__ import annotations

import functools
import ipaddress
import logging
import traceback
from collections.abc import Iterable, Mapping

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse

from config.env import TRUSTED_FORWARDED_PROTO_META

logger = logging.getLogger(__name__)


class HealthCheckMiddleware:
    """/healthz answered before the HTTPS redirect and the Host check.

    Docker's healthcheck and load balancers ask over plain http, by IP address, from inside
    the network: a 301 to https or a 400 for an unlisted Host would mark a healthy app down.
    The answer names no project, user or host, so nothing is lost by skipping those checks.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/healthz" and request.method in ("GET", "HEAD"):
            from projects.views import healthz  # views import the Celery app; only loaded once asked

            return healthz(request)
        return self.get_response(request)


class TrustedProxyMiddleware:
    """The client's address and scheme as the reverse proxy saw them, believed only from settings.TRUSTED_PROXIES.

    Behind a TLS proxy every request comes from the proxy's address: the login lockout and the
    invitation limit (projects/ratelimit.py) need the real client's, which the proxy sends in
    X-Forwarded-For, and the HTTPS redirect needs to know the client used https
    (X-Forwarded-Proto). Any client can send those headers too, so they are removed from every
    request and used only when it comes from a configured proxy.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.META.pop(TRUSTED_FORWARDED_PROTO_META, None)  # only ever this middleware's
        forwarded_for = request.META.pop("HTTP_X_FORWARDED_FOR", "")
        forwarded_proto = request.META.pop("HTTP_X_FORWARDED_PROTO", "")
        proxies = trusted_networks(tuple(settings.TRUSTED_PROXIES))
        if proxies and _is_in(request.META.get("REMOTE_ADDR", ""), proxies):
            if client := forwarded_client(forwarded_for, proxies):
                request.META["REMOTE_ADDR"] = client
            if forwarded_proto:
                request.META[TRUSTED_FORWARDED_PROTO_META] = forwarded_proto.lower()  # SECURE_PROXY_SSL_HEADER
        return self.get_response(request)


@functools.lru_cache(maxsize=4)
def trusted_networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    # ::ffff:10.0.0.1 is 10.0.0.1 reached over an IPv6 socket.
    return address.ipv4_mapped if address.version == 6 and address.ipv4_mapped else address


def _is_in(text: str, networks: Iterable) -> bool:
    address = _address(text)
    return address is not None and any(address in network for network in networks)


def forwarded_client(forwarded_for: str, proxies: Iterable) -> str:
    """The client in "client, proxy1, proxy2": the right-most address that is not a trusted proxy.

    Each proxy appends the address it was connected from, so entries right of the last
    untrusted one are our proxies' own, and entries left of it are whatever the client sent.
    """
    hops = [hop for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return ""
        if not any(address in network for network in proxies):
            return str(address)
    return str(_address(hops[0])) if hops else ""


class DatabaseUnavailableMiddleware:
    """A lost database connection gives a clear 503 page; the next request reconnects."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("Database unavailable: %s", exception)
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        html = render_to_string("503.html", {"reason": "database"})
        response = HttpResponse(html, status=503)
        response["Retry-After"] = "5"
        return response


TOO_BROAD = ("This page asks for more than the database can read in the time allowed ({seconds:g} s). "
             "Narrow it (filter it, or go to an earlier page) and try again.")


class StatementTimeoutMiddleware:
    """Web requests' SQL statements get a time limit, and a cancelled one a clear 503 instead of a 500.

    The limit (settings.RTA_WEB_STATEMENT_TIMEOUT_MS) is PostgreSQL's statement_timeout, set on
    this request's connection; the Celery worker runs no middleware, so its statements have none.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        applied = False

        def apply_timeout(execute, sql, params, many, context):
            # Before the request's first query: a request that reads nothing (the API schema) costs nothing.
            nonlocal applied
            if not applied:
                applied = True
                statement_timeout_set(settings.RTA_WEB_STATEMENT_TIMEOUT_MS)
            return execute(sql, params, many, context)

        with connections["default"].execute_wrapper(apply_timeout):
            return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_query_cancelled(exception):
            return None
        logger.warning("Statement timeout on %s %s", request.method, request.get_full_path())
        problem = TOO_BROAD.format(seconds=settings.RTA_WEB_STATEMENT_TIMEOUT_MS / 1000)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": problem, "code": "statement_timeout"}, status=503)
        # No request context: rendering must not query a connection whose transaction may be aborted.
        return HttpResponse(render_to_string("503.html", {"reason": "timeout", "problem": problem}), status=503)


def statement_timeout_set(milliseconds: int) -> None:
    """Set PostgreSQL's statement_timeout on the default connection (0: none), once per connection.

    Sent on the driver's own cursor: it is the request's setup, not one of the view's queries,
    which the query-count tests count. A persistent connection keeps the setting from request to
    request, so it costs a round trip only when the connection is new; a SET made inside a
    transaction (tests run in one) is undone by its rollback, so only one made outside is remembered.
    """
    connection = connections["default"]
    if connection.vendor != "postgresql":
        return
    connection.ensure_connection()
    applied = (connection.connection, milliseconds)
    if not connection.in_atomic_block and getattr(connection, "rta_statement_timeout", None) == applied:
        return
    with connection.wrap_database_errors, connection.connection.cursor() as cursor:  # errors as Django's
        cursor.execute("SELECT set_config('statement_timeout', %s, false)", [str(int(milliseconds))])
    connection.rta_statement_timeout = None if connection.in_atomic_block else applied


def is_query_cancelled(exception: BaseException) -> bool:
    """Whether PostgreSQL cancelled the statement (SQLSTATE 57014: statement_timeout, or cancelled by an admin)."""
    return isinstance(exception, OperationalError) and getattr(exception.__cause__, "sqlstate", None) == "57014"


class MemoryLimitMiddleware:
    """A request that runs past the process's memory ceiling (config/memory.py) gets a clear 503, not a dead worker."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, MemoryError):
            return None
        # The failed view's frames still hold what filled the memory: let it go before answering.
        traceback.clear_frames(exception.__traceback__)
        logger.error("Request ran out of memory: %s %s", request.method, request.path)
        problem = ("This request needed more memory than the server allows one process. Nothing was saved. "
                   "If you sent a file, split it into smaller files or ask your administrator about RTA_MEMORY_LIMIT_MB.")
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": problem}, status=503)
        return HttpResponse(render_to_string("503.html", {"reason": "memory", "problem": problem}), status=503)


CONFLICT = ("This was not saved: it clashes with something saved at the same moment (by a colleague, another tab, or "
            "the same form sent twice). Nothing was saved. Reload the page to see what is there now, then try again.")


UNSTORABLE = ("This was not saved: it holds a value the database cannot store (longer than its field allows, a number "
              "out of range, or a NUL character). Nothing was saved. Shorten or correct what you sent, then try again.")


class DatabaseRefusedMiddleware:
    """A write the database refuses, for a rule or a value no check caught, gets a clear answer instead of a 500 quoting
    the database: a 409 for a rule two people broke at the same moment, a 400 for a value it cannot store.

    Services check first and give their own messages (the field, the row; projects.names.name_kept_unique for races);
    this is the net under what they miss. The service's transaction has rolled back: nothing was saved.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, IntegrityError):
            problem, code, status = CONFLICT, "conflict", 409
        elif isinstance(exception, DataError):
            problem, code, status = UNSTORABLE, "unstorable", 400
        else:
            return None
        logger.warning("Write refused by the database on %s %s: %s", request.method, request.path, exception)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": problem, "code": code}, status=status)
        # No request context: rendering must not query a connection whose transaction may be aborted.
        return HttpResponse(render_to_string("not_saved.html", {"problem": problem}), status=status)


class MalformedParameterMiddleware:
    """A malformed parameter gives a 400 naming it, not a 500 from the database.

    Two narrow cases, both the client's mistake whatever the view: a NUL character in a
    query-string or form value (PostgreSQL text cannot hold one; Django's forms refuse it,
    hand-read parameters did not), and a Django ValidationError escaping the view, which a
    query raises for a value its field cannot hold (`filter(uuid="zzz")`). Views still
    validate their input; this keeps a forgotten check a 400. The API has the same rules
    in projects/api_exceptions.py (DRF handles its views' exceptions itself).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        name = _nul_parameter(request)
        if name is None:
            return None
        return _bad_request(request, f"Parameter “{name}” contains a NUL character, which no text may hold.")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ValidationError):
            return None
        return _bad_request(request, malformed_parameter_message(exception, [request.GET, request.POST]))


class FormOnlyAddressMiddleware:
    """A page opened at an address that only receives forms says so and links back, instead of a blank 405.

    Browsers open such an address with GET after signing in again (the login's ?next= is the address the
    form was sent to), from the address bar or history after a refused form, or from a bookmark. htmx
    requests and other methods keep the plain 405; the API answers its own.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not isinstance(response, HttpResponseNotAllowed) or request.method != "GET" or request.htmx:
            return response
        project_uuid = request.resolver_match.kwargs.get("project_uuid") if request.resolver_match else None
        home = reverse("project_home", args=[project_uuid]) if project_uuid else None
        page = render(request, "405.html", {"project_home": home}, status=405)
        page["Allow"] = response["Allow"]
        return page


def _nul_parameter(request: HttpRequest) -> str | None:
    """The first query or form parameter holding a NUL character, if any; cheap on every request.

    A raw query string or url-encoded body without "%00" or a NUL byte cannot decode (as UTF-8,
    the default) to a value holding one, so the parsed values are only scanned when it might.
    """
    sources = []
    if _may_hold_nul(request, request.META.get("QUERY_STRING", "")):
        sources.append(request.GET)
    # request.POST is only parsed for form posts (as CsrfViewMiddleware does); JSON bodies are DRF's.
    if request.method == "POST" and request.content_type == "multipart/form-data":
        sources.append(request.POST)  # its raw body holds files, which may hold NUL bytes
    elif request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        if _may_hold_nul(request, request.body):
            sources.append(request.POST)
    return next((name for source in sources for name, values in source.lists() if any("\x00" in v for v in values)), None)


def _may_hold_nul(request: HttpRequest, raw: str | bytes) -> bool:
    if request.encoding is not None:  # a declared charset (UTF-7 can spell NUL without a NUL byte): look
        return True
    nul, escaped = ("\x00", "%00") if isinstance(raw, str) else (b"\x00", b"%00")
    return nul in raw or escaped in raw


def _bad_request(request: HttpRequest, problem: str) -> HttpResponse:
    logger.info("Malformed parameter on %s: %s", request.path, problem)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": problem}, status=400)
    return HttpResponse(render_to_string("400.html", {"problem": problem}, request=request), status=400)


def malformed_parameter_message(exception: ValidationError, sources: Iterable[Mapping]) -> str:
    """“Parameter “code”: “zzz” is not a valid UUID.”, naming the parameter that holds the bad value."""
    reason = " ".join(exception.messages)
    value = (getattr(exception, "params", None) or {}).get("value")
    names = [name for source in sources if isinstance(source, Mapping) and value is not None
             for name in source if str(value) in _values(source, name)]
    if not names:
        return f"A parameter of this request is malformed: {reason}"
    return f"Parameter “{names[0]}”: {reason}"


def _values(source: Mapping, name: str) -> list[str]:
    values = source.getlist(name) if hasattr(source, "getlist") else source.get(name)
    values = values if isinstance(values, list) else [values]
    return [str(v) for v in values]
