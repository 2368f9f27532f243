# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
from __future__ import annotations

import io
import math

import pytest
from django.http import QueryDict
from PIL import Image

from projects import live
from reports.frequency import (
    FrequencySpec,
    FrequencySpecError,
    Population,
    format_interval,
    format_ratio,
    frequency_table,
    log_ratio,
    spec_from_query,
)
from reports.heatmap import heatmap_png, heatmap_svg
from reports.tests.tables_world import code, seg, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def test_log_ratio_is_the_natural_log_of_the_share_ratio():
    assert log_ratio(2, 10, 1, 10) == pytest.approx(math.log(2))
    assert log_ratio(1, 4, 1, 2) == pytest.approx(math.log(0.5))
    assert log_ratio(3, 9, 1, 3) == pytest.approx(0.0)


def test_log_ratio_infinities_and_undefined():
    assert log_ratio(3, 10, 0, 10) == math.inf
    assert log_ratio(0, 10, 5, 10) == -math.inf
    assert log_ratio(0, 10, 0, 10) is None  # neither group has it
    assert log_ratio(1, 0, 1, 10) is None  # a group without coded segments
    assert [format_ratio(v) for v in (math.inf, -math.inf, None, math.log(2), -math.log(2))] == ["only in A", "only in B", "—", "+0.69", "−0.69"]
    assert format_ratio(0.0) == "0.00"


def test_a_code_in_every_unit_of_both_groups_has_no_interval_rather_than_a_certain_one():
    from reports.frequency import ratio_estimate

    everywhere = ratio_estimate(2, 2, 1, 1)
    assert (everywhere.value, everywhere.low, everywhere.high) == (0.0, None, None)
    assert everywhere.flag == "no interval: in every unit of both groups" and format_interval(everywhere) == "—"
    corrected = ratio_estimate(2, 2, 1, 1, correction=True)
    assert corrected.low < corrected.value < corrected.high and corrected.flag == ""
    one_side = ratio_estimate(2, 2, 1, 3)  # all of A, a third of B: an interval, as the formula gives one
    assert one_side.low < one_side.value < one_side.high and one_side.flag == ""


def test_code_table_counts_coded_segments_once_per_segment(world):
    t = frequency_table(world.project, FrequencySpec())
    assert [c.label for c in t.columns] == ["Claude", "GPT-4o", "Llama"]
    # GPT: 4 coded segments (one coded by two coders), Claude 2, Llama none.
    assert t.totals == [2, 4, 0]
    feeling = next(r for r in t.rows if r.label == "Feeling")
    assert feeling.counts == [1, 2, 0]
    assert feeling.percents[0] == pytest.approx(50.0) and feeling.percents[1] == pytest.approx(50.0)
    assert feeling.percents[2] is None  # Llama has no coded segments: no share
    unused = next(r for r in t.rows if r.label == "Unused")
    assert unused.counts == [0, 0, 0]


def test_a_code_merged_into_another_is_no_row_and_an_archived_one_is_a_marked_row(world, client_for, owner):
    from coding.models import Code
    from coding.services import code_archive, code_merge

    codes = {c.name: c for c in Code.objects.filter(project=world.project)}
    code_merge(source=codes["Structure"], target=codes["Feeling"], actor=owner)
    code_archive(code=codes["AI self"], actor=owner, archived=True)
    t = frequency_table(world.project, FrequencySpec())
    assert [r.label for r in t.rows] == ["Feeling", "AI self", "Unused"]
    assert t.archived == {str(codes["AI self"].uuid)}
    page = client_for(owner).get(f"/p/{world.project.uuid}/reports/frequency/").content.decode()
    assert "AI self <span class=\"muted\">(archived)</span>" in page and "Structure" not in page


def test_group_log_ratio_with_infinities(world):
    w = world
    spec = spec_from_query(Population.of(w.project), QueryDict(f"a={w.gpt.uuid}&b={w.claude.uuid}"))
    t = frequency_table(w.project, spec)
    by = {r.label: r for r in t.rows}
    assert (t.total_a, t.total_b) == (4, 2)
    assert by["Feeling"].log_ratio == pytest.approx(math.log((2 / 4) / (1 / 2)))
    assert by["Structure"].log_ratio == math.inf
    assert by["AI self"].log_ratio == -math.inf
    assert by["Unused"].log_ratio is None


def test_theme_level_rolls_sub_themes_into_their_parent(world):
    t = frequency_table(world.project, FrequencySpec(level="theme"))
    labels = [(r.label, r.depth) for r in t.rows]
    assert labels == [("Belonging as feeling", 0), ("Personal journey", 1), ("Limits", 0)]
    top, sub, limits = t.rows
    # Claude: "I have no home." (AI self, top) + "Belonging is yours" (Feeling, sub) -> 2 at top, 1 in sub.
    assert top.counts == [2, 2, 0] and sub.counts == [1, 2, 0] and limits.counts == [0, 2, 0]


def test_groups_must_be_separate_and_both_chosen(world):
    ps = Population.of(world.project)
    with pytest.raises(FrequencySpecError, match="both groups"):
        spec_from_query(ps, QueryDict(f"a={world.gpt.uuid}&b={world.gpt.uuid}"))
    one_sided = spec_from_query(ps, QueryDict(f"a={world.gpt.uuid}"))
    assert not one_sided.has_ratio and "group B too" in one_sided.hint
    with pytest.raises(FrequencySpecError, match="level"):
        spec_from_query(ps, QueryDict("level=words"))


def test_query_count_does_not_grow_with_codings(world, django_assert_num_queries):
    with django_assert_num_queries(4):  # participants, interviews, codes, the counts
        frequency_table(world.project, FrequencySpec())
    for text in ("It grows with time.", "Borders decide a lot."):
        code(world.codes["AI self"], seg(world.interviews["gpt"], text), world.owner)
    live.publish(world.project.uuid, "coding")  # as coding.services does after every coding write
    with django_assert_num_queries(4):
        frequency_table(world.project, FrequencySpec())
    with django_assert_num_queries(3):  # the counts, kept under the version of the project's coding events
        frequency_table(world.project, FrequencySpec())
    with django_assert_num_queries(6):  # participants, interviews, codes, themes, theme codes, the counts
        frequency_table(world.project, FrequencySpec(level="theme"))
    with django_assert_num_queries(5):  # participants, interviews, codes, the counts, answer segments per interview
        frequency_table(world.project, FrequencySpec(denominator="codable"))


def test_heatmap_svg_escapes_labels_and_png_is_an_image(world):
    world.codes["Unused"].name = "<script>alert(1)</script> & co"
    world.codes["Unused"].save(update_fields=["name"])
    t = frequency_table(world.project, FrequencySpec())
    svg = heatmap_svg(t, "Codes <by> model")
    assert "<script>" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in svg
    assert svg.count("<rect") == 1 + len(t.rows) * len(t.columns)
    import xml.etree.ElementTree as ET

    ET.fromstring(svg)  # well-formed
    image = Image.open(io.BytesIO(heatmap_png(t)))
    assert image.format == "PNG" and image.width > 300 and image.height > 100


def test_heatmap_labels_stay_readable_cut_with_their_full_text_in_a_title(world):
    long_model = "Llama-3.1-405B-Instruct-Turbo via together.ai (2024-07-23)"
    world.llama.label = long_model
    world.llama.save(update_fields=["label"])
    long_code = "Belonging framed as a matter of personal choice rather than of papers, money or welcome"
    world.codes["Unused"].name = long_code
    world.codes["Unused"].save(update_fields=["name"])
    svg = heatmap_svg(frequency_table(world.project, FrequencySpec()))
    import xml.etree.ElementTree as ET

    texts = ET.fromstring(svg).findall("{http://www.w3.org/2000/svg}text")
    labelled = {t.find("{http://www.w3.org/2000/svg}title").text: t.find("{http://www.w3.org/2000/svg}title").tail for t in texts
                if t.find("{http://www.w3.org/2000/svg}title") is not None}
    assert labelled[long_model].endswith("…") and len(labelled[long_model]) < 60
    assert labelled[long_code].endswith("…")
    # Long column labels are turned, so the columns keep the width of their cells.
    assert 'transform="rotate(-45' in svg and 'width="94"' in svg
