# The fixtures are imported from test_frequency_groups and tables_world; pytest injects them by argument name.
# ruff: noqa: F811
"""The study's Table 2 as published: sections by the label the model predicted, columns by the ground truth, and
infinite log ratios printed as the paper prints them ("–INF"), in every download format and on the page."""

from __future__ import annotations

import csv
import io
import math
import xml.etree.ElementTree as ET

import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from docx import Document
from PIL import Image

from coding.models import Code
from projects import live
from reports.frequency import FrequencySpecError, format_ratio
from reports.heatmap import heatmap_png, heatmap_svg
from reports.tests.tables_world import code, seg
from reports.tests.test_frequency_groups import Reviews, by_label, export, reviews, table  # noqa: F401 - fixture
from reports.tests.test_views import compiles
from reports.writers.latex import latex_escape

pytestmark = pytest.mark.django_db

RATIOS = "by=interview:author_gender&a=W&b=M"
SECTIONED = RATIOS + "&sections=interview:predicted"


@pytest.fixture
def predicted(reviews) -> Reviews:
    """The label the model gave each review: W1 "woman"; W2 and M1 "man"; M2 "unsure" (M2 has nothing coded).

    Section "man" (W2, M1): coded segments W 2 {love, kind}, M 2 {unacceptable, fix}.
      Emotion W 1, M 2: ln((1/2)/(2/2)) = ln 0.5 = -0.69. Expressive, Courtesy W 1, M 0: +inf. Aggression W 0, M 2: -inf.
    Section "woman" (W1): W 2 {hurt, thanks}, M 0: group B has no coded segments, every ratio undefined.
    Section "unsure" (M2): nothing coded.
    """
    for name, label in (("W1", "woman"), ("W2", "man"), ("M1", "man"), ("M2", "unsure")):
        iv = reviews.interviews[name]
        iv.metadata = {**iv.metadata, "predicted": label}
        iv.save(update_fields=["metadata"])
    return reviews


def rows_of_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


def sheet_values(data: bytes) -> list[list]:
    return [[c.value for c in r] for r in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()]


def docx_rows(data: bytes) -> list[list[str]]:
    return [[c.text for c in r.cells] for r in Document(io.BytesIO(data)).tables[0].rows]


# --- sections -----------------------------------------------------------------------------------------


def test_sections_count_each_value_of_the_second_attribute_on_its_own(predicted):
    t = table(predicted, SECTIONED)
    assert [s.label for s in t.sections] == ["man", "unsure", "woman"] and t.sections_label == "Interview: predicted"
    man, unsure, woman = t.sections
    assert man.totals == [2, 2] and (man.total_a, man.total_b) == (2, 2)
    assert [(r.label, r.counts) for r in man.rows] == [("Emotion", [2, 1]), ("Expressive", [0, 1]), ("Aggression", [2, 0]),
                                                        ("Courtesy", [0, 1])]
    rows = {r.label: r.ratio for r in man.rows}
    assert rows["Emotion"].value == pytest.approx(math.log(0.5))
    assert rows["Expressive"].value == math.inf and rows["Aggression"].value == -math.inf
    # Only the rows found in a section: Aggression is not in W1; M2 has nothing coded.
    assert [r.label for r in woman.rows] == ["Emotion", "Expressive", "Courtesy"] and woman.totals == [0, 2]
    assert all(r.ratio.value is None for r in woman.rows)  # group B (M) has no coded segments there
    assert unsure.rows == [] and unsure.totals == [0, 0]
    # The whole table (the heatmap's) is the flat one: the sections add up to it.
    flat = table(predicted, RATIOS)
    assert [(r.label, r.counts, r.ratio) for r in t.rows] == [(r.label, r.counts, r.ratio) for r in flat.rows]
    assert t.totals == flat.totals and "Sections: Interview: predicted" in t.note() and not flat.sections


def test_sections_must_be_another_existing_attribute(predicted, client_for, owner):
    with pytest.raises(FrequencySpecError, match="columns are already by Interview: author_gender"):
        table(predicted, "by=interview:author_gender&sections=interview:author_gender")
    with pytest.raises(FrequencySpecError, match="sections: there is no attribute 'interview:mood'"):
        table(predicted, "sections=interview:mood")
    with pytest.raises(FrequencySpecError, match="infinity: 'infinite' is not one of words, symbol, paper, inf"):
        table(predicted, RATIOS + "&infinity=infinite")
    c = client_for(owner)
    url = reverse("reports:frequency_export", args=[predicted.project.uuid])
    response = c.get(url, {"format": "csv", "sections": "interview:mood"})
    assert response.status_code == 400 and "no attribute 'interview:mood'" in response.content.decode()
    page = c.get(reverse("reports:frequency", args=[predicted.project.uuid]), {"sections": "interview:mood"})
    assert page.status_code == 400 and "no attribute &#x27;interview:mood&#x27;" in page.content.decode()
    api = c.get(f"/api/projects/{predicted.project.uuid}/reports/frequency/", {"infinity": "infinite"})
    assert api.status_code == 400 and "infinity" in api.json()["detail"]


def test_sectioned_spreadsheets_name_each_rows_section_and_keep_numbers(predicted, client_for, owner):
    c = client_for(owner)
    rows = rows_of_csv(export(c, predicted, "csv", SECTIONED + "&infinity=paper"))
    assert rows[0][:3] == ["Section", "Code", "M n"]
    body = [r for r in rows[1:] if r and not r[0].startswith("Note: ")]
    assert [r[:2] for r in body] == [
        ["man", "Emotion"], ["man", "— Expressive"], ["man", "— Aggression"], ["man", "Courtesy"], ["man", "Coded segments"],
        ["unsure", "Coded segments"],
        ["woman", "Emotion"], ["woman", "— Expressive"], ["woman", "Courtesy"], ["woman", "Coded segments"]]
    # Emotion in "man": ln((1/2)/(2/2)); SE = sqrt(1/1 - 1/2 + 1/2 - 1/2) = 0.7071; ±1.96·0.7071 = ±1.39.
    assert body[0][8:] == ["-0.69", "-2.08", "0.69", ""] and body[1][8] == "INF" and body[2][8] == "–INF"
    assert body[5][2:8] == ["0", "", "0", "", "0", "0"]  # the empty section: its totals
    assert any(r and r[0].startswith("Note: ") and "Sections: Interview: predicted" in r[0] for r in rows)
    values = sheet_values(export(c, predicted, "xlsx", SECTIONED + "&infinity=paper"))
    assert values[0][:2] == ["Section", "Code"]
    assert values[1][:2] == ["man", "Emotion"] and values[1][8] == -0.69  # a number, not text
    assert values[2][8] == "INF" and values[3][8] == "–INF" and values[6][:3] == ["unsure", "Coded segments", 0]


def test_sectioned_paper_formats_head_each_section(predicted, client_for, owner, tmp_path):
    c = client_for(owner)
    tex = export(c, predicted, "tex", SECTIONED + "&infinity=paper").decode()
    man, unsure, woman = (tex.index(r"\multicolumn{7}{@{}l@{}}{\textbf{" + s + r"}}\\") for s in ("man", "unsure", "woman"))
    assert man < unsure < woman and tex[:man].endswith("\\endlastfoot\n")  # the first under the header's rule
    assert tex[unsure - len("\\midrule\n"):unsure] == "\\midrule\n"
    assert "--- Aggression & 2 (100.0\\%) & 0 (0.0\\%) & 0 & 2 & --INF &  \\\\" in tex
    assert tex[unsure:woman].count("(no codes in these interviews)") == 1
    compiles(tex, tmp_path)
    document = Document(io.BytesIO(export(c, predicted, "docx", SECTIONED + "&infinity=symbol")))
    cells = [[cell.text for cell in r.cells] for r in document.tables[0].rows]
    assert cells[0] == ["Code", "M", "W", "A n", "B n", "ln(A/B)", "95% CI"]
    assert cells[1] == ["man"] * 7  # one cell across the row (python-docx repeats a merged cell)
    assert document.tables[0].rows[1].cells[0]._tc.xpath("./w:tcPr/w:gridSpan/@w:val") == ["7"]
    assert cells[2][0] == "Emotion" and cells[2][5] == "−0.69"
    assert cells[3][5] == "+∞" and cells[4][5] == "−∞"
    at = next(i for i, r in enumerate(cells) if r[0] == "unsure")
    assert cells[at + 1][0] == "(no codes in these interviews)" and cells[at + 2][:3] == ["Coded segments", "0", "0"]
    assert any("Sections: Interview: predicted" in p.text for p in document.paragraphs)


def test_the_page_shows_the_sections_with_an_empty_one(predicted, client_for, owner):
    c = client_for(owner)
    url = reverse("reports:frequency", args=[predicted.project.uuid])
    html = c.get(f"{url}?{SECTIONED}&infinity=paper").content.decode()
    table_html = html.split('id="frequency-table"')[1].split("</table>")[0]
    headings = [part.split("</th>")[0].split(">")[-1] for part in table_html.split('class="section-heading"')[1:]]
    assert headings == ["man", "unsure", "woman"]
    unsure = table_html.split('class="section-heading"')[2]
    assert "No codes in these interviews." in unsure and "Emotion" not in unsure
    assert "+INF" in table_html and "–INF" in table_html and "<tfoot>" not in table_html
    assert '<option value="interview:predicted" selected>' in html
    assert '<option value="interview:author_gender"' not in html.split('id="freq-sections"')[1].split("</select>")[0]
    flat = c.get(f"{url}?{RATIOS}").content.decode()
    assert 'class="section-heading"' not in flat and "<tfoot>" in flat and "only in A" in flat


def test_a_hostile_section_name_is_text_in_every_format(predicted, client_for, owner, tmp_path):
    hostile = '=HYPERLINK("http://evil.example/","x") & {b}_%'
    for name in ("W2", "M1"):
        iv = predicted.interviews[name]
        iv.metadata = {**iv.metadata, "predicted": hostile}
        iv.save(update_fields=["metadata"])
    c = client_for(owner)
    rows = rows_of_csv(export(c, predicted, "csv", SECTIONED))
    assert {r[0] for r in rows[1:] if r and not r[0].startswith("Note: ")} == {"'" + hostile, "unsure", "woman"}
    values = sheet_values(export(c, predicted, "xlsx", SECTIONED))
    assert all(not str(r[0]).startswith("=") for r in values)
    tex = export(c, predicted, "tex", SECTIONED).decode()
    assert r"\textbf{" + latex_escape(hostile) + "}" in tex and r"\& \{b\}\_\%}" in tex
    compiles(tex, tmp_path)
    assert docx_rows(export(c, predicted, "docx", SECTIONED))[1][0] == hostile
    page = c.get(reverse("reports:frequency", args=[predicted.project.uuid]) + "?" + SECTIONED).content.decode()
    assert "=HYPERLINK(&quot;http://evil.example/&quot;,&quot;x&quot;) &amp; {b}_%</th>" in page


def test_the_heatmap_draws_each_section_under_its_name(predicted, client_for, owner):
    t = table(predicted, SECTIONED)
    svg = heatmap_svg(t, "Codes")
    ET.fromstring(svg)  # well-formed
    names = [e.text or e.find("{http://www.w3.org/2000/svg}title").tail
             for e in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text") if e.get("font-weight") == "700"]
    assert names == ["man", "unsure", "woman"] and "(no codes in these interviews)" in svg
    assert svg.count("<rect") == 1 + (4 + 3) * 2  # the background, then man's 4 rows and woman's 3 over 2 columns
    # Each section's own shares: Expressive is 1 of W's 2 coded segments in "man" (50%), not 2 of 4 overall.
    assert "Expressive · W: 1 (50%)" in svg
    flat = Image.open(io.BytesIO(heatmap_png(table(predicted, RATIOS))))
    sectioned = Image.open(io.BytesIO(heatmap_png(t)))
    assert sectioned.height > flat.height and sectioned.format == "PNG"
    data = export(client_for(owner), predicted, "svg", SECTIONED)
    assert b"font-weight=\"700\"" in data


def test_the_sectioned_page_costs_the_queries_of_the_flat_one(predicted, client_for, owner):
    c = client_for(owner)
    url = reverse("reports:frequency", args=[predicted.project.uuid])

    def count(query: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert c.get(f"{url}?{query}").status_code == 200
        return len(ctx)

    flat = count(RATIOS + "&infinity=words")
    sectioned = count(SECTIONED)
    for name in ("W1", "M2"):
        code(predicted.codes["Courtesy"], seg(predicted.interviews[name], "The"), owner)
    live.publish(predicted.project.uuid, "coding")  # as coding.services does after every coding write
    assert count(SECTIONED + "&infinity=symbol") == sectioned == flat <= 8


def test_api_gives_each_sections_rows(predicted, client_for, owner):
    data = client_for(owner).get(f"/api/projects/{predicted.project.uuid}/reports/frequency/?{SECTIONED}").json()
    assert [s["label"] for s in data["sections"]] == ["man", "unsure", "woman"]
    man = data["sections"][0]
    assert man["totals"] == [2, 2] and [r["log_ratio"] for r in man["rows"]] == [-0.6931, "+inf", "-inf", "+inf"]
    assert data["sections"][1]["rows"] == [] and len(data["rows"]) == 4
    assert "sections" not in client_for(owner).get(f"/api/projects/{predicted.project.uuid}/reports/frequency/").json()


# --- infinities ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("infinity, sheet, text, tex", [
    ("words", ("", ""), ("only in A", "only in B"), ("only in A", "only in B")),
    ("symbol", ("∞", "−∞"), ("+∞", "−∞"), (r"$+\infty$", r"$-\infty$")),
    ("paper", ("INF", "–INF"), ("+INF", "–INF"), ("+INF", "--INF")),
    ("inf", ("inf", "-inf"), ("inf", "-inf"), ("inf", "-inf")),
])
def test_infinite_ratios_in_the_chosen_spelling_in_every_format(reviews, client_for, owner, infinity, sheet, text, tex,
                                                                 tmp_path):
    """Expressive is only in W (group A), Aggression only in M (group B); Emotion's ratio is finite, ln 0.5."""
    c = client_for(owner)
    query = f"{RATIOS}&infinity={infinity}"
    by = {r[0]: r for r in rows_of_csv(export(c, reviews, "csv", query)) if r}
    assert (by["— Expressive"][7], by["— Aggression"][7]) == sheet and by["Emotion"][7] == "-0.69"
    assert (by["— Expressive"][-1], by["— Aggression"][-1]) == ("only in A", "only in B")  # the flag column stays
    values = {r[0]: r for r in sheet_values(export(c, reviews, "xlsx", query))}
    assert (values["— Expressive"][7], values["— Aggression"][7]) == tuple(v or None for v in sheet)
    assert values["Emotion"][7] == -0.69
    cells = {r[0]: r for r in docx_rows(export(c, reviews, "docx", query))}
    assert (cells["— Expressive"][5], cells["— Aggression"][5]) == text and cells["Emotion"][5] == "−0.69"
    latex = export(c, reviews, "tex", query).decode()
    assert f"— Expressive & 0 (0.0\\%) & 2 (50.0\\%) & 2 & 0 & {tex[0]} &  \\\\" in latex.replace("---", "—")
    assert f"— Aggression & 2 (100.0\\%) & 0 (0.0\\%) & 0 & 2 & {tex[1]} &  \\\\" in latex.replace("---", "—")
    compiles(latex, tmp_path)
    html = c.get(reverse("reports:frequency", args=[reviews.project.uuid]) + "?" + query).content.decode()
    ratios = [cell.split("</td>")[0] for cell in html.split('class="num ratio">')[1:]]
    assert ratios == [format_ratio(math.log(0.5)), text[0], text[1], text[0]]  # Courtesy: only in W, as Expressive


def test_zero_over_zero_is_undefined_not_infinite_whatever_the_spelling(reviews, client_for, owner, tmp_path):
    Code.objects.create(project=reviews.project, name="Unused", position=9)
    c = client_for(owner)
    query = f"{RATIOS}&infinity=symbol"
    rows = rows_of_csv(export(c, reviews, "csv", query))
    unused = next(r for r in rows if r and r[0] == "Unused")
    assert unused[5:] == ["0", "0", "", "", "", "undefined"]
    note = next(r[0] for r in rows if r and r[0].startswith("Note: "))
    assert "undefined, not infinite: neither group has the code (0/0)" in note and "+∞ (or −∞): only group A" in note
    assert {r[0]: r for r in sheet_values(export(c, reviews, "xlsx", query))}["Unused"][7] is None
    cells = {r[0]: r for r in docx_rows(export(c, reviews, "docx", query))}
    assert cells["Unused"][5] == "—"
    latex = export(c, reviews, "tex", query).decode()
    assert "Unused & 0 (0.0\\%) & 0 (0.0\\%) & 0 & 0 & --- &  \\\\" in latex and "(0/0)" in latex
    compiles(latex, tmp_path)
    html = c.get(reverse("reports:frequency", args=[reviews.project.uuid]) + "?" + query).content.decode()
    assert html.split("Unused</th>")[1].split('class="num ratio">')[1].startswith("—</td>")
    assert "(0/0)" in html.split('id="frequency-note"')[1]
    # Without undefined rows the note does not speak of them; with the default spelling it adds no infinity legend.
    Code.objects.filter(name="Unused").delete()
    plain = rows_of_csv(export(c, reviews, "csv", RATIOS))
    note = next(r[0] for r in plain if r and r[0].startswith("Note: "))
    assert "0/0" not in note and "only group A" not in note


def test_rows_go_by_log_ratio_or_count_each_under_its_parent(predicted, client_for, owner):
    man = table(predicted, SECTIONED + "&order=ratio").sections[0]
    # Only in A (W) first, the finite ratios A's most first, only in B last; Expressive and Aggression stay under Emotion.
    assert [(r.label, r.depth) for r in man.rows] == [("Courtesy", 0), ("Emotion", 0), ("Expressive", 1), ("Aggression", 1)]
    assert [r.label for r in table(predicted, SECTIONED + "&order=count").sections[0].rows] == [
        "Emotion", "Aggression", "Expressive", "Courtesy"]
    assert [r.label for r in table(predicted, SECTIONED).sections[0].rows] == ["Emotion", "Expressive", "Aggression", "Courtesy"]
    assert "Rows by ln(A/B), A's most first, each under its parent." in table(predicted, RATIOS + "&order=ratio").note()
    with pytest.raises(FrequencySpecError, match="only when both groups A and B are chosen"):
        table(predicted, "by=interview:author_gender&a=W&order=ratio")
    csv_rows = rows_of_csv(export(client_for(owner), predicted, "csv", SECTIONED + "&order=ratio"))
    assert [row[1] for row in csv_rows[1:5]] == ["Courtesy", "Emotion", "— Expressive", "— Aggression"]
    page = client_for(owner).get(reverse("reports:frequency", args=[predicted.project.uuid]) + "?" + SECTIONED + "&order=ratio")
    assert '<option value="ratio" selected>' in page.content.decode()
