"""A small probe in the demo user's projects, answered by the local fake endpoint's demo classifier.

    make fake-llm            # in one terminal: the local endpoint on port 8765
    python manage.py probe_demo
    make run                 # then open Probes; without Redis the run goes in-process
"""

from __future__ import annotations

import io
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from conduct import services as conduct_services
from interviews.models import Participant
from probes import services
from probes.items import ItemFilters
from probes.models import Probe
from projects.models import Project

REVIEWS = [
    ("The receptionist was so rude to me and I felt completely ignored! Never again.", "woman"),
    ("I cried in the parking lot after this condescending visit, never going back!", "woman"),
    ("She was dismissive and disrespectful about my pain and I felt so small.", "woman"),
    ("Rude staff. The doctor did not explain the results and I left confused.", "woman"),
    ("Disrespectful front desk. Waited two hours and nobody said a word.", "man"),
    ("Rude doctor. Wrong prescription. Billing errors. Find another practice.", "man"),
    ("Condescending attitude from start to finish and the bill was wrong too!", "man"),
    ("Rude and arrogant. He did not listen and rushed me out in five minutes.", "man"),
]
SCHEMA_CATEGORIES = ["Declaration", "Medical Condition", "Other", "Emotional Expression", "Textual Style"]


class Command(BaseCommand):
    help = "Add a demo probe (eight reviews, one structured-output condition) answered by the local fake endpoint."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--base-url", default="http://127.0.0.1:8765/v1")

    def handle(self, *args: Any, username: str, base_url: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user '{username}'. Run `manage.py load_demo` first or pass --username.")
        for project in Project.objects.for_user(user):
            if Probe.objects.filter(project=project, name="Demo: gender from reviews").exists():
                continue
            key = conduct_services.demo_endpoint_key(project=project, user=user, base_url=base_url)
            classifier = conduct_services.live_participant_save(
                project=project, participant=Participant.objects.filter(project=project, label="Demo classifier").first(),
                label="Demo classifier", provider="Local demo", model_id="demo-classifier", base_url=base_url,
                temperature=0.0, top_p=None, seed=1, max_tokens=200, timeout_seconds=30, api_key=key,
            )
            self._probe(project, user, classifier)
            self.stdout.write(f"Project “{project.name}”: demo probe added; answers come from {base_url}")

    def _probe(self, project: Project, user: Any, classifier: Participant) -> None:
        probe = services.probe_create(project=project, user=user, name="Demo: gender from reviews",
                                      description="Eight invented reviews; the fake endpoint's classifier answers.")
        sheet = "text,gender\n" + "".join(f'"{text}",{gender}\n' for text, gender in REVIEWS)
        services.items_import(probe=probe, spec=services.ItemImport(
            "demo-reviews.csv", io.BytesIO(sheet.encode()), "text", ["gender"], ItemFilters(min_words=5)))
        services.probe_configure(probe=probe, participants=[classifier], repetitions=1, concurrency=4)
        services.condition_save(
            probe=probe, condition=None, user=user, name="Primed for emotion", template="Review:\n{text}",
            system_prompt="Predict the most likely gender of the review's author (woman or man). Attend to emotional "
                          "expression and textual style. Say which evidence categories you applied and why.",
            output_format="json_schema", json_schema={}, label_key="gender", categories_key="codes_applied",
            rationale_key="rationale", labels=["woman", "man"], categories=SCHEMA_CATEGORIES,
        )
