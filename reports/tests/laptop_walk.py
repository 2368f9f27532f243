"""The laptop default of `make run` walked through: SQLite, no broker, the demo project.

Run by test_laptop.py as a process of its own (`python -m reports.tests.laptop_walk <database file>`), since the
suite's own database is PostgreSQL; prints one JSON object: what failed, and what was visited. Every page whose
URL takes only the demo's objects is opened, then what a first day does with them: a thread, a code placed on the
board, an excerpt table with context and exemplars in every format, a second-reader run whose windows run in the
laptop's threads, and its suggestions decided; the search box's syntax; and the project brought back from its
backup and its .qdpx.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
import sys
import threading
import traceback
from urllib.parse import urlencode


def _setup(database: str) -> None:
    os.environ.update(DEBUG="true", DATABASE_URL=f"sqlite:///{database}", REDIS_URL="",
                      DJANGO_SETTINGS_MODULE="config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.LIVE_STREAM_SECONDS = 0.2  # an event stream opened here answers at once
    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=io.StringIO())


class Walk:
    def __init__(self, client) -> None:
        self.client = client
        self.failures: list[dict] = []
        self.visited: list[str] = []

    def request(self, method: str, url: str, data: dict | None = None, *, name: str = "", failing: int = 500,
                **headers):
        """The response, or None after a crash; a status from `failing` up is a failure too (500: only errors)."""
        self.visited.append(name or url)
        try:
            response = getattr(self.client, method)(url, data or {}, **headers)
            if getattr(response, "streaming", False):
                b"".join(response.streaming_content)
        except Exception as exc:  # noqa: BLE001 - every crash is reported, with where it happened
            self.failures.append({"request": f"{method.upper()} {url}", "error": repr(exc),
                                  "where": traceback.format_exc().strip().splitlines()[-3:]})
            return None
        if response.status_code >= failing:
            self.failures.append({"request": f"{method.upper()} {url}", "error": f"status {response.status_code}",
                                  "where": response.content.decode(errors="replace")[:300]})
        return response


def _patterns():
    """(route name, its parameters) of every named pattern, admin's aside."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(resolver, route: str, namespace: str) -> None:
        for p in resolver.url_patterns:
            if isinstance(p, URLResolver):
                walk(p, route + str(p.pattern), ":".join(n for n in (namespace, p.namespace or "") if n))
            elif isinstance(p, URLPattern) and p.name:
                params = re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>", route + str(p.pattern))
                found.append((":".join(n for n in (namespace, p.name) if n), [a or b for a, b in params]))

    walk(get_resolver(), "", "")
    return [(name, params) for name, params in found if not name.startswith("admin:") and name != "logout"]


def _demo_objects(project, user):
    """The demo with one of each thing a page is about: a memo, a meeting, a comment, an exemplar."""
    from interviews.models import Interview, Segment
    from themes import services
    from themes.models import Theme

    theme = Theme.objects.filter(project=project).first()
    interview = Interview.objects.filter(project=project).order_by("pk").first()
    segment = (Segment.objects.filter(interview__project=project, speaker="participant", codings__code__theme_codes__theme=theme)
               .order_by("pk").first())
    memo = services.memo_create(project=project, actor=user, title="First impressions", body="Hedged.", kind="reflexive",
                                theme=theme)
    review = services.review_create(project=project, actor=user, title="Weekly review", date=dt.date(2026, 11, 27),
                                    attendees=[user], themes=[theme])
    comment = services.comment_post(theme=theme, actor=user, body="Is this one theme or two?")
    exemplar = services.exemplar_pin(theme=theme, actor=user, segment=segment)
    return {"project": project, "theme": theme, "interview": interview, "participant": interview.participant,
            "code": theme.codes.first(), "memo": memo, "review": review, "comment": comment, "exemplar": exemplar}


def _url_parameters(name: str, params: list[str], objects: dict) -> dict | None:
    """The pattern's parameters filled with the demo's objects (an API detail's `uuid` by its route name), or None."""
    values = {f"{kind}_uuid": obj.uuid for kind, obj in objects.items()} | {"index": 0, "number": 1, "fmt": "csv"}
    detail = next((kind for kind in objects if name.startswith(f"api-{kind}-")), None)
    if detail:
        values["uuid"] = objects[detail].uuid
    return {p: values[p] for p in params} if set(params) <= set(values) else None


def _open_every_page(walk: Walk, objects: dict) -> list[str]:
    """GET (and as htmx) every pattern whose parameters are the demo's objects; returns the patterns left out."""
    from django.urls import reverse

    left_out = []
    for name, params in _patterns():
        kwargs = _url_parameters(name, params, objects)
        if kwargs is None:
            left_out.append(name)
            continue
        url = reverse(name, kwargs=kwargs)
        walk.request("get", url, name=name)
        walk.request("get", url, name=name, HTTP_HX_REQUEST="true")
    return left_out


def _first_day(walk: Walk, objects: dict) -> None:
    """Each step must succeed, not only not crash."""
    from django.urls import reverse

    from coding.models import Code

    project, theme = objects["project"], objects["theme"]
    p = project.uuid
    thread = reverse("themes:thread", args=[p, theme.uuid])
    walk.request("post", thread, {"body": "Two, I think."}, failing=400, HTTP_HX_REQUEST="true")
    walk.request("post", reverse("themes:comment_resolve", args=[p, objects["comment"].uuid]), {}, failing=400,
                 HTTP_HX_REQUEST="true")
    walk.request("get", thread, {"since": 1}, failing=400, HTTP_HX_REQUEST="true")
    loose = Code.objects.filter(project=project, theme_codes__isnull=True).first()
    walk.request("post", reverse("themes:code_place", args=[p]), {"code": str(loose.uuid), "theme": str(theme.uuid)},
                 failing=400, HTTP_HX_REQUEST="true")
    excerpts, export = reverse("reports:excerpts", args=[p]), reverse("reports:excerpts_export", args=[p])
    for query in ({"context": 2, "question": 1}, {"rows": "exemplars"}):
        walk.request("get", excerpts, query, failing=400)
        for fmt in ("csv", "xlsx", "docx", "tex", "md"):
            walk.request("post", f"{export}?{urlencode(query)}", {"format": fmt}, failing=400)


def _search(walk: Walk, project) -> None:
    """The search box's syntax, which SQLite reads as substrings: a phrase, and a word left out."""
    from django.urls import reverse

    from coding.queries import search_segments

    for q, fits in (('"a home"', lambda text: "a home" in text), ("home -family", lambda text: "home" in text and "family" not in text)):
        walk.request("get", reverse("coding:search", args=[project.uuid]), {"q": q}, failing=400)
        found = [row["text"].lower() for row in search_segments(project, q)]
        if not found or not all(fits(text) for text in found):
            walk.failures.append({"request": f"search {q}", "error": "results that do not fit the query", "where": found})


def _second_reader(walk: Walk, project, user) -> dict:
    """A run over the demo's interviews against the local fake endpoint: the laptop runs its windows in threads."""
    from django.db import transaction
    from django.urls import reverse

    from coding import reader
    from coding.models import Code, Coding
    from conduct.services import live_participant_save
    from conduct.testing.fake_openai import FakeOpenAIServer
    from interviews.models import Interview

    first_code = Code.objects.filter(project=project).order_by("position", "name").first().pk

    def answer(body: dict) -> str:  # the first code for every sentence of the window
        lines = re.findall(r"^\[(\d+)\] ", body["messages"][1]["content"], re.M)
        return json.dumps({"proposals": [{"segment_id": int(s), "code_id": first_code, "rationale": "fits",
                                          "evidence": ""} for s in lines], "new_code_ideas": []})

    with FakeOpenAIServer() as server:
        server.script("reader", answer=answer)
        endpoint = live_participant_save(
            project=project, participant=None, label="Reader", provider="Fake", model_id="reader",
            base_url=server.base_url, temperature=0, top_p=None, seed=1, max_tokens=None, timeout_seconds=10, api_key=None)
        reader.reader_settings_save(project=project, user=user, enabled=True, endpoint=endpoint, local_only=False)
        with transaction.atomic():  # its windows start in a thread of their own when this commits
            run = reader.run_start(project=project, user=user, with_critic=False,
                                   interviews=list(Interview.objects.filter(project=project, participant__is_live=False)))
        # Only the run's own thread: the threads it starts may not have started yet, and join() refuses those.
        for thread in threading.enumerate():
            if thread.name == reader.laptop_thread_name(run.pk):
                thread.join(timeout=120)
    run.refresh_from_db()
    suggestions = list(run.suggestions.order_by("pk"))
    for suggestion, decision in zip(suggestions, ("accept", "reject", "accept"), strict=False):
        walk.request("post", reverse("coding:suggestion_decide", args=[project.uuid, suggestion.uuid, decision]),
                     {"reason": "not here"}, failing=400)
    return {"status": run.status, "windows": len(run.windows), "suggestions": len(suggestions),
            "decided": run.suggestions.exclude(status="pending").count(),
            "accepted_codings": Coding.objects.filter(suggestion__run=run, origin=Coding.Origin.SUGGESTION).count()}


def _moved(project, user) -> dict:
    """The project brought back from its backup and from its .qdpx (SQLite takes their rows by INSERT, projects.copy)."""
    from django.contrib.auth import get_user_model

    from coding.models import Coding
    from reports.backup import backup_people, project_backup, project_restore
    from reports.exchange import project_export_qdpx, project_import_qdpx

    backup, qdpx = io.BytesIO(), io.BytesIO()
    project_backup(project=project, out=backup)
    project_export_qdpx(project=project, out=qdpx)
    accounts = get_user_model().objects.in_bulk([p.username for p in backup_people(source=backup.getvalue())],
                                                field_name="username")
    restored = project_restore(source=backup.getvalue(), owner=user, people=accounts).project
    imported = project_import_qdpx(source=qdpx.getvalue(), owner=user, filename="demo.qdpx").project
    return {name: [(c.segment.text, c.code.name) for c in Coding.objects.filter(interview__project=p).select_related(
        "segment", "code").order_by("interview__title", "segment__position", "code__name", "coder__username")]
        for name, p in (("demo", project), ("restored", restored), ("imported", imported))}


def main(database: str) -> None:
    _setup(database)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from coding.models import SuggestionRun
    from projects.models import Project
    from reports.demo import DEMO_USERNAME

    user = get_user_model().objects.get(username=DEMO_USERNAME)
    project = Project.objects.get(memberships__user=user)
    client = Client()
    client.force_login(user)
    walk = Walk(client)
    objects = _demo_objects(project, user)
    run = _second_reader(walk, project, user)
    objects["run"] = SuggestionRun.objects.get(project=project)
    objects["suggestion"] = objects["run"].suggestions.order_by("pk").first()
    left_out = _open_every_page(walk, objects)
    _first_day(walk, objects)
    _search(walk, project)
    print(json.dumps({"failures": walk.failures, "visited": sorted(set(walk.visited)), "left_out": left_out,
                      "reader_run": run, "moved": _moved(project, user)}))


if __name__ == "__main__":
    main(sys.argv[1])
