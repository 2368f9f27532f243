from __future__ import annotations

from django.apps import AppConfig


class ConductConfig(AppConfig):
    name = "conduct"
    verbose_name = "Conduct"

    def ready(self) -> None:
        from conduct.models import AnswerJob
        from conduct.tasks import send_answer
        from projects.jobs import job_kind_register

        job_kind_register(AnswerJob, name="answer", send=lambda job: send_answer(job.turn_id),
                          waiting=lambda: AnswerJob.objects.filter(state=AnswerJob.State.QUEUED))
