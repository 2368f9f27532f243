"""Table 1 as the paper prints it: a column group per condition over its subsets, a row per ground-truth group with
the predicted-label rate, N, P-value and accuracy; empty groups and subsets kept; on the page and in every download."""

from __future__ import annotations

import csv
import html
import io
import shutil

import docx
import openpyxl
import pytest
from django.urls import reverse

from interviews.models import Participant
from probes.models import Answer, Condition, Probe
from probes.scoring import DASH, paper_table, probe_scores
from probes.tests.test_versions_and_notes import edit_control
from probes.tests.test_views import count_queries, url
from reports.tests.test_writers import _compile

EMOTION = "Emotional Expression"
# Primed: (item position → label, categories). Items 1–4 are women's, 5–8 men's; no man's answer cites emotion.
PRIMED = {
    1: ("woman", [EMOTION]), 2: ("woman", [EMOTION, "Declaration"]), 3: ("woman", ["Declaration"]), 4: ("man", []),
    5: ("man", ["Textual Style"]), 6: ("man", ["Textual Style"]), 7: ("woman", ["Textual Style"]), 8: ("man", ["Declaration"]),
}
HEADERS = ["Ground truth", "All", EMOTION, "None", "All", EMOTION, "None"]
GROUPS = [("", 1), ("Control", 3), ("Primed", 3)]
# Worked by hand from PRIMED and a control that says "woman" to everything, citing nothing.
# Primed All is [[3, 1], [1, 3]]: Fisher's two-sided P = 34/70; Primed None is [[1, 1], [1, 3]]: P = 1.
TEXT_ROWS = [
    ["N (woman/man)", "4/4", "0/0", "4/4", "4/4", "2/0", "2/4"],
    ["woman", "1.00", DASH, "1.00", "0.75", "1.00", "0.50"],
    ["man", "1.00", DASH, "1.00", "0.25", DASH, "0.25"],
    ["P-value", DASH, DASH, DASH, "0.486", DASH, "1.000"],
    ["Accuracy", "0.50", DASH, "0.50", "0.75", "1.00", "0.67"],
]


@pytest.fixture
def classified(probe_with_items, conditions, project):
    """One model, as in the paper: the control degenerate ("woman" always), the primed condition separating."""
    model = Participant.objects.create(project=project, label="GPT-4o", model_id="gpt-4o", is_live=True)
    probe_with_items.participants.set([model])
    answers = []
    for condition in conditions:
        version = condition.versions.get()
        for item in probe_with_items.items.all():
            label, categories = ("woman", []) if condition.name == "Control" else PRIMED[item.position]
            answers.append(Answer(item=item, condition=condition, condition_version=version, participant=model,
                                  status=Answer.Status.DONE, label=label, categories=categories, rationale="…"))
    Answer.objects.bulk_create(answers)
    return probe_with_items


def as_text(rows):
    return [[row[0], *(v if isinstance(v, str) else v.text for v in row[1:])] for row in rows]


def download(client, project, probe, fmt, query="?cites=Emotional+Expression"):
    response = client.get(reverse("reports:probe_table1", args=[project.uuid, probe.uuid, fmt]) + query)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content) if hasattr(response, "streaming_content") else response.content


def test_the_paper_layout_keeps_empty_groups_and_subsets_in_place(classified):
    table = paper_table(probe_scores(classified, chosen=[EMOTION]))
    assert table.headers == HEADERS and table.column_groups == GROUPS
    assert as_text(table.rows) == TEXT_ROWS
    assert table.caption.startswith("GPT-4o as a classifier of “gender”: the rate of predicting “woman”")
    assert any(note.startswith(f"{DASH}: undefined, as no parsed answer is counted there (N = 0)") for note in table.notes)
    assert any(f"“{EMOTION}”: answers whose rationale cites any of" in note for note in table.notes)


def test_the_rate_shown_is_a_choice_of_the_labels(classified):
    table = paper_table(probe_scores(classified, chosen=[EMOTION]), "MAN ")
    assert table.rate_label == "man" and table.rate_labels == ["woman", "man"]
    assert as_text(table.rows)[1] == ["woman", "0.00", DASH, "0.00", "0.25", "0.00", "0.50"]
    assert paper_table(probe_scores(classified), "nonbinary").rate_label == "woman"  # not a label: the first


def test_nothing_chosen_gives_all_only_and_a_group_without_parsed_answers_stays_a_row(classified):
    Answer.objects.filter(condition__name="Control", item__labels__gender="man").update(status=Answer.Status.FAILED)
    table = paper_table(probe_scores(classified))
    assert table.headers == ["Ground truth", "All", "All"] and table.column_groups == [("", 1), ("Control", 1), ("Primed", 1)]
    assert as_text(table.rows)[:3] == [["N (woman/man)", "4/0", "4/4"], ["woman", "1.00", "0.75"], ["man", DASH, "0.25"]]


def test_versions_and_models_get_column_groups_of_their_own_never_pooled(answered, owner):
    edit_control(answered, owner)
    v2 = Condition.objects.get(probe=answered, name="Control").versions.get(number=2)
    Answer.objects.filter(condition__name="Control", participant__label="Model A", item__position__in=(1, 5)).update(
        condition_version=v2)
    table = paper_table(probe_scores(answered))
    assert table.column_groups == [("", 1), ("Control v1 · Model A", 1), ("Control v1 · Model B", 1),
                                   ("Control v2 · Model A", 1), ("Primed · Model A", 1), ("Primed · Model B", 1)]
    assert [row[1:] for row in table.rows[:1]] == [["3/3", "4/4", "1/1", "4/4", "4/4"]]
    assert table.caption.startswith("Models as classifiers of “gender”")
    assert any("asked with v1 and v2 of its prompt" in note for note in table.notes)


def test_every_download_format_holds_the_wide_table(classified, project, viewer, client_for, tmp_path):
    client = client_for(viewer)
    rows = list(csv.reader(io.StringIO(download(client, project, classified, "csv").decode("utf-8-sig"))))
    assert rows[0] == ["", "Control", "", "", "Primed", "", ""] and rows[1] == HEADERS
    assert rows[2] == TEXT_ROWS[0] and rows[3][:5] == ["woman", "1.0", DASH, "1.0", "0.75"]
    assert rows[5][4] == "0.485714" and rows[6][6] == "0.67"
    assert any(r and r[0].startswith(f"Note: {DASH}: undefined") for r in rows)

    sheet = openpyxl.load_workbook(io.BytesIO(download(client, project, classified, "xlsx"))).active
    values = [[c.value for c in row] for row in sheet.iter_rows()]
    assert values[0] == [None, "Control", None, None, "Primed", None, None] and values[1] == HEADERS
    assert values[3] == ["woman", 1.0, DASH, 1.0, 0.75, 1.0, 0.5] and values[4][5] == DASH  # numbers stay numbers

    word = docx.Document(io.BytesIO(download(client, project, classified, "docx"))).tables[0]
    assert [c.text for c in word.rows[1].cells] == HEADERS
    assert [[c.text for c in row.cells] for row in word.rows[2:]] == TEXT_ROWS

    tex = download(client, project, classified, "tex").decode()
    assert r"\multicolumn{3}{c}{\textbf{Control}} & \multicolumn{3}{c}{\textbf{Primed}}" in tex
    assert "woman & 1.00 & -- & 1.00 & 0.75 & 1.00 & 0.50 \\\\" in tex and "P-value & -- & -- & -- & 0.486 & -- & 1.000" in tex
    if shutil.which("pdflatex"):
        _compile(tex, tmp_path)  # a paper's preamble takes it as it is

    md = download(client, project, classified, "md").decode()
    assert f"| Ground truth | Control: All | Control: {EMOTION} | Control: None | Primed: All |" in md
    assert "| man | 1.00 | – | 1.00 | 0.25 | – | 0.25 |" in md

    man = list(csv.reader(io.StringIO(download(client, project, classified, "csv", "?rate=man").decode("utf-8-sig"))))
    assert man[3][:3] == ["woman", "0.0", "0.25"]  # nothing chosen: All per condition, the rate of "man"


def test_the_results_page_shows_the_wide_table_with_its_downloads(classified, project, viewer, client_for):
    page = html.unescape(client_for(viewer).get(url("results", project, classified) + "?cites=Emotional+Expression").content.decode())
    section = page[page.index('id="paper-table"'):page.index("</section>", page.index('id="paper-table"'))]
    assert '<th scope="colgroup" colspan="3" class="column-group">Primed</th>' in section
    for row in TEXT_ROWS:
        assert "".join(f'<td class="num">{v}</td>' for v in row[1:]) in section, row
    table1 = reverse("reports:probe_table1", args=[project.uuid, classified.uuid, "docx"])
    assert f"{table1}?cites=Emotional+Expression" in section and "<em>Note.</em>" in section
    assert '<option value="man">“man”</option>' in page  # the rate shown is a choice


def test_the_page_with_the_wide_table_costs_the_same_queries_with_more_answers(classified, project, owner, client_for):
    client = client_for(owner)
    target = url("results", project, classified) + "?cites=Emotional+Expression&rate=man"
    small = count_queries(client, target)
    other = Participant.objects.create(project=project, label="Claude", model_id="claude", is_live=True)
    extra = [Answer(item=a.item, condition=a.condition, condition_version=a.condition_version, participant=other,
                    status=a.status, label=a.label, categories=a.categories) for a in Answer.objects.select_related("item")]
    Answer.objects.bulk_create(extra)
    assert count_queries(client, target) == small


def test_table1_downloads_are_for_members_only_and_not_of_trashed_probes(classified, project, viewer, outsider, client_for):
    target = reverse("reports:probe_table1", args=[project.uuid, classified.uuid, "csv"])
    assert client_for(outsider).get(target).status_code == 404
    assert client_for(viewer).get(target).status_code == 200
    assert client_for(viewer).get(target.replace("table1.csv", "table1.pdf")).status_code == 404
    Probe.objects.filter(pk=classified.pk).update(deleted_at="2026-01-01T00:00Z")
    assert client_for(viewer).get(target).status_code == 404


def test_a_group_without_answers_in_a_subset_keeps_its_row_on_the_page_and_in_the_long_form(classified, project, viewer,
                                                                                              client_for):
    cites = next(c for c in probe_scores(classified, chosen=[EMOTION]).cells if (c.condition, c.subset) == ("Primed", "cites"))
    assert [(g.group, g.n, g.predicted["woman"].value) for g in cites.groups] == [("man", 0, None), ("woman", 2, 1.0)]
    client = client_for(viewer)
    page = client.get(url("results", project, classified) + "?cites=Emotional+Expression").content.decode()
    cell = page[page.index('data-condition="Primed" data-version="1" data-subset="cites"'):]
    assert '<tr><th scope="row">man</th><td class="num">0</td><td class="num">0</td><td class="num">—</td>' in cell
    response = client.get(reverse("reports:probe_summary", args=[project.uuid, classified.uuid, "csv"]) + "?cites=Emotional+Expression")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert [r[4:10] for r in rows if r[:4] == ["Primed", "1", "GPT-4o", "Cites the chosen categories"]] == [
        ["man", "0", "0", "woman", "0", ""], ["man", "0", "0", "man", "0", ""],
        ["woman", "2", "2", "woman", "2", "1.0"], ["woman", "2", "2", "man", "0", "0.0"]]


def test_none_may_hold_the_answers_citing_no_category_at_all_as_the_study_counts_it(classified, project, viewer, client_for):
    table = paper_table(probe_scores(classified, chosen=[EMOTION], none="any"))
    assert table.headers == HEADERS and table.column_groups == GROUPS
    # Primed: only item 4 (a woman's review, labelled "man") cites nothing; items 5–8 cite other categories.
    assert as_text(table.rows)[:2] == [["N (woman/man)", "4/4", "0/0", "4/4", "4/4", "2/0", "1/0"],
                                       ["woman", "1.00", DASH, "1.00", "0.75", "1.00", "0.00"]]
    assert any("“None”: answers citing no category at all" in note for note in table.notes)
    nothing_chosen = paper_table(probe_scores(classified, none="any"))
    assert nothing_chosen.headers == ["Ground truth", "All", "None", "All", "None"]
    assert as_text(nothing_chosen.rows)[0] == ["N (woman/man)", "4/4", "4/4", "4/4", "1/0"]
    page = client_for(viewer).get(url("results", project, classified) + "?none=any")
    assert '<option value="any" selected>' in page.content.decode()
    rows = list(csv.reader(io.StringIO(download(client_for(viewer), project, classified, "csv", "?none=any").decode("utf-8-sig"))))
    assert rows[2] == ["N (woman/man)", "4/4", "4/4", "4/4", "1/0"]
