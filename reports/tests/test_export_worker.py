# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""A large export really runs in the Celery worker process, reports progress and leaves a download."""

from __future__ import annotations

import io
import time

import docx
import pytest
from django.urls import reverse

from reports.exports import exportjob_create, exportjob_run
from reports.models import ExportJob
from reports.tests.tables_world import world  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shared_media(monkeypatch, settings, tmp_path):
    """The worker (another process) writes where the web process reads."""
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    settings.MEDIA_ROOT = tmp_path


def test_worker_writes_the_export_and_the_page_offers_the_download(shared_media, celery_worker, world, client_for, owner):
    params = {"columns": ["theme", "code", "model", "quote"], "caption": ["Worker table"]}
    job = exportjob_create(project=world.project, user=owner, fmt="docx", params=params, total=6)
    deadline = time.monotonic() + 300
    while True:
        job.refresh_from_db()
        if not job.is_active:
            break
        assert time.monotonic() < deadline, "the worker never finished the export"
        assert celery_worker.poll() is None, "the worker died"
        time.sleep(0.1)
    assert job.status == ExportJob.Status.DONE, job.error
    assert job.started_at and job.finished_at and job.percent == 100

    c = client_for(owner)
    page = c.get(reverse("reports:export_job", args=[world.project.uuid, job.uuid])).content.decode()
    download_url = reverse("reports:export_download", args=[world.project.uuid, job.uuid])
    assert download_url in page
    response = c.get(download_url)
    data = b"".join(response.streaming_content)
    document = docx.Document(io.BytesIO(data))
    assert document.paragraphs[0].text == "Table 1: Worker table"
    cells = [[cell.text for cell in row.cells] for row in document.tables[0].rows]
    assert cells[0] == ["Theme", "Code", "Model", "Quote"]
    assert ["Belonging as feeling", "Feeling", "GPT-4o", "Home is a feeling. It grows with time."] in cells

    # Safe to run twice: a finished job is left as it is.
    blob = job.blob_id
    exportjob_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.blob_id == blob and job.status == ExportJob.Status.DONE


def test_a_job_whose_choices_went_away_fails_with_a_clear_message(shared_media, world, owner):
    job = ExportJob.objects.create(project=world.project, created_by=owner, format="csv",
                                   params={"codes": ["00000000-0000-0000-0000-000000000000"]})
    exportjob_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED
    assert "no longer fit the project" in job.error and "no code" in job.error
