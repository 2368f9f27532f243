"""The embedded demo: a small probe answered by the local fake endpoint's demo classifier, run in-process."""

from __future__ import annotations

from collections import Counter

from django.core.management import call_command

from conduct.testing.fake_openai import _demo_server
from probes import services
from probes.models import Answer, Probe


def test_the_demo_probe_runs_against_the_local_fake_endpoint(demo_project, settings, django_capture_on_commit_callbacks):
    settings.PROBES_EAGER_IN_THREAD = False
    server = _demo_server(0).start()
    try:
        call_command("probe_demo", base_url=server.base_url)
        call_command("probe_demo", base_url=server.base_url)  # twice: nothing added the second time
        probe = Probe.objects.get(project=demo_project)
        with django_capture_on_commit_callbacks(execute=True):
            services.run_start(probe=probe)
    finally:
        server.stop()
    answers = Answer.objects.filter(item__probe=probe)
    assert Counter(answers.values_list("status", flat=True)) == {"done": 8}
    assert set(answers.values_list("label", flat=True)) == {"woman", "man"}
    assert answers.first().provenance["model_returned"] == "demo-classifier-2026-11-01"
