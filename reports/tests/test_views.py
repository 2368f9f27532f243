# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Reports pages and downloads: members read and export, outsiders get 404, query counts stay flat."""

from __future__ import annotations

import csv
import io

import docx
import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from projects import live
from reports.models import ExportJob
from reports.tests.tables_world import NASTY, code, seg, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def url(name: str, w, *args) -> str:
    return reverse(f"reports:{name}", args=[w.project.uuid, *args])


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def compiles(tex: str, tmp_path) -> None:
    """Compile with pdfLaTeX when installed (scripts/ensure-tex); the writer tests cover escaping without it."""
    import shutil
    import subprocess

    if not shutil.which("pdflatex"):
        return
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:]


def more_codings(w) -> None:
    """Add rows everywhere the pages read from."""
    for text in ("It grows with time.", "Borders decide a lot.", "Costs rose"):
        code(w.codes["AI self"], seg(w.interviews["gpt"], text), w.analyst)
    code(w.codes["Structure"], seg(w.interviews["claude"], "Belonging is yours"), w.analyst)
    live.publish(w.project.uuid, "coding")  # as coding.services does after every coding write


def queries(client, path: str, **kw) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, **kw)
        body(response)
    return len(ctx), response


READ_PAGES = [
    ("index", (), ""), ("excerpts", (), ""), ("frequency", (), ""), ("frequency_export", (), "?format=csv"),
    ("frequency_export", (), "?format=docx&sections=participant&by=provider&infinity=symbol"),
    ("statistics_download", ("tex",), ""), ("statistics_download", ("csv",), ""), ("statistics_download", ("xlsx",), ""),
]


@pytest.mark.parametrize("name, args, query", READ_PAGES)
def test_outsiders_get_404_and_anonymous_users_the_login(world, client_for, outsider, client, name, args, query):
    path = url(name, world, *args) + query
    assert client_for(outsider).get(path).status_code == 404
    assert client.get(path).status_code == 302


def test_outsiders_get_404_on_exports_jobs_and_codebook(world, client_for, outsider, owner):
    c = client_for(outsider)
    assert c.post(url("excerpts_export", world), {"format": "csv"}).status_code == 404
    job = ExportJob.objects.create(project=world.project, created_by=owner, format="csv")
    assert c.get(url("export_job", world, job.uuid)).status_code == 404
    assert c.get(url("export_download", world, job.uuid)).status_code == 404
    assert c.get(url("codebook_download", world, "csv")).status_code == 404


@pytest.mark.parametrize("who", ["owner", "analyst", "viewer"])
def test_every_member_reads_and_exports(world, client_for, who, request):
    # Exports only read the project, so viewers may make them too.
    c = client_for(request.getfixturevalue(who))
    for name, args, query in READ_PAGES:
        assert c.get(url(name, world, *args) + query).status_code == 200, name
    response = c.post(url("excerpts_export", world), {"format": "csv", "columns": ["code", "quote"]})
    assert response.status_code == 200


def test_index_links_everything_in_reports(world, client_for, owner):
    html = client_for(owner).get(url("index", world)).content.decode()
    for name in ("excerpts", "frequency"):
        assert url(name, world) in html
    assert url("statistics_download", world, "tex") in html
    for fmt in ("docx", "csv", "xlsx", "qdc"):
        assert url("codebook_download", world, fmt) in html
    assert url("exchange", world) in html and reverse("exchange_import") in html
    assert reverse("interviews:statistics", args=[world.project.uuid]) in html


def test_excerpt_builder_previews_and_htmx_gets_only_the_fragment(world, client_for, owner):
    c = client_for(owner)
    query = {"columns": ["model", "code", "quote"], "codes": [str(world.codes["Feeling"].uuid)]}
    page = c.get(url("excerpts", world), query).content.decode()
    assert "<h1>Excerpt table</h1>" in page and "Home is a feeling. It grows with time." in page
    fragment = c.get(url("excerpts", world), query, headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section id="excerpt-preview"')
    assert "<th scope=\"col\">Model</th><th scope=\"col\">Code</th><th scope=\"col\">Quote</th>" in fragment
    assert f'name="codes" value="{world.codes["Feeling"].uuid}"' in fragment  # the export form carries the choices


def test_the_preview_caption_is_the_downloads_caption(world, client_for, owner):
    fragment = client_for(owner).get(url("excerpts", world), {"suggestions": "exclude"},
                                     headers={"HX-Request": "true"}).content.decode()
    assert (f"<caption>Excerpts from {world.project.name}. Codings made by accepting AI suggestions are left out"
            f"</caption>") in fragment


def test_excerpt_builder_shows_errors_inline(world, client_for, owner):
    response = client_for(owner).get(url("excerpts", world), {"columns": "colour"})
    assert response.status_code == 400
    assert "Unknown column" in response.content.decode()


def test_excerpt_builder_query_count_is_flat(world, client_for, owner):
    c = client_for(owner)
    path = url("excerpts", world) + "?columns=theme&columns=subtheme&columns=code&columns=model&columns=quote&columns=provenance"
    before, _ = queries(c, path)
    more_codings(world)
    after, response = queries(c, path)
    # session, user, membership, themes, who coded (ids), coders, codes, participants, the count, live interviews,
    # rows, their interviews, unread-mentions badge
    assert before == after <= 13
    assert response.status_code == 200
    # Who coded and the count are kept under the version of the project's coding events: the next request reads them.
    warm, response = queries(c, path)
    assert warm == after - 2 and response.status_code == 200


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "docx", "tex", "md"])
def test_excerpt_export_downloads_read_back(world, client_for, owner, fmt, tmp_path):
    c = client_for(owner)
    response = c.post(url("excerpts_export", world), {"format": fmt, "columns": ["code", "model", "quote"],
                                                       "caption": "Table of quotes"})
    assert response.status_code == 200
    assert f".{ {'tex': 'tex', 'md': 'md'}.get(fmt, fmt)}\"" in response["Content-Disposition"]
    data = body(response)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
        assert rows[0] == ["Code", "Model", "Quote"]
        assert ["Feeling", "GPT-4o", "Home is a feeling. It grows with time."] in rows
    elif fmt == "xlsx":
        values = [[c.value for c in r] for r in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()]
        assert ["Feeling", "GPT-4o", "Home is a feeling. It grows with time."] in values
    elif fmt == "docx":
        document = docx.Document(io.BytesIO(data))
        assert document.paragraphs[0].text == "Table 1: Table of quotes"
        cells = [[c.text for c in r.cells] for r in document.tables[0].rows]
        assert ["Feeling", "GPT-4o", "Home is a feeling. It grows with time."] in cells
    elif fmt == "tex":
        assert "\\caption{Table of quotes}" in data.decode() and "Costs rose 50\\% \\& fees\\_2" in data.decode()
        compiles(data.decode(), tmp_path)
    else:
        assert "| Feeling | GPT-4o | Home is a feeling. It grows with time. |" in data.decode()


def test_export_without_a_format_is_refused_clearly(world, client_for, owner):
    response = client_for(owner).post(url("excerpts_export", world), {"format": "pdf"})
    assert response.status_code == 400 and "Choose an export format" in response.content.decode()


def test_large_exports_become_worker_jobs_with_progress_and_download(world, client_for, owner, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    monkeypatch.setattr("reports.views.INLINE_MAX_ROWS", 2)
    c = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(url("excerpts_export", world), {"format": "xlsx", "columns": ["code", "quote"]})
    job = ExportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == url("export_job", world, job.uuid)
    # Tasks run in-process in tests without the worker marker; the worker test is in test_export_worker.py.
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.progress_done == job.progress_total >= 3
    page = c.get(url("export_job", world, job.uuid)).content.decode()
    assert url("export_download", world, job.uuid) in page
    download = c.get(url("export_download", world, job.uuid))
    values = [[x.value for x in r] for r in openpyxl.load_workbook(io.BytesIO(body(download))).active.iter_rows()]
    assert values[0] == ["Code", "Quote"] and len(values) >= 4
    assert c.get(url("index", world)).content.decode().count(url("export_download", world, job.uuid)) == 1


def test_export_job_page_query_count_is_flat(world, client_for, owner):
    job = ExportJob.objects.create(project=world.project, created_by=owner, format="csv", status="running",
                                   progress_total=10)
    c = client_for(owner)
    before, response = queries(c, url("export_job", world, job.uuid), headers={"HX-Request": "true"})
    assert 'hx-trigger="every 1s"' in response.content.decode()
    more_codings(world)
    after, _ = queries(c, url("export_job", world, job.uuid), headers={"HX-Request": "true"})
    assert before == after <= 4  # session, user, membership, job


def lost_export(world, user, *, seconds_ago: float = 61) -> ExportJob:
    """An export queued a while ago whose task never reached the broker."""
    from datetime import timedelta

    from django.utils import timezone

    return ExportJob.objects.create(project=world.project, created_by=user, format="csv", filename="t.csv",
                                    params={"columns": ["code", "quote"]},
                                    sent_at=timezone.now() - timedelta(seconds=seconds_ago))


def test_an_export_waiting_a_minute_offers_send_again_and_discard(world, client_for, owner, analyst, viewer):
    fresh = lost_export(world, viewer, seconds_ago=5)
    assert "job-send-again" not in client_for(viewer).get(url("export_job", world, fresh.uuid)).content.decode()
    job = lost_export(world, owner)
    fragment = client_for(analyst).get(url("export_job", world, job.uuid), headers={"HX-Request": "true"}).content.decode()
    assert "No worker has picked this up" in fragment
    assert url("export_job_send_again", world, job.uuid) in fragment and url("export_job_discard", world, job.uuid) in fragment
    page = client_for(viewer).get(url("export_job", world, job.uuid)).content.decode()
    assert "No worker has picked this up" in page and "job-send-again" not in page  # someone else's export


def test_send_again_writes_a_lost_export(world, client_for, owner, analyst, viewer, outsider):
    job = lost_export(world, owner)
    path = url("export_job_send_again", world, job.uuid)
    assert client_for(viewer).post(path).status_code == 403
    assert client_for(outsider).post(path).status_code == 404
    response = client_for(analyst).post(path, follow=True)
    assert "Sent to the worker again." in response.content.decode()
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE  # tasks run in-process here
    assert "no longer waiting" in client_for(analyst).post(path, follow=True).content.decode()


def test_who_started_an_export_may_send_it_again_even_as_a_viewer(world, client_for, viewer):
    job = lost_export(world, viewer)
    assert client_for(viewer).post(url("export_job_send_again", world, job.uuid)).status_code == 302
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE


def test_a_lost_export_can_be_discarded_but_not_a_running_one(world, client_for, owner, analyst, viewer, outsider):
    job = lost_export(world, owner)
    path = url("export_job_discard", world, job.uuid)
    assert client_for(viewer).post(path).status_code == 403
    assert client_for(outsider).post(path).status_code == 404
    response = client_for(analyst).post(path)
    assert response.status_code == 302 and response["Location"] == url("index", world)
    assert not ExportJob.objects.filter(pk=job.pk).exists()
    running = ExportJob.objects.create(project=world.project, created_by=owner, format="csv", status="running")
    refused = client_for(owner).post(url("export_job_discard", world, running.uuid), follow=True)
    assert "This export has started" in refused.content.decode()
    assert ExportJob.objects.filter(pk=running.pk).exists()


def test_download_of_an_unfinished_job_is_404(world, client_for, owner):
    job = ExportJob.objects.create(project=world.project, created_by=owner, format="csv")
    assert client_for(owner).get(url("export_download", world, job.uuid)).status_code == 404


def test_index_query_count_is_flat(world, client_for, owner):
    c = client_for(owner)
    before, _ = queries(c, url("index", world))
    for _ in range(3):
        ExportJob.objects.create(project=world.project, created_by=owner, format="csv")
    after, _ = queries(c, url("index", world))
    assert before == after <= 5  # session, user, membership, recent jobs, unread-mentions badge


def test_frequency_page_table_heatmap_and_fragment(world, client_for, owner):
    c = client_for(owner)
    q = {"a": str(world.gpt.uuid), "b": str(world.claude.uuid)}
    html = c.get(url("frequency", world), q).content.decode()
    assert "<svg" in html and "ln(A/B)" in html and "only in A" in html and "only in B" in html
    fragment = c.get(url("frequency", world), {**q, "level": "theme"}, headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<div id="frequency-page"') and "Personal journey" in fragment


def test_frequency_page_collapses_many_group_columns_into_their_total(world, client_for, owner):
    from interviews.models import Interview, Participant

    for i in range(3):  # six models: more than fit beside the labels
        extra = Participant.objects.create(project=world.project, label=f"Model {i}")
        Interview.objects.create(project=world.project, participant=extra, title=f"Model {i} on home")
    c = client_for(owner)
    collapsed = c.get(url("frequency", world)).content.decode()
    table = collapsed.split('id="frequency-table"')[1].split("</table>")[0]
    assert "All groups" in table and "Model 0" not in table and "Show 6 group columns" in collapsed
    # Feeling: 2 GPT segments + 1 Claude segment of the 6 coded segments (every column together).
    feeling = table.split("Feeling</th>")[1].split("</tr>")[0]
    assert '<td class="num">3</td>' in feeling and "50.0" in feeling
    assert "Model 0" in collapsed.split('<figure class="heatmap')[1]  # the heatmap still shows every group
    fragment = c.get(url("frequency", world), {"breakdown": "show"}, headers={"HX-Request": "true"}).content.decode()
    table = fragment.split('id="frequency-table"')[1].split("</table>")[0]
    assert table.count('class="num group-col"') == 6 and "All groups" not in table
    assert '<input type="hidden" name="breakdown" value="show">' in fragment  # the next form change keeps it
    assert 'hx-get="' + url("frequency", world) + '?breakdown=hide"' in fragment


def test_frequency_page_explains_bad_groups(world, client_for, owner):
    response = client_for(owner).get(url("frequency", world), {"a": str(world.gpt.uuid), "b": str(world.gpt.uuid)})
    assert response.status_code == 400 and "both groups" in response.content.decode()


def test_frequency_page_query_count_is_flat(world, client_for, owner):
    c = client_for(owner)
    path = url("frequency", world) + f"?a={world.gpt.uuid}&b={world.claude.uuid}"
    before, _ = queries(c, path)
    more_codings(world)
    after, _ = queries(c, path)
    assert before == after <= 8  # session, user, membership, participants, interviews, codes, counts, unread badge


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "tex", "svg", "png"])
def test_frequency_exports(world, client_for, owner, fmt, tmp_path):
    response = client_for(owner).get(url("frequency_export", world),
                                     {"format": fmt, "a": str(world.gpt.uuid), "b": str(world.claude.uuid)})
    assert response.status_code == 200
    data = body(response)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
        assert rows[0][:3] == ["Code", "Claude n", "Claude %"] and rows[0][-4:] == [
            "ln(A/B)", "95% CI low", "95% CI high", "ln(A/B) flag"]
        by = {r[0]: r for r in rows if r}  # the note follows the rows, after a blank line
        # Numeric columns hold numbers or nothing; an infinite or undefined ratio is named in the flag column.
        assert by["Structure"][-4:] == ["", "", "", "only in A"] and by["AI self"][-4:] == ["", "", "", "only in B"]
        assert by["Unused"][-1] == "undefined"
        assert by["Feeling"][-4] == "0.0" and by["Feeling"][-1] == ""
    elif fmt == "xlsx":
        values = {r[0].value: [c.value for c in r] for r in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()}
        assert values["Structure"][-4:] == [None, None, None, "only in A"] and values["AI self"][-1] == "only in B"
    elif fmt == "tex":
        assert "only in A" in data.decode() and "only in B" in data.decode() and "\\toprule" in data.decode()
        assert "Feeling & 1 (50.0\\%) & 2 (50.0\\%) & -- & 2 & 1 & 0.00 & {[}" in data.decode()
        compiles(data.decode(), tmp_path)
    elif fmt == "svg":
        assert data.startswith(b"<svg") and response["Content-Type"].startswith("image/svg+xml")
    else:
        assert data.startswith(b"\x89PNG")


def test_frequency_export_rejects_unknown_formats(world, client_for, owner):
    response = client_for(owner).get(url("frequency_export", world), {"format": "pdf"})
    assert response.status_code == 400 and "Unknown format" in response.content.decode()


def test_statistics_latex(world, client_for, owner, tmp_path):
    data = body(client_for(owner).get(url("statistics_download", world, "tex"))).decode()
    compiles(data, tmp_path)
    assert "\\caption{Descriptive statistics of the interviews per model" in data
    # Appendix C's shape: a row per metric, a column per model, then min, max and mean across the models.
    assert "\\textbf{Metric} & \\textbf{Claude} & \\textbf{GPT-4o} & \\textbf{Llama} & \\textbf{Min}" in data
    assert "Model id & claude-3-5 & gpt-4o-2024-08-06 & llama-3.1 &  &  &  \\\\" in data
    assert "\nQuestions & 1 & 2 & 1 & 1 & 2 & 1.3 \\\\" in data  # mean 4/3 -> 1.3, as rounded (and in the CSV)


@pytest.mark.parametrize("fmt", ["csv", "docx", "xlsx", "qdc"])
def test_codebook_downloads(world, client_for, owner, fmt):
    world.codes["Structure"].parent = world.codes["Feeling"]
    world.codes["Structure"].definition = "Laws, borders & money."
    world.codes["Structure"].save()
    response = client_for(owner).get(url("codebook_download", world, fmt))
    assert response.status_code == 200
    data = body(response)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
        assert rows[0][:4] == ["Code", "Parent", "Kind", "Definition"]
        names = [r[0] for r in rows[1:]]
        assert names.index("Structure") == names.index("Feeling") + 1  # children follow their parent
        structure = rows[1 + names.index("Structure")]
        assert structure[1:4] == ["Feeling", "Semantic", "Laws, borders & money."] and structure[8] == "Limits"
    elif fmt in ("docx", "xlsx"):
        if fmt == "docx":
            cells = [[c.text for c in r.cells] for r in docx.Document(io.BytesIO(data)).tables[0].rows]
        else:
            cells = [[("" if c.value is None else str(c.value)) for c in r]
                     for r in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()]
        assert any(r[0] == "Structure" and r[1] == "Feeling" for r in cells)
    else:
        assert b"<CodeBook" in data and b'name="Structure"' in data and b"<Sets>" in data


def test_unknown_codebook_format_is_404(world, client_for, owner):
    assert client_for(owner).get(url("codebook_download", world, "pdf")).status_code == 404


def test_nasty_text_survives_the_builder_page(world, client_for, owner):
    html = client_for(owner).get(url("excerpts", world), {"columns": ["quote"]}).content.decode()
    assert "Costs rose 50% &amp; fees_2" in html and NASTY[:10] in html


def test_qdc_of_an_empty_codebook_explains_why(project, client_for, owner):
    response = client_for(owner).get(reverse("reports:codebook_download", args=[project.uuid, "qdc"]))
    assert response.status_code == 400 and "at least one code" in response.content.decode()


def test_a_job_of_another_project_is_404(world, client_for, owner):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other study", created_by=owner)
    Membership.objects.create(project=other, user=owner, role=Role.OWNER)
    job = ExportJob.objects.create(project=other, created_by=owner, format="csv", status="done")
    c = client_for(owner)
    assert c.get(url("export_job", world, job.uuid)).status_code == 404
    assert c.get(url("export_download", world, job.uuid)).status_code == 404
