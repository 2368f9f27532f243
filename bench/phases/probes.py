"""Probe runs: many answers from a slow endpoint finish in a fraction of the sequential time.

The real path (services.run_start → probes.running.probe_pump → answer_run with the official
openai client → PostgreSQL) against the local fake chat-completions server answering each
request after 500 ms. Answers run in threads of this process, as in a threads-pool worker
(PROBES_EAGER_IN_THREAD); the probe's concurrency bounds how many are asked at once.

Then the production way: a real Celery worker (threads pool, the endpoint queue) runs a probe while
researchers code through gunicorn, to see that applying a code stays as fast as when the worker is idle,
and runs 400 and 4,000 items, each in a fresh worker, to see its memory stay flat in the number of items.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import Context, Section, corpus_module, database_url

TITLE = "Probes: a run against a 500 ms endpoint"
NEEDS_DJANGO = True
PEERS_ONLY = False

LATENCY = 0.5
CONCURRENCY = 16
# The endpoint's "requests at once" (conduct.throttle): as many as the probe asks at once, then a quarter.
ENDPOINT_LIMITS = (16, 4)


def run(ctx: Context) -> Section:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from conduct import services as conduct_services
    from conduct.models import LiveEndpoint
    from conduct.testing.fake_openai import FakeOpenAIServer
    from config.celery import app
    from probes import services
    from probes.items import ItemFilters
    from probes.models import Answer, Probe
    from projects.models import Membership, Project, Role

    items = 50 if ctx.quick else 400
    settings.OPENAI_API_KEY = "sk-bench"
    settings.PROBES_EAGER_IN_THREAD = True
    app.conf.task_always_eager = True
    user = get_user_model().objects.create_user(username=f"bench-probes-{time.time_ns()}", password="x")
    project = Project.objects.create(name="Bench probes", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    server = FakeOpenAIServer().start()
    rows: list[list] = []
    try:
        server.script("classifier", answer='{"label": "woman", "categories": [], "rationale": "Bench."}', first_delay=LATENCY)
        model = conduct_services.live_participant_save(
            project=project, participant=None, label="Classifier", provider="bench", model_id="classifier",
            base_url=server.base_url, temperature=None, top_p=None, seed=None, max_tokens=None, timeout_seconds=30,
            api_key=None,
        )
        runs = [(1, 10, ENDPOINT_LIMITS[0])] + [(CONCURRENCY, items, limit) for limit in ENDPOINT_LIMITS]
        for concurrency, n_items, limit in runs:
            LiveEndpoint.objects.filter(participant=model).update(max_in_flight=limit)
            server.reset_in_flight()
            probe = _probe(services, ItemFilters, project, user, model, n_items, concurrency)
            answers = Answer.objects.filter(item__probe=probe)
            t0 = time.perf_counter()
            services.run_start(probe=probe)
            while Probe.objects.get(pk=probe.pk).run_state != Probe.RunState.FINISHED:
                time.sleep(0.05)
            seconds = time.perf_counter() - t0
            count = answers.count()
            assert answers.filter(status="done").count() == count, "every answer should parse"
            sequential = count * LATENCY
            run_name = f"{count} answers, {concurrency} at once, endpoint limit {limit}"
            rows.append([f"{run_name}: wall time s", round(seconds, 1)])
            rows.append([f"{run_name}: share of the sequential {sequential:.0f} s", f"1/{sequential / seconds:.1f}"])
            rows.append([f"{run_name}: answers per s", round(count / seconds, 1)])
            rows.append([f"{run_name}: most requests the endpoint saw at once", server.max_in_flight])
        rows += _in_a_worker(ctx, services, ItemFilters, project, user, model, server)
    finally:
        server.stop()
    return Section(
        title=TITLE,
        columns=["metric", "RTA Studio"],
        rows=rows,
        notes=(
            f"2 conditions × {items} items × 1 model, each request answered after {LATENCY * 1000:.0f} ms by the local "
            "fake endpoint; every answer is validated against the condition's JSON schema. "
            "'Sequential' is answers × 500 ms, the time one request at a time needs at the least; the first row "
            "(one at a time, 10 items) shows the per-answer overhead on top of it (≈ 0.2 s on this shared machine: a "
            "thread and a database connection per answer, about ten queries, the fake server in the same process). "
            "Target: ≤ 1/8. The endpoint's limit (“requests at once”, counted in Redis when REDIS_URL is set, "
            "else in this process) caps what the endpoint sees whatever the probe's concurrency. "
            "The last rows come from a real Celery worker (threads pool, 16 threads, on the endpoint queue as "
            "compose's worker-live): applying a code through gunicorn (4 gthread workers) by one client while the "
            "worker runs a 2 × 400-item probe against the 500 ms endpoint, against the same client with the worker "
            "idle (target: within 1.5×); and the worker's peak RSS (VmHWM, a fresh worker per size) running 400 and "
            "4,000 items of one condition against a 10 ms endpoint (target: flat)."
        ),
    )


def _probe(services, ItemFilters, project, user, model, n_items: int, concurrency: int,  # noqa: N803 - passed-in class
           conditions: tuple[str, ...] = ("A", "B")):
    probe = services.probe_create(project=project, user=user, name=f"Bench {n_items} × {concurrency} {time.time_ns()}")
    sheet = "text,label\n" + "".join(f"Review number {i} was rude and slow.,{'woman' if i % 2 else 'man'}\n"
                                     for i in range(n_items))
    services.items_import(probe=probe, spec=services.ItemImport("bench.csv", io.BytesIO(sheet.encode()), "text", ["label"],
                                                                ItemFilters()))
    services.probe_configure(probe=probe, participants=[model], repetitions=1, concurrency=concurrency)
    for name in conditions:
        services.condition_save(probe=probe, condition=None, user=user, name=name, template="Review: {text}",
                                system_prompt=f"Condition {name}.", output_format="json_schema", json_schema={},
                                label_key="label", categories_key="categories", rationale_key="rationale",
                                labels=["woman", "man"], categories=[])
    return probe


APPLIES = 300
MEMORY_SIZES = (400, 4000)


def _in_a_worker(ctx: Context, services, ItemFilters, project, user, model, server) -> list[list]:  # noqa: N803
    """Apply latency with the worker idle and busy with a probe; the worker's peak memory at two probe sizes."""
    from django.conf import settings

    from bench.phases import coding
    from bench.phases.reading import _store
    from coding.services import code_create
    from config.celery import app
    from interviews.models import Participant, Segment
    from probes.models import Probe

    queue = f"bench-endpoint-{os.getpid()}"
    os.environ["CONDUCT_QUEUE"] = queue  # the sender's side: answers go where the worker listens
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    user.set_password(coding.PASSWORD)
    user.save(update_fields=["password"])
    doc = corpus_module().make_corpus(n_docs=1)[0]
    interview = _store(project, Participant.objects.create(project=project, label="Coded model"), doc["name"], doc["turns"])
    segments = list(Segment.objects.filter(interview=interview, speaker="participant").order_by("position").values_list("id", flat=True))
    codes = [code_create(project=project, actor=user, name=f"bench code {i}").pk for i in range(10)]
    port = coding._free_port()  # noqa: SLF001 - the coding phase's gunicorn, as it measures apply
    web = coding._start_gunicorn(port)  # noqa: SLF001
    rows: list[list] = []
    try:
        session = coding._login(f"http://127.0.0.1:{port}", user.username)  # noqa: SLF001
        url = f"http://127.0.0.1:{port}/p/{project.uuid}/interviews/{interview.uuid}/code/apply/"
        n_applies = 60 if ctx.quick else APPLIES
        work = iter(range(10**9))

        def applies(count: int, until=None) -> list[float]:
            out = []
            while len(out) < count and (until is None or not until()):
                i = next(work)
                started = time.perf_counter()
                answer = session.post(url, data={"code": codes[i % len(codes)], "segments": segments[i % len(segments)]})
                out.append((time.perf_counter() - started) * 1000)
                if answer.status_code != 200:
                    raise RuntimeError(f"apply answered {answer.status_code}: {answer.text[:200]}")
            return out

        applies(20)  # warm the web workers
        worker = _start_worker(queue, settings)
        try:
            idle = applies(n_applies)
            probe = _probe(services, ItemFilters, project, user, model, 50 if ctx.quick else 400, CONCURRENCY)
            services.run_start(probe=probe)
            finished = lambda: Probe.objects.get(pk=probe.pk).run_state == Probe.RunState.FINISHED  # noqa: E731
            busy = applies(n_applies, until=finished)
            while not finished():
                time.sleep(0.1)
        finally:
            coding._stop(worker)  # noqa: SLF001
        for label, values in (("worker idle", idle), ("worker running the probe", busy)):
            rows.append([f"apply a code, 1 client, {label}: p50 / p95 ms ({len(values)} applies)",
                         f"{statistics.median(values):.1f} / {_p95(values):.1f}"])
        rows.append(["apply p95 while the probe runs / idle (target ≤ 1.5)", round(_p95(busy) / _p95(idle), 2)])
        server.script("classifier", answer='{"label": "woman", "categories": [], "rationale": "Bench."}', first_delay=0.01)
        for n_items in (40, 400) if ctx.quick else MEMORY_SIZES:
            worker = _start_worker(queue, settings)
            try:
                probe = _probe(services, ItemFilters, project, user, model, n_items, CONCURRENCY, conditions=("A",))
                started = time.perf_counter()
                services.run_start(probe=probe)
                while Probe.objects.get(pk=probe.pk).run_state != Probe.RunState.FINISHED:
                    assert worker.poll() is None, "the worker died"
                    time.sleep(0.2)
                seconds = time.perf_counter() - started
                peak = _status_mb(worker.pid, "VmHWM")
            finally:
                coding._stop(worker)  # noqa: SLF001
            rows.append([f"worker peak RSS MB, {n_items:,} items ({seconds:.0f} s)", round(peak)])
    finally:
        coding._stop(web)  # noqa: SLF001
        app.conf.task_always_eager = eager
        os.environ.pop("CONDUCT_QUEUE", None)
    return rows


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _start_worker(queue: str, settings) -> subprocess.Popen:
    """A Celery worker as compose's worker-live runs it (threads pool), on the bench database and its own queue."""
    from bench.phases import coding
    from config.celery import app

    env = dict(os.environ, DATABASE_URL=database_url(),
               DJANGO_SETTINGS_MODULE="config.settings_test", CELERY_TASK_ALWAYS_EAGER="false", CONDUCT_QUEUE=queue,
               OPENAI_API_KEY=settings.OPENAI_API_KEY, LOG_LEVEL="ERROR")
    name = f"{queue}@bench"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=threads", f"--concurrency={CONCURRENCY}", "-Q", queue,
         "-n", name, "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=Path(__file__).resolve().parents[2], env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not app.control.ping(destination=[name], timeout=0.5):
        if proc.poll() is not None or time.monotonic() > deadline:
            coding._stop(proc)  # noqa: SLF001 - the same TERM, then KILL
            raise RuntimeError("the bench's Celery worker did not start")
    return proc


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")
