# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Codes applied to whole interviews: the toggle (members, outsiders, viewers, bad input), the case × code matrix
page with a flat query count, and its CSV/XLSX exports."""

from __future__ import annotations

import csv
import io

import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from coding.models import CaseCoding, Code
from interviews.models import Interview
from reports.tests.tables_world import world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def toggle_url(w, key="gpt") -> str:
    return reverse("coding:case_code", args=[w.project.uuid, w.interviews[key].uuid])


def matrix_url(w) -> str:
    return reverse("reports:cases", args=[w.project.uuid])


@pytest.fixture
def features(world) -> dict[str, Code]:
    parent = Code.objects.create(project=world.project, name="Case features", position=10)
    return {"parent": parent,
            "Harm by omission": Code.objects.create(project=world.project, name="Harm by omission", parent=parent, position=11),
            "Power": Code.objects.create(project=world.project, name="Power", parent=parent, position=12)}


def test_analysts_tick_and_untick_a_code_for_the_whole_interview(world, features, client_for, analyst):
    c = client_for(analyst)
    power = features["Power"]
    response = c.post(toggle_url(world), {"code": str(power.uuid), "on": "1"})
    assert response.status_code == 200 and "checked" in response.content.decode()
    assert c.post(toggle_url(world), {"code": str(power.uuid), "on": "1"}).status_code == 200  # twice: still one
    assert list(CaseCoding.objects.values_list("interview_id", "code_id", "coder__username")) == [
        (world.interviews["gpt"].pk, power.pk, analyst.username)]
    c.post(toggle_url(world), {"code": str(power.uuid)})
    assert not CaseCoding.objects.exists()


def test_outsiders_get_404_viewers_403_bad_codes_400(world, features, client_for, outsider, viewer, analyst):
    data = {"code": str(features["Power"].uuid), "on": "1"}
    assert client_for(outsider).post(toggle_url(world), data).status_code == 404
    assert client_for(viewer).post(toggle_url(world), data).status_code == 403
    response = client_for(analyst).post(toggle_url(world), {"code": "not-a-uuid", "on": "1"})
    assert response.status_code == 400 and "Choose a code of this project's codebook" in response.content.decode()
    assert not CaseCoding.objects.exists()


def test_matrix_page_and_exports(world, features, client_for, owner, analyst, viewer, outsider):
    power, harm = features["Power"], features["Harm by omission"]
    for user in (owner, analyst):
        CaseCoding.objects.create(interview=world.interviews["gpt"], code=power, coder=user)
    CaseCoding.objects.create(interview=world.interviews["claude"], code=harm, coder=owner)
    query = {"codes": str(features["parent"].uuid), "subcodes": "1"}
    html = client_for(viewer).get(matrix_url(world), query).content.decode()
    assert 'id="case-table"' in html and "Harm by omission" in html and "✓ 2" in html and 'type="checkbox" name="on"' not in html
    assert client_for(outsider).get(matrix_url(world), query).status_code == 404
    export = reverse("reports:cases_export", args=[world.project.uuid])
    data = b"".join(client_for(viewer).get(export, {**query, "format": "csv"}).streaming_content).decode("utf-8-sig")
    rows = {r[0]: r for r in csv.reader(io.StringIO(data))}
    assert rows["Interview"] == ["Interview", "Participant", "Case features", "Harm by omission", "Power"]
    assert rows["GPT on home"][1:] == ["GPT-4o", "0", "0", "2"] and rows["Claude on home"][1:] == ["Claude", "0", "1", "0"]
    xlsx = b"".join(client_for(viewer).get(export, {**query, "format": "xlsx"}).streaming_content)
    sheet = openpyxl.load_workbook(io.BytesIO(xlsx)).active
    assert [c.value for c in sheet[2]] == ["Claude on home", "Claude", 0, 1, 0]


def test_matrix_query_count_is_flat(world, features, client_for, analyst):
    c = client_for(analyst)
    query = {"codes": str(features["parent"].uuid), "subcodes": "1"}
    with CaptureQueriesContext(connection) as before:
        c.get(matrix_url(world), query)
    for key in ("gpt", "claude"):
        CaseCoding.objects.create(interview=world.interviews[key], code=features["Power"], coder=analyst)
    with CaptureQueriesContext(connection) as after:
        c.get(matrix_url(world), query)
    assert len(before) == len(after) <= 8  # session, user, membership, participants, interviews, codes, case codings, badge


def test_the_matrix_shows_a_page_of_interviews_at_a_time_and_the_export_holds_them_all(
        world, features, client_for, analyst, monkeypatch):
    from reports import views

    monkeypatch.setattr(views, "CASE_ROWS", 1)  # the world's interviews, one to a page
    c = client_for(analyst)
    power = features["Power"]
    titles = sorted(Interview.objects.filter(project=world.project, deleted_at__isnull=True).values_list("title", flat=True))
    CaseCoding.objects.create(interview=world.interviews["gpt"], code=power, coder=analyst)
    query = {"codes": str(power.uuid)}
    seen = []
    for number in range(1, len(titles) + 1):
        html = c.get(matrix_url(world), {**query, "page": str(number)}).content.decode()
        rows = [t for t in titles if f'<th scope="row" class="sticky">{t}</th>' in html]
        assert len(rows) == 1, (number, rows)
        seen += rows
        assert f"of {len(titles)} · page {number} of {len(titles)}" in html
        if number < len(titles):
            # The next page keeps the codes chosen, and the matrix fragment swaps itself.
            assert f'href="{matrix_url(world)}?codes={power.uuid}&amp;page={number + 1}"' in html
            assert 'hx-target="#case-matrix"' in html
    assert sorted(seen) == titles
    assert "page=" not in html[html.index("Export:"):]
    export = reverse("reports:cases_export", args=[world.project.uuid])
    data = b"".join(c.get(export, {**query, "format": "csv"}).streaming_content).decode("utf-8-sig")
    assert len(list(csv.reader(io.StringIO(data)))) == 1 + len(titles)
