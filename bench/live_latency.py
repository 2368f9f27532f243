"""Live updates: time from a colleague's action to it showing on other open pages, with N pages listening.

    .venv/bin/python bench/live_latency.py                      # 20 pages, 40 actions, gunicorn + Redis
    .venv/bin/python bench/live_latency.py --pages 50 --actions 20
    .venv/bin/python bench/live_latency.py --broker memory      # one gunicorn process, no Redis (as `make run`)

Against gunicorn (gthread, as in production) and PostgreSQL on 127.0.0.1. N listeners each hold a
real session and the project's event stream open (/p/<uuid>/live/, as live.js does). One colleague
alternates: posts a comment on a theme, applies a code in an interview. Each listener, on the event,
fetches what a page fetches (the thread fragment, the interview's coding state) and checks that the new
comment or coding is in it; the latency is from just before the colleague's POST to that check passing,
in this one process (one clock). The next action starts once every listener saw the previous one (or
after 10 s). The polling it replaces is reported beside it: a poll every T seconds shows a change after
T/2 on average (p95 0.95 T), plus the fetch.

Only loopback traffic; every loop is bounded. A fresh database (rta_bench_live) is created, migrated
and seeded, and dropped at the end unless --keep-db.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import load  # noqa: E402  (create/drop the database, start gunicorn)

load.DB_NAME = "rta_bench_live"
WAIT_PER_ACTION = 10.0


def seed(pages: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from coding.services import code_create
    from interviews.models import Segment
    from interviews.tests.factories import make_interview, make_participant
    from projects.models import Membership, Project, Role
    from themes.services import theme_create

    User = get_user_model()
    owner = User.objects.create_user("live-owner", password="x")
    project = Project.objects.create(name="Live bench", created_by=owner)
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    users = [User.objects.create_user(f"listener{i:02d}", password="x") for i in range(pages)]
    Membership.objects.bulk_create([Membership(project=project, user=u, role=Role.ANALYST) for u in users])
    participant = make_participant(project, "GPT-4o", model_id="gpt-4o")
    spec = [("interviewer", "What do you value?")] + [
        ("participant", " ".join(f"Sentence {t}.{s} about values and trust." for s in range(6))) for t in range(1, 12)]
    interview = make_interview(project, participant, spec, title="Interview 1")
    code = code_create(project=project, actor=owner, name="Trust")
    theme = theme_create(project=project, actor=owner, name="Values")
    segments = list(Segment.objects.filter(interview=interview, speaker="participant").order_by("position")
                    .values_list("pk", flat=True))

    def cookie(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    return {"project": str(project.uuid), "theme": str(theme.uuid), "interview": str(interview.uuid), "code": code.pk,
            "segments": segments, "actor": cookie(owner), "listeners": [cookie(u) for u in users]}


class Board:
    """What the colleague did (marker → start time) and what each listener saw when."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.started: dict[str, float] = {}
        self.seen: dict[str, dict[int, float]] = {}
        self.heard: dict[str, dict[int, float]] = {}  # when the event arrived, before the fetch
        self.errors: list[str] = []

    def start(self, marker: str) -> None:
        with self.lock:
            self.started[marker] = time.perf_counter()
            self.seen[marker] = {}
            self.heard[marker] = {}

    def saw(self, marker: str, listener: int) -> None:
        with self.lock:
            if marker in self.seen and listener not in self.seen[marker]:
                self.seen[marker][listener] = time.perf_counter()
                self.lock.notify_all()

    def hear(self, kind: str, listener: int) -> None:
        now = time.perf_counter()
        with self.lock:
            for marker, heard in self.heard.items():
                if marker.startswith(kind) and listener not in heard and listener not in self.seen[marker]:
                    heard[listener] = now

    def wait_all(self, marker: str, count: int, timeout: float) -> None:
        with self.lock:
            self.lock.wait_for(lambda: len(self.seen[marker]) >= count, timeout=timeout)


def session_for(base: str, cookie: str) -> requests.Session:
    session = requests.Session()
    session.cookies.set("sessionid", cookie, domain="127.0.0.1")
    session.headers["Referer"] = base + "/"
    return session


def listener(n: int, world: dict, base: str, board: Board, since: str, stop: threading.Event, ready: threading.Barrier) -> None:
    session = session_for(base, world["listeners"][n])
    project, theme, interview = world["project"], world["theme"], world["interview"]
    last_id, first = since, True
    while not stop.is_set():
        headers = {"Last-Event-ID": last_id} if last_id else {}
        try:
            with session.get(f"{base}/p/{project}/live/?where=theme:{theme}&client=bench{n}", headers=headers,
                             stream=True, timeout=(5, 90)) as response:
                if response.status_code != 200:
                    board.errors.append(f"listener {n}: stream answered {response.status_code}")
                    return
                for line in response.iter_lines(chunk_size=None, decode_unicode=True):
                    if first and line.startswith("id: "):
                        first = False
                        ready.wait()
                    if line.startswith("id: "):
                        last_id = line[4:]
                    elif line.startswith("data: "):
                        react(json.loads(line[6:]), n, session, base, project, theme, interview, board)
                    if stop.is_set():
                        return
        except requests.RequestException as exc:
            if not stop.is_set():
                board.errors.append(f"listener {n}: {exc!r}")
                time.sleep(1)


def react(event: dict, n: int, session: requests.Session, base: str, project: str, theme: str, interview: str, board: Board) -> None:
    """Fetch what the page would fetch on this event and note each pending marker now visible."""
    board.hear(event.get("kind", ""), n)
    with board.lock:
        pending = [m for m, seen in board.seen.items() if n not in seen]
    if event.get("kind") == "comment":
        text = session.get(f"{base}/p/{project}/themes/t/{theme}/thread/", timeout=10).text
        for marker in pending:
            if marker.startswith("comment-") and marker in text:
                board.saw(marker, n)
    elif event.get("kind") == "coding":
        state = session.get(f"{base}/p/{project}/interviews/{interview}/code/state/", timeout=10).json()
        coded = {row[0] for row in state["codings"]}
        for marker in pending:
            if marker.startswith("coding-") and int(marker.split("-")[1]) in coded:
                board.saw(marker, n)


def colleague(world: dict, base: str, board: Board, actions: int, pages: int) -> None:
    session = session_for(base, world["actor"])
    session.get(f"{base}/p/{world['project']}/")
    headers = {"X-CSRFToken": session.cookies.get("csrftoken") or "", "HX-Request": "true"}
    project = world["project"]
    for i in range(actions):
        if i % 2 == 0:
            marker = f"comment-{i}-marker"
            board.start(marker)
            r = session.post(f"{base}/p/{project}/themes/t/{world['theme']}/thread/", data={"body": marker}, headers=headers)
        else:
            segment = world["segments"][i % len(world["segments"])]
            marker = f"coding-{segment}"
            board.start(marker)
            r = session.post(f"{base}/p/{project}/interviews/{world['interview']}/code/apply/",
                             data={"code": world["code"], "segments": str(segment)}, headers=headers)
        if r.status_code != 200:
            board.errors.append(f"action {i}: {r.status_code} {r.text[:200]}")
        board.wait_all(marker, pages, WAIT_PER_ACTION)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--actions", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--broker", choices=("redis", "memory"), default="redis")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14") if args.broker == "redis" else ""
    workers = args.workers if args.broker == "redis" else 1  # without Redis, one process is one broker
    database_url = load.create_database()
    proc = None
    try:
        load.setup_django(database_url, redis_url)  # without Redis, sessions live in the database the server reads
        world = seed(args.pages)
        os.environ["RTA_LIVE_STREAMS_PER_PROCESS"] = str(args.threads - 4)
        proc, base = load.start_gunicorn(database_url, redis_url, workers, args.threads)
        board, stop = Board(), threading.Event()
        ready = threading.Barrier(args.pages + 1)
        threads = [threading.Thread(target=listener, args=(n, world, base, board, "", stop, ready), daemon=True)
                   for n in range(args.pages)]
        for t in threads:
            t.start()
        try:
            ready.wait(timeout=60)  # every page's stream is open
        except threading.BrokenBarrierError:
            raise SystemExit(f"the pages' streams did not all open: {board.errors[:5]}") from None
        began = time.perf_counter()
        colleague(world, base, board, args.actions, args.pages)
        wall = time.perf_counter() - began
        stop.set()
        report(board, args, wall)
    finally:
        if proc is not None:
            load.stop(proc)
        if not args.keep_db:
            from django.db import connections

            connections.close_all()
            load.drop_database()


def report(board: Board, args, wall: float) -> None:
    by_kind: dict[str, list[float]] = {"comment": [], "coding": []}
    heard: dict[str, list[float]] = {"comment": [], "coding": []}
    missing = 0
    for marker, start in board.started.items():
        seen = board.seen[marker]
        missing += args.pages - len(seen)
        by_kind[marker.split("-")[0]].extend((t - start) * 1000 for t in seen.values())
        heard[marker.split("-")[0]].extend((t - start) * 1000 for t in board.heard[marker].values())
    print(f"live updates, {args.pages} pages listening, {args.actions} actions, broker {args.broker}, "
          f"{args.workers if args.broker == 'redis' else 1} gunicorn workers x {args.threads} threads, {wall:.1f} s")
    for kind, values in by_kind.items():
        if values:
            print(f"  {kind:8s} shown   n={len(values):4d}  p50 {statistics.median(values):6.0f} ms  p95 {percentile(values, 95):6.0f} ms"
                  f"  max {max(values):6.0f} ms")
        if heard[kind]:
            print(f"  {kind:8s} event   n={len(heard[kind]):4d}  p50 {statistics.median(heard[kind]):6.0f} ms"
                  f"  p95 {percentile(heard[kind], 95):6.0f} ms  (the stream's part, before the fetch)")
    print(f"  not seen within {WAIT_PER_ACTION:.0f} s: {missing}; errors: {len(board.errors)}")
    for error in board.errors[:10]:
        print("   ", error)
    for name, interval in (("thread poll (4 s)", 4.0), ("coding poll (15 s)", 15.0)):
        print(f"  old {name}: p50 {interval * 500:.0f} ms  p95 {interval * 950:.0f} ms (+ the fetch)")


if __name__ == "__main__":
    main()
