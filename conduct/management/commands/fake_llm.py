"""Serve the local fake chat-completions endpoint for demos, and point demo participants at it.

    python manage.py fake_llm --setup            # demo user's projects get the live demo models
    python manage.py fake_llm --port 8765        # just the server
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from conduct import services
from conduct.testing.fake_openai import _demo_server
from interviews.models import Guide, Participant
from projects.models import Project

DEMO_MODELS = {
    "Demo fast": "demo-fast",
    "Demo slow": "demo-slow",
    "Demo flaky (stream breaks)": "demo-flaky",
    "Demo rate-limited once": "demo-ratelimited",
    "Demo without stream_options": "demo-no-stream-options",
    "Demo that cannot stream": "demo-no-streaming",
}


class Command(BaseCommand):
    help = "Run a local OpenAI-compatible endpoint with demo models (no API key, no internet)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--setup", action="store_true", help="add live demo participants to the user's projects")
        parser.add_argument("--username", default="demo", help="whose projects get the demo participants")

    def handle(self, *args: Any, port: int, setup: bool, username: str, **options: Any) -> None:
        try:
            server = _demo_server(port).start()
        except OSError as exc:
            raise CommandError(f"Cannot listen on 127.0.0.1:{port}: {exc}. Pick another --port.") from exc
        if setup:
            self._setup(username, server.base_url)
        self.stdout.write(f"Fake OpenAI-compatible endpoint at {server.base_url} — Ctrl+C stops it.")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            server.stop()

    def _setup(self, username: str, base_url: str) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user '{username}'. Run `manage.py load_demo` first or pass --username.")
        for project in Project.objects.for_user(user):
            # A key is bound to one URL: another --port means a new key for the new address.
            key = services.demo_endpoint_key(project=project, user=user, base_url=base_url)
            for label, model in DEMO_MODELS.items():
                existing = Participant.objects.filter(project=project, label=label).first()
                services.live_participant_save(
                    project=project, participant=existing, label=label, provider="Local demo", model_id=model,
                    base_url=base_url, temperature=0.7, top_p=None, seed=None, max_tokens=None,
                    timeout_seconds=30, api_key=key,
                )
            if not Guide.objects.filter(project=project).exists():
                services.guide_create(
                    project=project, user=user, name="Demo guide",
                    opening_prompt="How do you decide what is fair when two people want different things?",
                    system_prompt="You are taking part in a qualitative research interview. Answer in your own words.",
                    planned_questions=[
                        {"text": "Where does that view come from?", "probes": ["Can you give an example?"]},
                        {"text": "When would you change your mind?", "probes": []},
                    ],
                )
            self.stdout.write(f"Project “{project.name}”: {len(DEMO_MODELS)} live demo participants at {base_url}")
