"""Any web process and any worker can serve any request or job (issue #20).

A worker that shares no disk with the web process (its own MEDIA_ROOT) imports an upload and writes an export that
the web process then serves: job files live in PostgreSQL (projects/blobs.py), so neither side ever needs the
other's disk. The compose file scaled out, each container with a disk of its own, is tests/test_compose_stack.py."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import requests
from django.db import connection

import refiqda
from interviews.models import ImportJob, Interview
from projects.models import StoredBlob
from refiqda.tests.helpers import SAMPLES
from reports.models import ExportJob
from tests.faults import PrivateRedis, WebProcess, csrf_headers, kill_worker, logged_in_session, wait_for_status, wait_until
from tests.test_worker_faults import _worker

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SAMPLE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"


def _database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@127.0.0.1:{db['PORT'] or 5432}/{db['NAME']}"


def _import_then_export(session: requests.Session, base_url: str, project) -> None:
    """Upload a transcript, import it on a worker, export the project as .qdpx on a worker and download it: every
    request through `base_url`, every check on what the database and the download hold."""
    headers = csrf_headers(session, base_url)
    response = session.post(f"{base_url}/p/{project.uuid}/interviews/import/", data={"format": "auto"},
                            files={"files": (SAMPLE.name, SAMPLE.read_bytes(), "application/json")},
                            headers=headers, allow_redirects=False, timeout=60)
    assert response.status_code == 302, response.text[:500]
    job = ImportJob.objects.get(project=project)
    assert job.status == ImportJob.Status.UPLOADED
    assert StoredBlob.objects.filter(uuid=job.files[0]["blob"]).exists()  # the upload is in the database
    keys = [c["key"] for f in job.preview["files"] for c in f["conversations"]]
    response = session.post(f"{base_url}{response.headers['Location']}start/",
                            data={"conversations": keys, "participant": "auto"},
                            headers=headers, allow_redirects=False, timeout=60)
    assert response.status_code == 302, response.text[:500]
    wait_for_status(job, {ImportJob.Status.DONE, ImportJob.Status.FAILED}, 300)
    assert job.status == ImportJob.Status.DONE, job.errors
    assert Interview.objects.filter(project=project).count() == len(keys) > 0
    # The finished import's upload is removed once its last transaction commits, just after the status.
    wait_until(lambda: not StoredBlob.objects.exists(), "the finished import's upload to be removed", 60)

    response = session.post(f"{base_url}/p/{project.uuid}/reports/exchange/export.qdpx",
                            data={"positions": "codepoints"}, headers=headers, allow_redirects=False, timeout=60)
    assert response.status_code == 302, response.text[:500]
    export = ExportJob.objects.get(project=project)
    wait_for_status(export, {ExportJob.Status.DONE, ExportJob.Status.FAILED}, 300)
    assert export.status == ExportJob.Status.DONE, export.error
    download = session.get(f"{base_url}/p/{project.uuid}/reports/exports/{export.uuid}/download/", timeout=60)
    assert download.status_code == 200, download.text[:500]
    assert int(download.headers["Content-Length"]) == len(download.content) == export.blob.size
    qp = refiqda.read_project(io.BytesIO(download.content))
    assert sorted(s.name for s in qp.sources) == sorted(Interview.objects.filter(project=project)
                                                        .values_list("title", flat=True))


def _media_roots(tmp_path: Path, *names: str) -> list[Path]:
    roots = [tmp_path / f"{name}-media" for name in names]
    for root in roots:
        root.mkdir()
    return roots


def test_a_worker_with_its_own_disk_imports_and_exports_for_the_web_process(project, analyst, monkeypatch, tmp_path):
    web_media, worker_media = _media_roots(tmp_path, "web", "worker")
    monkeypatch.setenv("MEDIA_ROOT", str(web_media))
    monkeypatch.setenv("RTA_EXPORT_INLINE_MAX_SEGMENTS", "0")  # every .qdpx export goes to the worker
    redis = PrivateRedis().start()
    queue = f"rta-machines-{redis.port}"
    web = WebProcess(database_url=_database_url(), redis_url=redis.url, queue=queue)
    worker = _worker(_database_url(), redis.url, queue, MEDIA_ROOT=str(worker_media))
    try:
        _import_then_export(logged_in_session(analyst, web), web.url, project)
        # Neither process wrote a job file to its own disk.
        assert not any(web_media.rglob("*")) and not any(worker_media.rglob("*"))
    finally:
        web.stop()
        kill_worker(worker)
        redis.cleanup()
