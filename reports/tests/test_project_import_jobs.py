"""Bringing a project in (a backup restore, a .qdpx import) runs in the worker: the request keeps the upload and
queues a job; the worker reads the people the file names once; the job is the unit (one job, one project); a
failure says why on the job's page and leaves nothing behind."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from projects.jobs import jobs_resend
from projects.models import Membership, Project, StoredBlob
from reports.backup import project_backup, project_restore
from reports.exchange import project_export_qdpx, project_import_qdpx
from reports.imports import ACCOUNT_GONE, _progress_told, projectimport_run
from reports.models import ProjectImportJob
from tests.faults import wait_until

Job = ProjectImportJob


def _backup(project: Project) -> SimpleUploadedFile:
    buf = io.BytesIO()
    project_backup(project=project, out=buf)
    return SimpleUploadedFile("demo.zip", buf.getvalue())


def _post_upload(client, kind: str, file: SimpleUploadedFile, name: str = ""):
    return client.post(reverse("exchange_import"), {"kind": kind, f"{kind}-file": file, f"{kind}-project_name": name})


def _job_url(job: Job) -> str:
    return reverse("exchange_import_job", args=[job.uuid])


@pytest.mark.django_db
def test_the_upload_request_only_keeps_the_file_and_queues_the_job(client_for, outsider,
                                                                   django_capture_on_commit_callbacks):
    c = client_for(outsider)
    with django_capture_on_commit_callbacks() as queued:
        # Junk, yet accepted here: the request does not read the file (the worker does, and refuses it).
        response = _post_upload(c, "restore", SimpleUploadedFile("big.zip", b"junk"), "Mine")
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == _job_url(job)
    assert (job.kind, job.status, job.filename, job.project_name, job.created_by) == (
        "restore", "reading", "big.zip", "Mine", outsider)
    assert job.blob.size == 4 and len(queued) == 1 and not Project.objects.exists()
    page = c.get(response["Location"]).content.decode()
    assert "Reading the file…" in page and 'hx-trigger="every 1s"' in page


@pytest.mark.django_db
def test_the_people_are_read_once_and_a_double_submit_makes_one_project(demo_project, client_for, outsider,
                                                                        django_capture_on_commit_callbacks):
    c = client_for(outsider)
    with django_capture_on_commit_callbacks(execute=True):
        job_url = _post_upload(c, "restore", _backup(demo_project))["Location"]
    job = Job.objects.get()
    assert job.status == Job.Status.PEOPLE and [(p["username"], p["needs_account"]) for p in job.people] == [
        ("demo", True)]  # read by the worker, kept on the job
    choice = {"person-0": str(outsider.pk), "project_name": "Once"}
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks() as queued:
        first = c.post(job_url, choice)
        again = c.post(job_url, {**choice, "project_name": "Twice"})  # a retry, or a second click
    assert first.status_code == again.status_code == 302 and first["Location"] == again["Location"] == job_url
    assert not any("blobchunk" in q["sql"] for q in queries.captured_queries), "the requests read the file"
    assert len(queued) == 1 and not Project.objects.filter(name__in=["Once", "Twice"]).exists()
    assert "Waiting for the worker…" in c.get(job_url).content.decode()

    queued[0]()  # the worker imports
    projectimport_run(job_id=job.pk)  # and the task is delivered again
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.project.name == "Once"
    assert Project.objects.filter(name__in=["Once", "Twice"]).count() == 1
    assert not StoredBlob.objects.exists()
    # The job that made the project is the importer's, not the project's: a backup of it leaves the job out.
    with zipfile.ZipFile(_backup(job.project)) as zf:
        assert "reports.projectimportjob" not in {m["model"] for m in json.loads(zf.read("manifest.json"))["models"]}


@pytest.mark.django_db
def test_a_job_whose_worker_died_mid_import_starts_over_and_makes_one_project(demo_project, client_for, outsider,
                                                                              django_capture_on_commit_callbacks):
    c = client_for(outsider)
    with django_capture_on_commit_callbacks(execute=True):
        job_url = _post_upload(c, "restore", _backup(demo_project))["Location"]
    with django_capture_on_commit_callbacks():  # the worker takes the job, then dies: its transaction rolled back
        c.post(job_url, {"person-0": str(outsider.pk), "project_name": "Redelivered"})
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    assert "Restoring the project…" in c.get(job_url).content.decode()
    projectimport_run(job_id=job.pk)  # the broker delivers the task again
    projectimport_run(job_id=job.pk)
    assert Project.objects.filter(name="Redelivered").count() == 1


@pytest.mark.django_db
def test_a_failed_import_says_why_on_its_page_and_leaves_nothing_behind(project, client_for, owner, analyst,
                                                                        django_capture_on_commit_callbacks):
    from reports.tests.test_exchange import _qdpx_with_coders

    c = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        job_url = _post_upload(c, "qdpx", SimpleUploadedFile("team.qdpx", _qdpx_with_coders(["Arjun A."])),
                               "From the team")["Location"]
    with django_capture_on_commit_callbacks() as queued:
        c.post(job_url, {"person-0": str(analyst.pk), "project_name": "From the team"})
    Membership.objects.filter(project=project, user=analyst).delete()  # olivia no longer works with arjun
    queued[0]()
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and job.error == ACCOUNT_GONE
    page = c.get(job_url).content.decode()
    assert "Nothing was imported" in page and 'class="error" role="alert">An account you chose' in page
    assert 'hx-trigger="every 1s"' not in page
    assert not Project.objects.filter(name="From the team").exists() and not StoredBlob.objects.exists()


@pytest.mark.django_db
def test_the_uploader_may_send_a_waiting_import_again_or_discard_it(client_for, outsider,
                                                                     django_capture_on_commit_callbacks):
    c = client_for(outsider)
    with django_capture_on_commit_callbacks():  # the broker lost it
        job_url = _post_upload(c, "restore", SimpleUploadedFile("lost.zip", b"junk"))["Location"]
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(sent_at=timezone.now() - timedelta(minutes=5))
    page = c.get(job_url).content.decode()
    assert 'id="job-send-again"' in page and 'id="job-discard"' in page
    response = c.post(reverse("exchange_import_job_send_again", args=[job.uuid]))
    assert response.status_code == 302 and response["Location"] == job_url
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "lost.zip: not a ZIP archive" in job.error  # the worker read it

    with django_capture_on_commit_callbacks():
        second = _post_upload(c, "restore", SimpleUploadedFile("mine.zip", b"junk"))["Location"]
    discarded = Job.objects.get(status=Job.Status.READING)
    response = c.post(reverse("exchange_import_job_discard", args=[discarded.uuid]))
    assert response.status_code == 302 and response["Location"] == reverse("exchange_import")
    assert not Job.objects.filter(pk=discarded.pk).exists() and not StoredBlob.objects.exists()
    assert c.get(second).status_code == 404
    # A finished job is not discarded: its page says so.
    response = c.post(reverse("exchange_import_job_discard", args=[job.uuid]), follow=True)
    assert "can no longer be discarded" in response.content.decode() and Job.objects.filter(pk=job.pk).exists()


@pytest.mark.django_db
def test_the_sweeper_resends_an_import_the_broker_lost(client_for, outsider, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():  # never sent
        _post_upload(client_for(outsider), "qdpx", SimpleUploadedFile("lost.qdpx", b"junk"))
    assert jobs_resend(older_than=timedelta(0)) == 1
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and "lost.qdpx: not a ZIP archive" in job.error


def _wait_for(client, job_url: str, worker, done) -> None:
    """Poll the job's status fragment as the page's htmx does, until `done(response)` (or a minute passes)."""

    def reached() -> bool:
        response = client.get(job_url, headers={"HX-Request": "true"})
        assert "Nothing was imported" not in response.content.decode(), response.content.decode()
        assert worker.poll() is None, "the worker died"
        return done(response)

    wait_until(reached, "the worker to get there")


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_restore_runs_in_a_real_worker_from_upload_to_project(celery_worker, demo_project, client_for, outsider):
    c = client_for(outsider)
    job_url = _post_upload(c, "restore", _backup(demo_project), "Restored by the worker")["Location"]
    _wait_for(c, job_url, celery_worker, lambda r: r.headers.get("HX-Refresh") == "true")  # the people step is ready
    assert "The backup names these people" in c.get(job_url).content.decode()
    assert c.post(job_url, {"person-0": str(outsider.pk), "project_name": "Restored by the worker"})["Location"] == job_url
    _wait_for(c, job_url, celery_worker, lambda r: b'id="import-open-project"' in r.content)
    restored = Project.objects.get(name="Restored by the worker")
    assert list(restored.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    assert not StoredBlob.objects.exists()


@pytest.mark.django_db
def test_a_restore_and_a_qdpx_import_say_how_far_they_are(demo_project, outsider):
    told: list[tuple[int, int, str]] = []
    project_restore(source=_backup(demo_project).read(), owner=outsider, people={"demo": outsider},
                    progress=lambda *said: told.append(said))
    done = [d for d, _, _ in told]
    assert told[0][0] == 0 and done == sorted(done) and len(told) > 3
    assert {(total, what) for _, total, what in told} == {(done[-1], "records")} and done[-1] > 50

    told.clear()
    qdpx = io.BytesIO()
    project_export_qdpx(project=demo_project, out=qdpx)
    project_import_qdpx(source=qdpx.getvalue(), owner=outsider, filename="demo.qdpx", progress=lambda *said: told.append(said))
    interviews = demo_project.interviews.count()
    assert told == [(n, interviews, "interviews") for n in range(interviews + 1)]


@pytest.mark.django_db
def test_the_job_page_shows_how_far_the_worker_is_while_it_imports(client_for, outsider):
    c = client_for(outsider)
    job_url = _post_upload(c, "restore", SimpleUploadedFile("big.zip", b"junk"))["Location"]
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    assert "<progress id=\"import-progress\">" in c.get(job_url).content.decode()  # nothing said yet
    job.refresh_from_db()
    _progress_told(job)(1200, 9800, "records")
    for page in (c.get(job_url), c.get(job_url, headers={"HX-Request": "true"})):
        text = page.content.decode()
        assert "1200 of 9800 records" in text and 'value="1200" max="9800"' in text
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error="Stopped")
    assert "9800" not in c.get(job_url).content.decode()
