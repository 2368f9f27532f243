"""Coding hot path: apply a code (1 and 8 clients), open the heaviest interview (and a 10× one), worker memory.

Owned by the coding issue (coding/services.py coding_apply, coding/render.py). Served by gunicorn
with the Dockerfile's own options (bench.common.production_gunicorn_options; DEBUG off) on 127.0.0.1 against the
bench's PostgreSQL database, driven with `requests` like the peer drivers, on the same corpus and the
same workload (benchlib.tags_for), and with wrk.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import REPO, Context, Section, corpus_module, database_url, production_gunicorn_options

TITLE = "Coding: apply a code, open an interview"
NEEDS_DJANGO = True
PASSWORD = "bench-password-not-secret"


def _pct(values: list[float], p: float) -> float:
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tags_for(i: int, ids: list[int]) -> list[int]:
    # Same as shared/peer-bench/benchlib.tags_for: one code, every 5th item gets a second.
    t = [ids[i % len(ids)]]
    if i % 5 == 0:
        t.append(ids[(i + 3) % len(ids)])
    return t


def _setup(corpus, quick: bool):
    from django.contrib.auth import get_user_model

    from coding.services import code_create
    from interviews.models import Interview
    from interviews.services_import import ImportOptions, import_paths
    from projects.models import Membership, Project, Role

    user = get_user_model().objects.create_user("bencher", password=PASSWORD, first_name="Ben", last_name="Cher")
    project = Project.objects.create(name="bench coding", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    docs = corpus.make_corpus()
    big = {"name": "Big interview", "turns": [t for d in docs[:10] for t in d["turns"]]}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for d in [*docs, big]:
            p = Path(tmp) / f"{d['name']}.txt"
            p.write_text(corpus.doc_to_text(d))
            paths.append(str(p))
        import_paths(project=project, user=user, paths=paths,
                     options=ImportOptions(participant="new:Participant", allow_duplicates=True))
    codes = [code_create(project=project, actor=user, name=f"code-{i:02d}", definition=f"Code number {i}").pk for i in range(1, 11)]
    interviews = {i.title: i for i in Interview.objects.filter(project=project)}
    return user, project, codes, interviews, docs


def _start_gunicorn(port: int, app: str = "config.wsgi:application") -> subprocess.Popen:
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings_test", "DEBUG": "false", "LOG_LEVEL": "ERROR",
    })
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), app, "-b", f"127.0.0.1:{port}", *production_gunicorn_options(),
         "--log-level", "warning"],
        cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    import requests

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code < 500:
                return proc
        except requests.RequestException:
            time.sleep(0.3)
    _stop(proc)
    raise RuntimeError("gunicorn did not start: " + (proc.stderr.read() or b"").decode()[-2000:])


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _server_cpu_s(master: int) -> dict[str, float]:
    """CPU seconds (user + system) so far of the gunicorn tree, the PostgreSQL processes and Redis on this machine.

    The peers' drivers count their web process tree, which holds their database (SQLite) too; ours runs in
    PostgreSQL and Redis beside it, so those are counted as well (every process of theirs: its backends,
    the WAL writer, the checkpointer).
    """
    import psutil

    def total(processes) -> float:
        seconds = 0.0
        for process in processes:
            try:
                times = process.cpu_times()
                seconds += times.user + times.system
            except psutil.Error:
                pass
        return seconds

    web = psutil.Process(master)
    others = list(psutil.process_iter(["name"]))
    return {"web": total([web, *web.children(recursive=True)]),
            "postgres": total(p for p in others if (p.info["name"] or "").startswith("postgres")),
            "redis": total(p for p in others if (p.info["name"] or "").startswith("redis-server"))}


def _worker_memory_mb(master: int) -> tuple[float, float]:
    """(max RSS now, max peak RSS) over the gunicorn workers, in MB."""
    import psutil

    rss, hwm = 0.0, 0.0
    for child in psutil.Process(master).children():
        rss = max(rss, child.memory_info().rss / 1e6)
        try:
            for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = max(hwm, int(line.split()[1]) * 1024 / 1e6)
        except OSError:
            pass
    return rss, hwm


IN_TURN_ROUNDS, IN_TURN_ROUND = 8, 50


def in_turn_latencies(post, names: list[str], rounds: int, size: int) -> dict[str, list[float]]:
    """`post(name, j)`'s seconds for pairs j = 0 … rounds × size - 1 and every app: round by round, each app posting
    the round's `size` pairs in turn."""
    lat: dict[str, list[float]] = {name: [] for name in names}
    for start in range(0, rounds * size, size):
        for name in names:
            lat[name] += [post(name, j) for j in range(start, start + size)]
    return lat


def _in_turn(session, apply_url, items: list[tuple[str, int]], codes: list[int]) -> dict[str, dict]:
    """Our apply and the two floor apps (bench/floor_app.py) under the same gunicorn setup, in turn: rounds of
    IN_TURN_ROUND requests each, so a slow minute of this machine lands on all three alike. Every request
    codes a pair nobody coded yet (`items`: IN_TURN_ROUNDS × IN_TURN_ROUND of them). p50 / p95 ms of each."""
    from django.db import connection

    from bench.floor_app import CREATE_TABLE

    with connection.cursor() as cursor:
        cursor.execute(CREATE_TABLE)
    floors, urls = [], {"apply": apply_url}
    try:
        for name, app in (("floor", "bench.floor_app:application"), ("write", "bench.floor_app:durable_write_application")):
            port = _free_port()
            floors.append(_start_gunicorn(port, app=app))
            urls[name] = f"http://127.0.0.1:{port}/p/x/interviews/{{}}/code/apply/".format
        clients = {name: _clone(session) for name in urls}

        def post(name: str, j: int) -> float:
            iv, seg = items[j]
            t0 = time.perf_counter()
            r = clients[name].post(urls[name](iv), data={"code": codes[j % len(codes)], "segments": seg})
            if r.status_code != 200:
                raise RuntimeError(f"{name} answered {r.status_code}: {r.text[:200]}")
            return time.perf_counter() - t0

        for j in range(20):  # the floors' fresh workers (imports, connections); ours is warm
            post("floor", j)
            post("write", j)
        lat = in_turn_latencies(post, list(urls), IN_TURN_ROUNDS, IN_TURN_ROUND)
        return {name: {"p50": _pct(v, 50) * 1000, "p95": _pct(v, 95) * 1000} for name, v in lat.items()}
    finally:
        for proc in floors:
            _stop(proc)


def _login(base: str, username: str):
    import requests

    s = requests.Session()
    s.get(f"{base}/accounts/login/")
    r = s.post(f"{base}/accounts/login/", data={"username": username, "password": PASSWORD,
                                                "csrfmiddlewaretoken": s.cookies["csrftoken"]}, allow_redirects=False)
    if r.status_code != 302:
        raise RuntimeError(f"bench login failed: {r.status_code}")
    s.headers["X-CSRFToken"] = s.cookies["csrftoken"]
    s.headers["HX-Request"] = "true"
    return s


def _clone(s):
    import requests

    c = requests.Session()
    c.cookies.update(s.cookies)
    c.headers.update(s.headers)
    return c


_WRK_SCRIPT = r"""
local items = {%(items)s}
local n = 0
local headers = {["Content-Type"] = "application/x-www-form-urlencoded", ["Cookie"] = "%(cookie)s",
                 ["X-CSRFToken"] = "%(csrf)s", ["HX-Request"] = "true"}
request = function()
  n = n + 1
  local item = items[(n - 1) %% #items + 1]
  return wrk.format("POST", item[1], headers, item[2])
end
done = function(summary, latency, requests)
  io.write(string.format("WRK %%d %%f %%d %%d %%f %%f %%f\n", summary.requests, summary.duration / 1e6,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000))
end
"""


def _wrk_apply(base: str, session, project_uuid: str, items: list[tuple[str, int]], codes: list[int],
               seconds: int) -> dict | None:
    """8 connections from wrk (a C client: the load costs the 2 cores almost nothing), every request a
    fresh (segment, code) pair. None when wrk is not installed (scripts/ensure-wrk installs it)."""
    if not shutil.which("wrk"):
        return None
    # At most 12,000 pairs: a Lua chunk holds at most 65,536 constants. Past them the list repeats
    # (a duplicate is answered like a new coding, by the same statement).
    pairs = [(f"/p/{project_uuid}/interviews/{iv}/code/apply/", f"code={code}&segments={seg}")
             for code in codes for iv, seg in items][:12000]
    lua = _WRK_SCRIPT % {
        "items": ",".join(f'{{"{path}","{body}"}}' for path, body in pairs),
        "cookie": "; ".join(f"{k}={v}" for k, v in session.cookies.items()),
        "csrf": session.cookies["csrftoken"],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua)
    try:
        out = subprocess.run(["wrk", "-t2", "-c8", f"-d{seconds}s", "--timeout", "5s", "-s", script.name, base],
                             capture_output=True, text=True, timeout=seconds + 60, check=True)
    finally:
        os.unlink(script.name)
    summary = [line[4:] for line in out.stdout.splitlines() if line.startswith("WRK ")]
    if not summary:
        raise RuntimeError(f"wrk printed no summary: {out.stdout[-1000:]} {out.stderr[-1000:]}")
    requests_done, seconds_taken, non2xx, errors, p50, p95, p99 = (float(v) for v in summary[0].split())
    return {"rate": requests_done / seconds_taken, "non2xx": int(non2xx), "errors": int(errors),
            "p50": p50, "p95": p95, "p99": p99}


def run(ctx: Context) -> Section:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from coding.models import Code, Coding
    from coding.services import code_create
    from interviews.models import Segment

    corpus = corpus_module()
    user, project, codes, interviews, docs = _setup(corpus, ctx.quick)
    big = interviews.pop("Big interview")
    order = [interviews[d["name"]] for d in docs]
    # Every segment of the 20 interviews, in reading order: the peers highlight every sentence in order too.
    work: list[tuple[str, int]] = []
    for iv in order:
        for seg_id in Segment.objects.filter(interview=iv).order_by("position").values_list("id", flat=True):
            work.append((str(iv.uuid), seg_id))
    n_seq = 200 if ctx.quick else 2000
    n_conc = 200 if ctx.quick else 2000
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _start_gunicorn(port)
    rows: list[list] = []
    try:
        session = _login(base, user.username)
        # Interviewer turns are codable too in this session, like the peers' plain documents.
        session.post(f"{base}/p/{project.uuid}/interviews/{order[0].uuid}/code/speakers/", data={"any_speaker": "1"},
                     allow_redirects=False)
        rss_idle, _ = _worker_memory_mb(proc.pid)

        def apply(s, i: int, item: tuple[str, int]) -> list[float]:
            iv, seg = item
            out = []
            for code in _tags_for(i, codes):
                t0 = time.perf_counter()
                r = s.post(f"{base}/p/{project.uuid}/interviews/{iv}/code/apply/", data={"code": code, "segments": seg})
                out.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise RuntimeError(f"apply answered {r.status_code}: {r.text[:200]}")
            return out

        for i in range(20):  # warm the workers (imports, connections)
            apply(session, i, work[i])
        Coding.objects.filter(interview__project=project).delete()

        lat: list[float] = []
        cpu_before = _server_cpu_s(proc.pid)
        t_all = time.perf_counter()
        for i in range(n_seq):
            lat += apply(session, i, work[i])
        wall = time.perf_counter() - t_all
        cpu_after = _server_cpu_s(proc.pid)
        cpu_ms = {k: (cpu_after[k] - cpu_before[k]) * 1000 / len(lat) for k in cpu_before}
        seq = {"p50": _pct(lat, 50) * 1000, "p95": _pct(lat, 95) * 1000, "p99": _pct(lat, 99) * 1000, "rate": len(lat) / wall}

        items = iter(enumerate(work[n_seq:n_seq + n_conc], start=n_seq))
        lock = threading.Lock()
        lat_c: list[float] = []
        errors: list[str] = []

        def worker() -> None:
            s = _clone(session)
            mine: list[float] = []
            while True:
                with lock:
                    nxt = next(items, None)
                if nxt is None:
                    break
                try:
                    mine += apply(s, *nxt)
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    errors.append(repr(exc)[:200])
            with lock:
                lat_c.extend(mine)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        t_all = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall_c = time.perf_counter() - t_all
        conc = {"p50": _pct(lat_c, 50) * 1000, "p95": _pct(lat_c, 95) * 1000, "rate": len(lat_c) / wall_c}
        rss_load, hwm_load = _worker_memory_mb(proc.pid)
        # Pairs nobody coded yet, each used once: in-process applies, the apply in turn with the floors, wrk.
        fresh = work[n_seq + n_conc:]
        in_turn_end = 400 + IN_TURN_ROUNDS * IN_TURN_ROUND
        for_in_process, for_in_turn, for_wrk = fresh[:100 if ctx.quick else 400], fresh[400:in_turn_end], fresh[in_turn_end:]
        in_turn = _in_turn(session, f"{base}/p/{project.uuid}/interviews/{{}}/code/apply/".format, for_in_turn, codes)

        # Database queries of one apply, in-process, once the session and user are cached in Redis.
        client = Client()
        client.force_login(user)
        prefs = client.session
        prefs[f"coding:any_speaker:{project.uuid}"] = True  # like the HTTP session: every segment is codable
        prefs.save()
        iv0, seg0 = work[-1]
        client.post(f"/p/{project.uuid}/interviews/{iv0}/code/apply/", {"code": codes[1], "segments": seg0})
        with CaptureQueriesContext(connection) as queries:
            client.post(f"/p/{project.uuid}/interviews/{iv0}/code/apply/", {"code": codes[0], "segments": seg0})
        round_trips = len(queries.captured_queries)
        # The same request in-process (no HTTP, no client): what the server itself spends; min hints at an idle box.
        inproc = []
        for i, (iv, seg) in enumerate(for_in_process):
            t0 = time.perf_counter()
            r = client.post(f"/p/{project.uuid}/interviews/{iv}/code/apply/", {"code": codes[i % 10], "segments": seg})
            inproc.append(time.perf_counter() - t0)
            if r.status_code != 200:
                raise RuntimeError(f"in-process apply answered {r.status_code}")

        # The heaviest interview (most codings) and a 10× interview coded at the same density.
        counts = {iv.pk: Coding.objects.filter(interview=iv).count() for iv in order}
        heavy = max(order, key=lambda iv: counts[iv.pk])
        big_segments = list(Segment.objects.filter(interview=big).order_by("position").values_list("id", flat=True))
        Coding.objects.bulk_create([
            Coding(segment_id=seg, code_id=code, coder=user, interview=big)
            for i, seg in enumerate(big_segments)
            for code in _tags_for(i, codes)
        ], batch_size=5000)
        # Planner statistics for the codings just added, as the exports and scale phases do after building: one
        # full run timed the 10× page at 2.5 s (not reproduced alone, 41 ms) while autovacuum had not yet analysed.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE coding_coding")

        def server_get(url: str, n: int) -> tuple[float, int, int]:
            """Median ms in-process (all middleware, DB, render; no HTTP), queries and bytes of one page."""
            for _ in range(3):  # warm
                client.get(url)
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = client.get(url)
                times.append(time.perf_counter() - t0)
            if r.status_code != 200:
                raise RuntimeError(f"{url} answered {r.status_code}")
            with CaptureQueriesContext(connection) as q:
                client.get(url)
            return statistics.median(times) * 1000, len(q.captured_queries), len(r.content)

        def open_page(iv, n: int) -> tuple[float, float, int, int]:
            """The coding page: server ms, HTTP ms (median over loopback from gunicorn), queries, bytes."""
            url = reverse("coding:workspace", args=[project.uuid, iv.uuid])
            server_ms, queries_n, size = server_get(url, n)
            for _ in range(3):  # warm
                session.get(base + url)
            http = []
            for _ in range(n):
                t0 = time.perf_counter()
                session.get(base + url, headers={"HX-Request": ""})
                http.append(time.perf_counter() - t0)
            return server_ms, statistics.median(http) * 1000, queries_n, size

        def render_only(iv) -> float:
            """The transcript's HTML alone (the part a template loop made dominant), median ms."""
            from coding import queries
            from coding.render import ChipRenderer, render_transcript
            from interviews.models import Turn

            codes_l = queries.workspace_codes(project)
            coders = queries.coders_of(project)
            turns = list(Turn.objects.filter(interview=iv).order_by("position").values_list("id", "position", "speaker"))
            segs = queries.interview_segments(iv)
            cods = queries.interview_codings(iv, {c["id"]: i for i, c in enumerate(codes_l)})
            times = []
            for _ in range(15):
                t0 = time.perf_counter()
                render_transcript(turns=turns, segments=segs, codings=cods, participant_label="Participant",
                                  renderer=ChipRenderer(queries.code_infos(codes_l), coders, user.pk),
                                  code_any_speaker=True, notes_html={}, can_write=True)
                times.append(time.perf_counter() - t0)
            return statistics.median(times) * 1000

        reps = 5 if ctx.quick else 20
        h_render, b_render = render_only(heavy), render_only(big)
        h_server, h_http, h_queries, h_bytes = open_page(heavy, reps)
        b_server, b_http, b_queries, b_bytes = open_page(big, max(3, reps // 2))
        # Research codebooks often hold a hundred codes; the corpus has ten. The page lists them all.
        for i in range(len(codes) + 1, 101):
            code_create(project=project, actor=user, name=f"more-{i:03d}", definition=f"Another code, number {i}")
        h100_server, h100_queries, h100_bytes = server_get(
            reverse("coding:workspace", args=[project.uuid, heavy.uuid]), reps)
        codebook_ms, codebook_queries, codebook_bytes = server_get(reverse("coding:codebook", args=[project.uuid]), reps)
        excerpts_ms, excerpts_queries, excerpts_bytes = server_get(
            reverse("coding:excerpts", args=[project.uuid, Code.objects.get(pk=codes[0]).uuid]), reps)
        rss_end, hwm_end = _worker_memory_mb(proc.pid)
        # Last, so its codings do not change the pages above: segments nobody coded yet, any code.
        wrk = _wrk_apply(base, session, str(project.uuid), for_wrk, codes, 5 if ctx.quick else 15)
        _, hwm_wrk = _worker_memory_mb(proc.pid)
        heavy_segments = Segment.objects.filter(interview=heavy).count()
        big_codings = Coding.objects.filter(interview=big).count()
    finally:
        _stop(proc)

    ctx.figures.update({"apply_p50_ms": seq["p50"], "apply_p95_ms": seq["p95"], "apply_in_turn_p50_ms": in_turn["apply"]["p50"],
                        "floor_p50_ms": in_turn["floor"]["p50"],
                        "apply8_rate": conc["rate"], "apply8_p95_ms": conc["p95"]})
    tg = ctx.peer_results.get("taguette", {})
    dc = ctx.peer_results.get("doccano", {})

    def peer(data: dict, *path: str):
        v = data
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        return v

    def _cpu_per_highlight(data: dict) -> str | None:
        seconds, n = peer(data, "b_highlight_seq", "server_cpu_s"), peer(data, "b_highlight_seq", "n")
        return f"{1000 * seconds / n:.2f}" if seconds and n else None

    def per_worker(data: dict) -> str | None:
        # doccano: 5 gunicorn workers summed; Taguette: one process.
        total = peer(data, "rss_peak_web_hwm_sum_mb")
        return f"{total / 5:.0f} per worker ({total:.0f} all 5)" if total else None

    rows += [
        ["apply a code, 1 client: p50 / p95 ms (target ≤ 4 / 8)", f"{seq['p50']:.2f} / {seq['p95']:.2f}",
         f"{peer(tg, 'b_highlight_seq', 'p50_ms')} / {peer(tg, 'b_highlight_seq', 'p95_ms')}" if tg else "13.1 / 16.8 (ref)",
         f"{peer(dc, 'b_highlight_seq', 'p50_ms')} / {peer(dc, 'b_highlight_seq', 'p95_ms')}" if dc else "9.2 / 13.3 (ref)"],
        [f"… in turn with the floors ({IN_TURN_ROUNDS} rounds of {IN_TURN_ROUND}; bench/floor_app.py, same client and gunicorn "
         "setup), p50 / p95 ms: our apply · the floor (reads the form) · the floor with one durable INSERT",
         " · ".join(f"{in_turn[name]['p50']:.2f} / {in_turn[name]['p95']:.2f}" for name in ("apply", "floor", "write")),
         None, None],
        ["apply a code, 1 client: requests/s", round(seq["rate"]), peer(tg, "b_highlight_seq", "throughput_per_s") or "75 (ref)",
         peer(dc, "b_highlight_seq", "throughput_per_s") or "103 (ref)"],
        ["… server CPU ms per apply, 1 client: web / PostgreSQL / Redis = all (peers: their web process tree, "
         "database included)", f"{cpu_ms['web']:.2f} / {cpu_ms['postgres']:.2f} / {cpu_ms['redis']:.2f} = "
                                f"{sum(cpu_ms.values()):.2f}",
         _cpu_per_highlight(tg), _cpu_per_highlight(dc)],
        ["8 clients: codings/s (target ≥ 400) / p95 ms (target ≤ 40)", f"{conc['rate']:.0f} / {conc['p95']:.1f}",
         f"{peer(tg, 'c_highlight_concurrent', 'throughput_per_s')} / {peer(tg, 'c_highlight_concurrent', 'p95_ms')}" if tg else "92 / 110 (ref)",
         f"{peer(dc, 'c_highlight_concurrent', 'throughput_per_s')} / {peer(dc, 'c_highlight_concurrent', 'p95_ms')}" if dc else "165 / 92 (ref)"],
        ["8 clients: errors", len(errors), None, None],
        ["8 connections from wrk (C client, as in the prototype note): codings/s / p50 / p95 ms",
         f"{wrk['rate']:.0f} / {wrk['p50']:.1f} / {wrk['p95']:.1f}" if wrk else "wrk not installed", None, None],
        ["… wrk: errors / non-2xx answers", f"{wrk['errors']} / {wrk['non2xx']}" if wrk else "–", None, None],
        ["apply in-process (Django test client, no HTTP): p50 / min ms", f"{_pct(inproc, 50) * 1000:.2f} / {min(inproc) * 1000:.2f}",
         None, None],
        ["database queries per apply (session and user come from Redis)", round_trips, None, None],
        [f"open heaviest interview ({heavy_segments} segments, {counts[heavy.pk]} codings): server ms (target ≤ 30)",
         f"{h_server:.1f}", None, None],
        ["… over HTTP from gunicorn: HTML page p50 ms (peers: document + its highlights, p50 ms)", f"{h_http:.1f}",
         peer(tg, "d_heaviest_doc", "info+contents", "p50_ms") or "102 (ref)",
         peer(dc, "d_heaviest_doc", "example+spans", "p50_ms") or "26 (ref, JSON only)"],
        ["… queries / KB of HTML", f"{h_queries} / {h_bytes // 1024}", None, None],
        ["… of which the transcript HTML (Python fast path), ms", f"{h_render:.2f}", None, None],
        ["… the same page with a 100-code codebook: server ms / queries / KB of HTML",
         f"{h100_server:.1f} / {h100_queries} / {h100_bytes // 1024}", None, None],
        ["codebook page, 100 codes with their uses per participant: server ms / queries / KB",
         f"{codebook_ms:.1f} / {codebook_queries} / {codebook_bytes // 1024}", None, None],
        ["a code's excerpts page (every excerpt of code-01 across the project): server ms / queries / KB",
         f"{excerpts_ms:.1f} / {excerpts_queries} / {excerpts_bytes // 1024}", None, None],
        [f"open 10× interview ({len(big_segments)} segments, {big_codings} codings): server ms (target ≤ 150)",
         f"{b_server:.1f}", None, None],
        ["… over HTTP p50 ms (peers: 10× document + highlights)", f"{b_http:.1f}",
         peer(tg, "d_heaviest_doc", "bigdoc_info+contents", "p50_ms"), peer(dc, "d_heaviest_doc", "bigdoc_example+spans", "p50_ms")],
        ["… queries / KB of HTML", f"{b_queries} / {b_bytes // 1024}", None, None],
        ["… of which the transcript HTML, ms", f"{b_render:.2f}", None, None],
        ["load average at the end of the phase (2 cores)", " / ".join(f"{x:.1f}" for x in os.getloadavg()), None, None],
        ["web worker RSS MB: idle / after load / peak (target ≤ 150)", f"{rss_idle:.0f} / {rss_load:.0f} / {max(hwm_load, hwm_end, hwm_wrk):.0f}",
         f"{peer(tg, 'rss_peak_vmhwm_mb')} (one process)" if tg else "105 (ref, whole server)", per_worker(dc) or "789 (ref, 5 workers)"],
    ]
    return Section(
        title=TITLE, columns=["metric", "RTA Studio", "Taguette", "doccano"], rows=rows,
        notes=(f"gunicorn `{' '.join(production_gunicorn_options())}` (the Dockerfile's options), DEBUG off, PostgreSQL on 127.0.0.1, sessions and users read from Redis as in production (projects/auth_cache.py); client `requests` "
               f"with keep-alive like the peer drivers. Workload: every segment of the 20 corpus interviews in reading "
               f"order, {n_seq} sequentially then {n_conc} from 8 threads; item i gets code i mod 10 and every 5th item a "
               "second code (benchlib.tags_for). Our apply takes one code per request, so an item with two codes is two "
               "requests, each counted (the peers send one request with two tags). Server time is the median of Django's "
               "test client in-process (all middleware, DB, render), HTTP time the median over loopback. The 10× interview "
               "is ten corpus interviews concatenated, every segment coded like the workload. Peer columns quote this "
               "run's JSON when PEERS=1, else the reference figures from shared/peer-bench/README.md (marked ref)."),
    )
