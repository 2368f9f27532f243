# ruff: noqa: F811
"""Whole-project exports of a large project (.qdpx, backup) run in a real Celery worker: the request queues
a job and answers with a progress page, which polls (htmx) until it offers the download."""

from __future__ import annotations

import io
import time
import zipfile

import pytest
from django.urls import reverse

import refiqda
from reports.exports import exportjob_run
from reports.models import ExportJob
from reports.tests.tables_world import world  # noqa: F401 - fixture


@pytest.fixture
def shared_media(monkeypatch, settings, tmp_path):
    """The worker (another process) writes where the web process reads; every project counts as large."""
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    settings.MEDIA_ROOT = tmp_path
    settings.RTA_EXPORT_INLINE_MAX_SEGMENTS = 0


def _url(name: str, project, *args) -> str:
    return reverse(f"reports:{name}", args=[project.uuid, *args])


def _wait_for_download_link(client, job_url: str, worker) -> str:
    """Poll the progress fragment as the page's htmx does, until it offers the download (or a minute passes)."""
    deadline = time.monotonic() + 60
    while True:
        fragment = client.get(job_url, headers={"HX-Request": "true"}).content.decode()
        if 'id="export-download"' in fragment:
            return fragment
        assert "The export failed" not in fragment, fragment
        assert 'hx-trigger="every 1s"' in fragment, "a running job's fragment keeps polling"
        assert worker.poll() is None, "the worker died"
        assert time.monotonic() < deadline, "the worker never finished the export"
        time.sleep(0.1)


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_large_qdpx_export_runs_in_the_worker_with_progress_and_a_download(shared_media, celery_worker, world,
                                                                             client_for, viewer):
    c = client_for(viewer)  # exporting is reading: viewers may
    response = c.post(_url("export_qdpx", world.project), {"positions": "utf16"})
    job = ExportJob.objects.get(project=world.project)
    job_url = _url("export_job", world.project, job.uuid)
    assert response.status_code == 302 and response["Location"] == job_url
    assert (job.kind, job.format, job.params) == (ExportJob.Kind.QDPX, "qdpx", {"positions": "utf16"})
    page = c.get(job_url).content.decode()
    assert "REFI-QDA project export" in page and 'id="job-status"' in page

    fragment = _wait_for_download_link(c, job_url, celery_worker)
    assert 'hx-trigger="every 1s"' not in fragment, "a finished job stops polling"
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.started_at and job.finished_at and job.percent == 100
    assert job.filename.startswith("Chatbots-and-identity-") and "-refi-qda-nvivo-" in job.filename and job.filename.endswith(".qdpx")
    download = c.get(_url("export_download", world.project, job.uuid))
    assert download["Content-Type"] == "application/zip" and job.filename in download["Content-Disposition"]
    qp = refiqda.read_project(b"".join(download.streaming_content))
    assert qp.counting == "utf16"
    assert {source.name for source in qp.sources} >= {"GPT on home", "Claude on home", "Llama on home"}

    # Safe to run twice: a finished job is left as it is.
    blob = job.blob_id
    exportjob_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.blob_id == blob and job.status == ExportJob.Status.DONE


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_large_backup_runs_in_the_worker_and_stays_the_owners(shared_media, celery_worker, world, client_for,
                                                                owner, analyst):
    c = client_for(owner)
    assert client_for(analyst).post(_url("download_backup", world.project)).status_code == 403
    response = c.post(_url("download_backup", world.project))
    job = ExportJob.objects.get(project=world.project)
    job_url = _url("export_job", world.project, job.uuid)
    assert response.status_code == 302 and response["Location"] == job_url
    _wait_for_download_link(c, job_url, celery_worker)

    download_url = _url("export_download", world.project, job.uuid)
    for url in (job_url, download_url):
        assert client_for(analyst).get(url).status_code == 403, url
    download = c.get(download_url)
    assert download.status_code == 200 and job.filename.endswith(".rta-backup.zip")
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as zf:
        assert "manifest.json" in zf.namelist()


@pytest.mark.django_db
def test_a_large_export_only_queues_a_job_and_outsiders_get_404(shared_media, world, client_for, outsider, analyst):
    assert client_for(outsider).post(_url("export_qdpx", world.project)).status_code == 404
    assert client_for(outsider).post(_url("download_backup", world.project)).status_code == 404
    response = client_for(analyst).post(_url("export_qdpx", world.project))
    job = ExportJob.objects.get(project=world.project)
    assert response.status_code == 302 and job.status == ExportJob.Status.QUEUED and job.blob is None
    page = client_for(analyst).get(_url("export_job", world.project, job.uuid)).content.decode()
    assert "Waiting for the worker" in page
    assert client_for(outsider).get(_url("export_job", world.project, job.uuid)).status_code == 404
