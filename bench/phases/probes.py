"""Probe runs: many answers from a slow endpoint finish in a fraction of the sequential time.

The real path (services.run_start → probes.running.probe_pump → answer_run with the official
openai client → PostgreSQL) against the local fake chat-completions server answering each
request after 500 ms. Answers run in threads of this process, as in a threads-pool worker
(PROBES_EAGER_IN_THREAD); the probe's concurrency bounds how many are asked at once.
"""

from __future__ import annotations

import io
import time

from bench.common import Context, Section

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
            "else in this process) caps what the endpoint sees whatever the probe's concurrency. Not measured here: "
            "the coding apply benchmark at the same time, and worker memory at 400 vs 4,000 items."
        ),
    )


def _probe(services, ItemFilters, project, user, model, n_items: int, concurrency: int):  # noqa: N803 - passed-in class
    probe = services.probe_create(project=project, user=user, name=f"Bench {n_items} × {concurrency} {time.time_ns()}")
    sheet = "text,label\n" + "".join(f"Review number {i} was rude and slow.,{'woman' if i % 2 else 'man'}\n"
                                     for i in range(n_items))
    services.items_import(probe=probe, spec=services.ItemImport("bench.csv", io.BytesIO(sheet.encode()), "text", ["label"],
                                                                ItemFilters()))
    services.probe_configure(probe=probe, participants=[model], repetitions=1, concurrency=concurrency)
    for name in ("A", "B"):
        services.condition_save(probe=probe, condition=None, user=user, name=name, template="Review: {text}",
                                system_prompt=f"Condition {name}.", output_format="json_schema", json_schema={},
                                label_key="label", categories_key="categories", rationale_key="rationale",
                                labels=["woman", "man"], categories=[])
    return probe
