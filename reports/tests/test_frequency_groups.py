# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""A Table-2-style table (the reference study's themes by the reviews' ground-truth gender): columns grouped by an
attribute of the interview, roll-up of parent codes, the three denominators, the continuity correction and the
95% interval, all checked against values computed by hand in the comments."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import openpyxl
import pytest
from django.http import QueryDict
from django.urls import reverse

from coding.models import Code
from interviews.models import Interview, Participant
from probes.tests.conftest import answered, conditions, probe, probe_with_items  # noqa: F401 - fixtures
from reports.frequency import FrequencySpecError, Population, format_interval, frequency_table, spec_from_query
from reports.tests.tables_world import _interview, code, seg, world  # noqa: F401 - fixture
from reports.tests.test_views import compiles

pytestmark = pytest.mark.django_db


@dataclass
class Reviews:
    project: object
    interviews: dict[str, Interview]
    codes: dict[str, Code]


@pytest.fixture
def reviews(project, owner) -> Reviews:
    """Four interviews of one model, each about a review whose author's gender (W/M) is the ground truth.

    Answer segments: W1 3, W2 2, M1 4, M2 1 -> W 5, M 5.
    Coded segments: W1 {hurt, thanks}, W2 {love, kind}, M1 {unacceptable, fix} -> W 4, M 2.
    "Emotion" is the parent of "Expressive" and "Aggression"; "Fix it now." carries both Aggression and Emotion.
    """
    gpt = Participant.objects.create(project=project, label="GPT-4o", provider="OpenAI")
    answers = {
        "W1": "I feel so hurt. Thanks a lot! The food was cold.",
        "W2": "I love this place. Staff were kind.",
        "M1": "This is unacceptable. Fix it now. The order was late. Refund me.",
        "M2": "The delivery took an hour.",
    }
    interviews = {}
    for name, text in answers.items():
        iv = _interview(project, gpt, f"Review {name}", [text], owner)
        iv.metadata = {"author_gender": name[0], "wave": 1}
        iv.save(update_fields=["metadata"])
        interviews[name] = iv
    emotion = Code.objects.create(project=project, name="Emotion", position=0)
    codes = {"Emotion": emotion,
             "Expressive": Code.objects.create(project=project, name="Expressive", parent=emotion, position=0),
             "Aggression": Code.objects.create(project=project, name="Aggression", parent=emotion, position=1),
             "Courtesy": Code.objects.create(project=project, name="Courtesy", position=1)}
    for name, fragment, code_name in [
        ("W1", "I feel so hurt.", "Expressive"), ("W1", "Thanks a lot!", "Courtesy"),
        ("W2", "I love this place.", "Expressive"), ("W2", "Staff were kind.", "Courtesy"),
        ("M1", "This is unacceptable.", "Aggression"), ("M1", "Fix it now.", "Aggression"), ("M1", "Fix it now.", "Emotion"),
    ]:
        code(codes[code_name], seg(interviews[name], fragment), owner)
    return Reviews(project=project, interviews=interviews, codes=codes)


def table(r: Reviews, query: str):
    population = Population.of(r.project)
    return frequency_table(r.project, spec_from_query(population, QueryDict(query)), population)


def by_label(t) -> dict:
    return {row.label: row for row in t.rows}


def test_table_2_by_ground_truth_with_hand_computed_ratios_and_intervals(reviews):
    t = table(reviews, "by=interview:author_gender&a=W&b=M")
    assert [c.label for c in t.columns] == ["M", "W"]
    assert t.totals == [2, 4] and (t.total_a, t.total_b) == (4, 2)
    assert [(r.label, r.depth) for r in t.rows] == [("Emotion", 0), ("Expressive", 1), ("Aggression", 1), ("Courtesy", 0)]
    rows = by_label(t)
    # Emotion rolls up its children: W {hurt, love} = 2; M {unacceptable, fix} = 2 ("Fix it now." once).
    assert rows["Emotion"].counts == [2, 2] and rows["Emotion"].percents == [100.0, 50.0]
    # ln((2/4)/(2/2)) = ln 0.5 = -0.6931; SE = sqrt(1/2 - 1/4 + 1/2 - 1/2) = 0.5; ±1.96·0.5 = ±0.98.
    emotion = rows["Emotion"].ratio
    assert emotion.value == pytest.approx(-0.693147, abs=1e-6)
    assert (emotion.low, emotion.high) == (pytest.approx(-1.673129, abs=1e-6), pytest.approx(0.286835, abs=1e-6))
    assert format_interval(emotion) == "[−1.67, +0.29]"
    assert rows["Expressive"].ratio.value == math.inf and rows["Expressive"].ratio.flag == "only in A"
    assert rows["Aggression"].ratio.value == -math.inf and rows["Aggression"].ratio.flag == "only in B"
    assert rows["Expressive"].ratio.low is None
    assert "95% CI: Woolf's log method" in t.note() and "Continuity correction" not in t.note()


def test_continuity_correction_makes_every_ratio_finite(reviews):
    rows = by_label(table(reviews, "by=interview:author_gender&a=W&b=M&correction=1"))
    # Expressive: a = 2 + 0.5 of n_A = 4 + 1, b = 0 + 0.5 of n_B = 2 + 1.
    # ln((2.5/5)/(0.5/3)) = ln 3 = 1.098612; SE = sqrt(1/2.5 - 1/5 + 1/0.5 - 1/3) = sqrt(1.866667) = 1.366260;
    # 1.959964 · 1.366260 = 2.677820 -> [-1.579208, 3.776433].
    expressive = rows["Expressive"].ratio
    assert expressive.value == pytest.approx(1.098612, abs=1e-6)
    assert (expressive.low, expressive.high) == (pytest.approx(-1.579208, abs=1e-5), pytest.approx(3.776433, abs=1e-5))
    # Emotion corrected: ln((2.5/5)/(2.5/3)) = ln 0.6 = -0.510826.
    assert rows["Emotion"].ratio.value == pytest.approx(-0.510826, abs=1e-6)


def test_rollup_off_counts_only_direct_codings(reviews):
    rows = by_label(table(reviews, "by=interview:author_gender&rollup=0"))
    assert rows["Emotion"].counts == [1, 0]  # only "Fix it now." is coded Emotion itself


def test_denominators_interviews_and_answer_segments(reviews):
    t = table(reviews, "by=interview:author_gender&denominator=interviews&a=W&b=M")
    assert t.totals == [2, 2]
    rows = by_label(t)
    # Emotion appears in W1, W2 (2 of 2) and in M1 only (1 of 2): ln((2/2)/(1/2)) = ln 2.
    assert rows["Emotion"].counts == [1, 2] and rows["Emotion"].percents == [50.0, 100.0]
    assert rows["Emotion"].ratio.value == pytest.approx(math.log(2))
    t = table(reviews, "by=interview:author_gender&denominator=codable")
    assert t.totals == [5, 5]  # M: 4 + 1 answer segments, W: 3 + 2
    assert by_label(t)["Emotion"].percents == [40.0, 40.0]
    assert "answer segments" in t.note()


def test_interviews_without_the_attribute_fall_in_not_set(reviews):
    iv = reviews.interviews["M2"]
    iv.metadata = {}
    iv.save(update_fields=["metadata"])
    t = table(reviews, "by=interview:author_gender&denominator=interviews")
    assert [c.label for c in t.columns] == ["M", "W", "(not set)"] and t.totals == [1, 2, 1]


def test_bad_choices_say_what_is_wrong(reviews):
    with pytest.raises(FrequencySpecError, match="no attribute 'interview:colour'"):
        table(reviews, "by=interview:colour")
    with pytest.raises(FrequencySpecError, match="No interview has 'X' as Interview: author_gender"):
        table(reviews, "by=interview:author_gender&a=X")
    with pytest.raises(FrequencySpecError, match="denominator"):
        table(reviews, "denominator=words")


def test_columns_by_a_case_variable_of_the_participant(world):
    for p, family in ((world.gpt, "closed"), (world.claude, "closed"), (world.llama, "open")):
        p.attributes = {"weights": family}
        p.save(update_fields=["attributes"])
    population = Population.of(world.project)
    assert "case:weights" in [a.key for a in population.attributes()]
    t = frequency_table(world.project, spec_from_query(population, QueryDict("by=case:weights")), population)
    assert [c.label for c in t.columns] == ["closed", "open"] and t.totals == [6, 0]  # GPT 4 + Claude 2
    assert by_label(t)["Feeling"].counts == [3, 0]


def test_theme_rows_roll_up_child_codes(reviews, owner):
    from themes.models import Theme, ThemeCode

    theme = Theme.objects.create(project=reviews.project, name="Affect", position=0)
    ThemeCode.objects.create(theme=theme, code=reviews.codes["Emotion"], position=0)
    t = table(reviews, "level=theme&by=interview:author_gender")
    assert t.rows[0].counts == [2, 2]  # Emotion's children count for the theme
    t = table(reviews, "level=theme&by=interview:author_gender&rollup=0")
    assert t.rows[0].counts == [1, 0]


def export(client, r: Reviews, fmt: str, query: str):
    url = reverse("reports:frequency_export", args=[r.project.uuid])
    response = client.get(f"{url}?format={fmt}&{query}")
    assert response.status_code == 200
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_spreadsheets_hold_numbers_only_and_flag_infinite_ratios(reviews, client_for, owner):
    c = client_for(owner)
    data = export(c, reviews, "csv", "by=interview:author_gender&a=W&b=M")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0] == ["Code", "M n", "M %", "W n", "W %", "Group A n", "Group B n", "ln(A/B)", "95% CI low",
                       "95% CI high", "ln(A/B) flag"]
    by = {r[0]: r for r in rows if r}  # the note follows the rows, after a blank line
    assert by["Emotion"][7:] == ["-0.69", "-1.67", "0.29", ""]
    assert by["— Expressive"][5:] == ["2", "0", "", "", "", "only in A"]
    assert by["— Aggression"][-1] == "only in B"
    sheet = openpyxl.load_workbook(io.BytesIO(export(c, reviews, "xlsx", "by=interview:author_gender&a=W&b=M"))).active
    values = {r[0].value: [cell.value for cell in r] for r in sheet.iter_rows()}
    assert values["— Expressive"][5:] == [2, 0, None, None, None, "only in A"]
    assert values["Emotion"][7] == -0.69


def test_latex_states_the_method_in_the_caption(reviews, client_for, owner, tmp_path):
    tex = export(client_for(owner), reviews, "tex", "by=interview:author_gender&a=W&b=M&correction=1").decode()
    assert "Continuity correction" in tex and "Woolf" in tex and "Interview: author\\_gender" in tex
    assert "Expressive & 0 (0.0\\%) & 2 (50.0\\%) & 2 & 0 & +1.10 & {[}\\textminus{}1.58, +3.78{]}" in tex
    compiles(tex, tmp_path)


def test_page_groups_by_an_interview_attribute(reviews, client_for, owner):
    url = reverse("reports:frequency", args=[reviews.project.uuid])
    c = client_for(owner)
    html = c.get(url, {"by": "interview:author_gender", "a": "W", "b": "M"}).content.decode()
    assert "only in A" in html and "only in B" in html and "[−1.67, +0.29]" in html and 'id="frequency-note"' in html
    # Regrouping drops the groups chosen among the old values rather than failing on them.
    response = c.get(url, {"grouped": "interview:author_gender", "by": "provider", "a": "W", "b": "M"},
                     headers={"HX-Request": "true"})
    assert response.status_code == 200 and 'id="frequency-error"' not in response.content.decode()
    assert response.content.decode().lstrip().startswith('<div id="frequency-page"')


def test_interviews_made_from_probe_rationales_group_by_their_ground_truth(answered, project, owner):
    """Table 2 of the probe study: rationales made interviews, coded, counted by the review author's gender."""
    from probes.models import Condition
    from probes.services import condition_to_interviews

    condition_to_interviews(condition=Condition.objects.get(probe=answered, name="Primed"), user=owner)
    emotion = Code.objects.create(project=project, name="Emotional expression", position=0)
    # Every rationale has two sentences; code the first of each woman's review by Model A and of item 5 by both models.
    for interview in Interview.objects.filter(project=project).select_related("participant"):
        truth, position = interview.metadata["attributes"]["gender"], interview.metadata["probe"]["item"]
        if (truth == "woman" and interview.participant.label == "Model A") or position == 5:
            code(emotion, seg(interview, "The author writes"), owner)
    population = Population.of(project)
    assert "interview:gender" in {a.key for a in population.attributes()}
    assert "interview:predicted" in {a.key for a in population.attributes()}
    t = frequency_table(project, spec_from_query(population, QueryDict("by=interview:gender&a=woman&b=man")), population)
    assert [c.label for c in t.columns] == ["man", "woman"]
    assert by_label(t)["Emotional expression"].counts == [2, 4]
