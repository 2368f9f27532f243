# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""The frequency table's counts come from PostgreSQL and a shared cache: the same numbers as a plain recount,
and a new coding shows on the next request."""

from __future__ import annotations

import itertools

import pytest
from django.urls import reverse

from coding.models import Code, Coding
from coding.services import coding_apply
from interviews.models import Speaker
from reports import frequency
from reports.frequency import FrequencySpec, Population, frequency_table
from reports.tests.tables_world import code, seg, world  # noqa: F401 - fixture
from themes.models import ThemeCode

pytestmark = pytest.mark.django_db


@pytest.fixture
def tangled(world):
    """The world with what makes distinct counting hard: a sub-code on a segment its parent also carries (by two
    coders), a code on an interviewer question, a coding from an accepted suggestion and one of a deleted code."""
    w = world
    child = Code.objects.create(project=w.project, name="Feeling / time", parent=w.codes["Feeling"], position=9)
    ThemeCode.objects.create(theme=w.themes["other"], code=child, position=1)
    first = seg(w.interviews["gpt"], "Home is a feeling.")
    code(child, first, w.owner)
    code(child, first, w.analyst)
    code(w.codes["Structure"], first, w.owner)
    question = w.interviews["claude"].segments.filter(speaker=Speaker.INTERVIEWER).first()
    code(w.codes["AI self"], question, w.analyst)
    Coding.objects.create(segment=seg(w.interviews["claude"], "I have no home."), code=child, coder=w.analyst,
                          interview=w.interviews["claude"], origin=Coding.Origin.SUGGESTION)
    gone = Code.objects.create(project=w.project, name="Gone", position=10)
    code(gone, seg(w.interviews["gpt"], "Borders decide a lot."), w.owner)
    Code.objects.filter(pk=gone.pk).update(deleted_at="2026-01-01T00:00:00Z")
    return w


def _recounted(monkeypatch, project, spec: FrequencySpec) -> frequency.FrequencyTable:
    """The table as counted before PostgreSQL did it: every distinct coding into Python, sets unioned per row."""
    with monkeypatch.context() as m:
        m.setattr(frequency, "_count", frequency._count_in_python)
        m.setattr(frequency, "cached_counts", lambda project, name, inputs, count: count())
        return frequency_table(project, spec)


@pytest.mark.parametrize(("level", "denominator", "rollup", "with_suggestions", "by"), list(itertools.product(
    ["code", "theme"], list(frequency.DENOMINATORS), [True, False], [True, False], ["participant", "provider"])))
def test_every_table_shows_the_numbers_of_a_plain_recount(tangled, monkeypatch, level, denominator, rollup,
                                                         with_suggestions, by):
    spec = FrequencySpec(level=level, denominator=denominator, rollup=rollup, with_suggestions=with_suggestions, by=by)
    counted = frequency_table(tangled.project, spec)
    recounted = _recounted(monkeypatch, tangled.project, spec)
    assert counted.totals == recounted.totals
    assert [(r.label, r.counts) for r in counted.rows] == [(r.label, r.counts) for r in recounted.rows]
    assert any(r.total for r in counted.rows)


def test_a_segment_under_a_code_and_its_sub_code_counts_once_for_the_parent(tangled):
    by_label = {r.label: r for r in frequency_table(tangled.project, FrequencySpec()).rows}
    gpt = [c.label for c in frequency_table(tangled.project, FrequencySpec()).columns].index("GPT-4o")
    # "Home is a feeling." (Feeling by two coders, its sub-code by two) and "It grows with time.": two segments.
    assert by_label["Feeling"].counts[gpt] == 2
    assert by_label["Feeling / time"].counts[gpt] == 1


def test_a_code_applied_shows_in_the_table_on_the_next_request(world, client_for, owner):
    client = client_for(owner)
    url = reverse("reports:frequency", args=[world.project.uuid])

    def feeling_in_claude() -> int:
        table = client.get(url).context["table"]
        row = next(r for r in table.rows if r.label == "Feeling")
        return row.counts[[c.label for c in table.columns].index("Claude")]

    assert feeling_in_claude() == 1
    assert feeling_in_claude() == 1  # now from the cache
    iv = world.interviews["claude"]
    coding_apply(project_uuid=world.project.uuid, interview_uuid=iv.uuid, user_id=owner.pk,
                 code_id=world.codes["Feeling"].pk, segment_ids=[seg(iv, "I have no home.").pk])
    assert feeling_in_claude() == 2


def test_a_trashed_interview_leaves_the_table_on_the_next_request(world):
    from projects.trash import trash_move

    assert frequency_table(world.project, FrequencySpec()).totals == [2, 4, 0]
    trash_move(obj=world.interviews["claude"], actor=world.owner)
    table = frequency_table(world.project, FrequencySpec())
    assert [c.label for c in table.columns] == ["GPT-4o", "Llama"] and table.totals == [4, 0]


def test_the_population_is_counted_once_per_request(world, django_assert_num_queries):
    population = Population.of(world.project)
    frequency_table(world.project, FrequencySpec(), population)
    with django_assert_num_queries(1):  # codes; the counts come from the cache
        frequency_table(world.project, FrequencySpec(), population)


def test_a_trashed_code_outside_every_theme_leaves_the_theme_tables_coded_segments(world):
    from projects.trash import trash_move

    loose = Code.objects.create(project=world.project, name="Loose", position=8)
    code(loose, seg(world.interviews["gpt"], "Emoji"), world.owner)
    spec = FrequencySpec(level="theme")
    assert frequency_table(world.project, spec).totals == [2, 5, 0]
    trash_move(obj=loose, actor=world.owner)
    assert frequency_table(world.project, spec).totals == [2, 4, 0]


@pytest.mark.parametrize(("level", "denominator"), list(itertools.product(["code", "theme"], list(frequency.DENOMINATORS))))
def test_sections_show_the_numbers_of_a_plain_recount_and_add_up_to_the_flat_table(tangled, monkeypatch, level,
                                                                                 denominator):
    spec = FrequencySpec(level=level, denominator=denominator, by="participant", sections="interface")
    counted = frequency_table(tangled.project, spec)
    recounted = _recounted(monkeypatch, tangled.project, spec)
    assert [s.label for s in counted.sections] == ["api", "web"]  # Llama by API; GPT-4o and Claude on the web
    for mine, plain in zip(counted.sections, recounted.sections, strict=True):
        assert mine.totals == plain.totals
        assert [(r.label, r.counts) for r in mine.rows] == [(r.label, r.counts) for r in plain.rows]
    flat = frequency_table(tangled.project, FrequencySpec(level=level, denominator=denominator, by="participant"))
    assert counted.totals == flat.totals and [r.counts for r in counted.rows] == [r.counts for r in flat.rows]
    for i in range(len(flat.columns)):
        assert sum(s.totals[i] for s in counted.sections) == flat.totals[i]
    assert any(r.total for s in counted.sections for r in s.rows)
