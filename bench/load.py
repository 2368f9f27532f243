"""Load: simulated coders against gunicorn + PostgreSQL on 127.0.0.1, then a consistency check.

    .venv/bin/python bench/load.py                    # 50 coders, 5 minutes
    .venv/bin/python bench/load.py --seconds 60       # shorter, when the machine is busy
    .venv/bin/python bench/load.py --coders 10 --seconds 20 --keep-db
    .venv/bin/python bench/load.py --compose          # the same against docker-compose.yml, scaled out

Each coder logs in (a real session), then loops until the time is up: open an interview's
coding workspace, apply a code to a segment, sometimes remove one of their own codings,
search the transcripts, open a theme page, with a short think time between steps. Every
request's latency and status are recorded; every acknowledged apply/remove is recorded in
order. Afterwards the database must match: every acknowledged coding present, every
acknowledged removal absent, no duplicates, nothing unacknowledged.

Only loopback traffic; the loops stop at the deadline. A fresh database (rta_bench_load)
is created, migrated and seeded, and dropped at the end unless --keep-db.

With --compose the server is docker-compose.yml itself (tests/compose_stack.py: nginx in front of
--web-replicas gunicorn containers, Celery workers, PostgreSQL and Redis in containers): the data
is seeded inside a web container, with the deployment's own settings, and checked through the
stack's PostgreSQL; CPU is read from the containers' cgroups.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
DB_NAME = "rta_bench_load"
WORDS = ("identity memory trust tradition family language context model answer prompt safety bias "
         "culture value care doubt story self other voice power risk rule help").split()
SEARCHES = ["identity", "family tradition", "trust", "language model", "safety", "culture"]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    # (user_id, segment_id, code_id) → "applied" | "removed", in acknowledgement order per coder
    acknowledged: dict[tuple[int, int, int], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, seconds: float, status: int | None, detail: str = "") -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            if status is None or status >= 400:
                self.errors.append(f"{kind}: {status} {detail[:200]}")


# --- setup ---------------------------------------------------------------------------------

def _base_url() -> str:
    return os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rta")


def _admin_conn():
    import psycopg

    url = urlparse(_base_url())
    return psycopg.connect(host=url.hostname or "127.0.0.1", port=url.port or 5432, user=url.username or "postgres",
                           password=url.password or None, dbname="postgres", autocommit=True)


def create_database() -> str:
    with _admin_conn() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    url = urlparse(_base_url())
    return url._replace(path=f"/{DB_NAME}").geturl()


def drop_database() -> None:
    with _admin_conn() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


def setup_django(database_url: str, redis_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
    os.environ["RTA_TEST_CACHED_AUTH"] = "true"  # sessions and users from Redis, as in production
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def seed(*, coders: int, interviews: int, turns: int, rng: random.Random) -> dict:
    """A project with `coders` analysts, interviews with segmented turns, codes and themes."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from coding.services import code_create
    from interviews.models import Segment
    from interviews.tests.factories import make_interview, make_participant
    from projects.models import Membership, Project, Role
    from themes.services import theme_add_code, theme_create

    User = get_user_model()
    owner = User.objects.create_user("load-owner", password="x")
    project = Project.objects.create(name="Load test", created_by=owner)
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    users = [User.objects.create_user(f"coder{i:02d}", password="x") for i in range(coders)]
    Membership.objects.bulk_create([Membership(project=project, user=u, role=Role.ANALYST) for u in users])
    participants = [make_participant(project, label, model_id=label.lower()) for label in ("GPT-4o", "Claude", "Gemini", "Llama", "DeepSeek")]
    ivs = []
    for n in range(interviews):
        spec = []
        for t in range(turns):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "." for _ in range(rng.randint(3, 8))]
            spec.append(("interviewer" if t % 2 == 0 else "participant", " ".join(sentences)))
        ivs.append(make_interview(project, participants[n % len(participants)], spec, title=f"Interview {n + 1}"))
    codes = [code_create(project=project, actor=owner, name=f"Code {i + 1}") for i in range(20)]
    themes = []
    for i in range(3):
        theme = theme_create(project=project, actor=owner, name=f"Theme {i + 1}")
        for code in codes[i * 5:(i + 1) * 5]:
            theme_add_code(theme=theme, actor=owner, code=code)
        themes.append(theme)
    segments = {iv.uuid: list(Segment.objects.filter(interview=iv, speaker="participant").values_list("pk", flat=True)) for iv in ivs}
    cookies = []
    for user in users:
        client = Client()
        client.force_login(user)
        cookies.append(client.cookies["sessionid"].value)
    return {
        "project": str(project.uuid), "users": [u.pk for u in users], "cookies": cookies,
        "interviews": [str(iv.uuid) for iv in ivs], "segments": {str(k): v for k, v in segments.items()},
        "codes": [c.pk for c in codes], "themes": [str(t.uuid) for t in themes],
        "segment_count": sum(len(v) for v in segments.values()),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(database_url: str, redis_url: str, workers: int, threads: int) -> tuple[subprocess.Popen, str]:
    import requests

    port = free_port()
    env = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, DJANGO_SETTINGS_MODULE="config.settings_test",
               CELERY_TASK_ALWAYS_EAGER="true", DEBUG="false")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--worker-class", "gthread", "--threads", str(threads), "--timeout", "60",
         # Longer than the coders' think time: gunicorn's default 2 s closes idle keep-alive
         # connections just as a client reuses them (connection reset, counted as an error).
         "--keep-alive", "75",
         "--log-level", "warning"],
        cwd=REPO, env=env, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(url + "/healthz", timeout=2).status_code < 600:
                return proc, url
        except requests.RequestException:
            time.sleep(0.2)
    stop(proc)
    raise SystemExit("gunicorn did not start within 60 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def cpu_seconds(pids: list[int], *, with_reaped_children: bool = False) -> float:
    """User + system CPU of these processes (and, for a master, of the workers it has reaped), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone since it was listed
        total += int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if with_reaped_children else 0)
    return total / tick


def processes(*, parent: int | None = None, name: str = "") -> list[int]:
    """Process ids with this parent, or with this command name."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            head, rest = (entry / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        if (parent is not None and int(rest.split()[1]) == parent) or (name and head.split("(", 1)[1] == name):
            found.append(int(entry.name))
    return found


def web_and_database_cpu(web: subprocess.Popen) -> tuple[float, float]:
    """CPU seconds so far of gunicorn (master, its workers, workers it replaced) and of PostgreSQL (every postgres
    process, and the backends the postmaster has reaped: a connection per request ends with its request)."""
    return (cpu_seconds([web.pid], with_reaped_children=True) + cpu_seconds(processes(parent=web.pid)),
            cpu_seconds(processes(name="postgres"), with_reaped_children=True))


# --- the coders ----------------------------------------------------------------------------

def coder(n: int, world: dict, base: str, deadline: float, stats: Stats, think: tuple[float, float]) -> None:
    import requests  # a bench dependency: --seed-here runs in the app's image, which has none

    rng = random.Random(n)
    user_id, project = world["users"][n], world["project"]
    session = requests.Session()
    session.cookies.set("sessionid", world["cookies"][n], domain="127.0.0.1")
    session.headers["Referer"] = base + "/"

    def call(kind: str, method: str, path: str, **kwargs) -> requests.Response | None:
        started = time.perf_counter()
        try:
            response = session.request(method, base + path, timeout=30, allow_redirects=False, **kwargs)
        except requests.RequestException as exc:
            stats.record(kind, time.perf_counter() - started, None, repr(exc))
            return None
        stats.record(kind, time.perf_counter() - started, response.status_code, response.text if response.status_code >= 400 else "")
        return response

    call("project home", "GET", f"/p/{project}/")
    token = session.cookies.get("csrftoken", domain="127.0.0.1") or session.cookies.get("csrftoken")
    post_headers = {"X-CSRFToken": token or "", "HX-Request": "true"}
    mine: list[tuple[str, int, int]] = []  # this coder's acknowledged codings: (interview, segment, code)
    while time.monotonic() < deadline:
        interview = rng.choice(world["interviews"])
        call("open interview", "GET", f"/p/{project}/interviews/{interview}/code/")
        for _ in range(rng.randint(1, 4)):
            if time.monotonic() >= deadline:
                return
            time.sleep(rng.uniform(*think))
            if mine and rng.random() < 0.25:
                iv, segment, code = mine.pop(rng.randrange(len(mine)))
                r = call("remove code", "POST", f"/p/{project}/interviews/{iv}/code/remove/",
                         data={"code": code, "segment": [segment]}, headers=post_headers)
                if r is not None and r.status_code == 200:
                    with stats.lock:
                        stats.acknowledged[(user_id, segment, code)] = "removed"
                else:
                    mine.append((iv, segment, code))
            else:
                segment, code = rng.choice(world["segments"][interview]), rng.choice(world["codes"])
                r = call("apply code", "POST", f"/p/{project}/interviews/{interview}/code/apply/",
                         data={"code": code, "segment": [segment]}, headers=post_headers)
                if r is not None and r.status_code == 200:
                    with stats.lock:
                        stats.acknowledged[(user_id, segment, code)] = "applied"
                    if (interview, segment, code) not in mine:
                        mine.append((interview, segment, code))
        if rng.random() < 0.3:
            time.sleep(rng.uniform(*think))
            call("search", "GET", f"/p/{project}/search/", params={"q": rng.choice(SEARCHES)})
        if rng.random() < 0.2:
            time.sleep(rng.uniform(*think))
            call("open theme", "GET", f"/p/{project}/themes/t/{rng.choice(world['themes'])}/")


# --- results -------------------------------------------------------------------------------

def consistency(stats: Stats, world: dict) -> dict:
    """The database against the acknowledged operations."""
    from django.db.models import Count

    from coding.models import Coding

    rows = Coding.objects.filter(coder_id__in=world["users"])
    duplicates = rows.values("segment_id", "code_id", "coder_id").annotate(n=Count("id")).filter(n__gt=1).count()
    present = set(rows.values_list("coder_id", "segment_id", "code_id"))
    expected = {key for key, state in stats.acknowledged.items() if state == "applied"}
    removed = {key for key, state in stats.acknowledged.items() if state == "removed"}
    return {
        "acknowledged_present": len(expected & present), "acknowledged_missing": len(expected - present),
        "removed_but_present": len(removed & present), "unacknowledged_rows": len(present - expected),
        "duplicates": duplicates, "rows": len(present),
    }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def report(stats: Stats, check: dict, args: argparse.Namespace, elapsed: float, world: dict, *, alone: Stats,
           cpu: tuple[float, float] | None, server: str) -> str:
    lines = [
        f"{args.coders} coders for {elapsed:.0f} s (think time {args.think_min}–{args.think_max} s), {server}, "
        f"{len(world['interviews'])} interviews, {world['segment_count']} codable segments, 20 codes.",
        "",
        "| request | count | p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|",
    ]
    total = 0
    for kind in ("open interview", "apply code", "remove code", "search", "open theme", "project home"):
        values = stats.latencies.get(kind, [])
        if not values:
            continue
        total += len(values)
        lines.append(f"| {kind} | {len(values)} | {statistics.median(values) * 1000:.0f} | {percentile(values, 95) * 1000:.0f} | "
                     f"{max(values) * 1000:.0f} |")
    applies, alone_applies = stats.latencies.get("apply code", []), alone.latencies.get("apply code", [])
    if applies and alone_applies:
        lines.append(f"| apply code, one coder alone before the load, no think time | {len(alone_applies)} | "
                     f"{statistics.median(alone_applies) * 1000:.0f} | {percentile(alone_applies, 95) * 1000:.0f} | "
                     f"{max(alone_applies) * 1000:.0f} |")
        ratio = percentile(applies, 95) / percentile(alone_applies, 95)
        lines += ["", f"Apply p95 under load ÷ one coder alone: {ratio:.1f} (target ≤ 10)."]
    if cpu is not None:
        web_cpu, db_cpu = cpu
        lines += [
            "",
            f"CPU per request during the load: web (gunicorn) {web_cpu / total * 1000:.1f} ms, PostgreSQL "
            f"{db_cpu / total * 1000:.1f} ms; {(web_cpu + db_cpu) / elapsed:.2f} of the machine's "
            f"{os.cpu_count()} cores busy on average.",
        ]
    lines += [
        f"Requests: {total} ({total / elapsed:.1f}/s); errors: {len(stats.errors)} (one coder alone: {len(alone.errors)}).",
        f"Consistency: {check['acknowledged_present']} acknowledged codings present, {check['acknowledged_missing']} missing, "
        f"{check['removed_but_present']} removed-but-present, {check['unacknowledged_rows']} unacknowledged rows, "
        f"{check['duplicates']} duplicates.",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coders", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--alone-seconds", type=float, default=20, help="one coder alone first: the apply p95 reference")
    parser.add_argument("--interviews", type=int, default=20)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--think-min", type=float, default=0.5)
    parser.add_argument("--think-max", type=float, default=2.0)
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/7"))
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--compose", action="store_true", help="run against docker-compose.yml, scaled out")
    parser.add_argument("--web-replicas", type=int, default=2, help="with --compose: web containers")
    parser.add_argument("--seed-here", action="store_true", help=argparse.SUPPRESS)  # --compose, in a web container
    args = parser.parse_args()
    if args.seed_here:
        return seed_here(args)
    if args.compose:
        return against_compose(args)

    database_url = create_database()
    web = None
    try:
        setup_django(database_url, args.redis_url)
        world = seed(coders=args.coders, interviews=args.interviews, turns=args.turns, rng=random.Random(42))
        web, base = start_gunicorn(database_url, args.redis_url, args.workers, args.threads)
        server = f"gunicorn {args.workers} workers × {args.threads} threads"
        return load(args, world, base, server, lambda: web_and_database_cpu(web))
    finally:
        if web is not None:
            stop(web)
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database()


def seed_here(args: argparse.Namespace) -> int:
    """Seeds the deployment this process runs in (its own settings), and prints the world as JSON."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    world = seed(coders=args.coders, interviews=args.interviews, turns=args.turns, rng=random.Random(42))
    print(json.dumps(world))
    return 0


def against_compose(args: argparse.Namespace) -> int:
    import tempfile

    sys.path.insert(0, str(REPO))
    from tests.compose_stack import Stack

    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(Path(workdir))
        try:
            stack.start(web=args.web_replicas, worker=2)
            seeded = stack.compose("exec", "-T", "web", "python", "bench/load.py", "--seed-here",
                                   "--coders", str(args.coders), "--interviews", str(args.interviews),
                                   "--turns", str(args.turns))
            world = json.loads(seeded.strip().splitlines()[-1])
            # The check reads the stack's PostgreSQL through Django's models, with this checkout's settings.
            setup_django(f"postgres://rta:rta@127.0.0.1:{stack.db_port}/rta", args.redis_url)
            from django.db import connections

            server = (f"docker-compose.yml: nginx, {args.web_replicas} web containers (gunicorn: a process per core, "
                      f"at most 4, × 32 threads), 2 Celery workers, PostgreSQL and Redis in containers")
            try:
                return load(args, world, stack.url, server, lambda: (stack.cpu_seconds("web"), stack.cpu_seconds("db")))
            finally:
                connections.close_all()  # before the stack's database goes
        finally:
            stack.stop()


def load(args: argparse.Namespace, world: dict, base: str, server: str, read_cpu) -> int:
    """One coder alone, then args.coders together until args.seconds pass; then the report and the check."""
    # The reference for the p95 target: one coder alone, no think time, on the same server and data.
    alone = Stats()
    coder(0, world, base, time.monotonic() + args.alone_seconds, alone, (0.0, 0.0))
    stats = Stats()
    stats.acknowledged.update(alone.acknowledged)
    cpu_before = read_cpu()
    started = time.monotonic()
    deadline = started + args.seconds
    threads = [threading.Thread(target=coder, args=(n, world, base, deadline, stats, (args.think_min, args.think_max)), daemon=True)
               for n in range(args.coders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 120)
    elapsed = time.monotonic() - started
    cpu_after = read_cpu()
    cpu = None if None in cpu_before + cpu_after else tuple(
        after - before for after, before in zip(cpu_after, cpu_before, strict=True))
    check = consistency(stats, world)
    text = report(stats, check, args, elapsed, world, alone=alone, cpu=cpu, server=server)
    print(text)
    if stats.errors or alone.errors:
        print("\nFirst errors:\n" + "\n".join((alone.errors + stats.errors)[:20]))
    if args.json:
        args.json.write_text(json.dumps({"latencies": stats.latencies, "errors": stats.errors, "check": check}, default=list))
    consistent = not (check["acknowledged_missing"] or check["removed_but_present"] or check["unacknowledged_rows"] or check["duplicates"])
    return 0 if consistent and not stats.errors and not alone.errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
