# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""The excerpt table's first rows (the builder's preview, the API's pages) read the first codes (in their themes) of a
large table, not every coding: they must still be exactly the head of the full table, in every table shape."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from coding.models import Code
from interviews.models import Speaker
from reports import excerpts
from reports.excerpts import excerpt_options, excerpt_rows, spec_from_query
from reports.tests.tables_world import _interview, code, world  # noqa: F401 - fixture
from themes.models import Theme, ThemeCode

pytestmark = pytest.mark.django_db


@pytest.fixture
def bigger(world):
    """The world plus an empty first theme, codes in two themes, a code in no theme and a longer interview."""
    w = world
    Theme.objects.create(project=w.project, name="Absent", position=0)  # sorts before "Belonging as feeling"
    # Also in the last theme: the first themes' codes have rows that sort after the themes between.
    ThemeCode.objects.create(theme=w.themes["other"], code=w.codes["Feeling"], position=1)
    ThemeCode.objects.create(theme=w.themes["other"], code=w.codes["AI self"], position=2)
    loose = Code.objects.create(project=w.project, name="Loose", position=9)
    answer = " ".join(f"Sentence {word} is here." for word in ("one two three four five six seven eight nine ten "
                                                                "eleven twelve thirteen fourteen fifteen sixteen").split())
    long = _interview(w.project, w.claude, "Long answer", [answer, answer], w.owner)
    names = ["Feeling", "Structure", "AI self"]
    for k, s in enumerate(long.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position")):
        # Runs of two under one code, some sentences coded by both coders, every fifth left to the loose code.
        target = loose if k % 5 == 4 else w.codes[names[(k // 2) % 3]]
        code(target, s, w.owner)
        if k % 3 == 0:
            code(target, s, w.analyst)
    return w


TABLES = [
    "",
    "columns=theme&columns=subtheme&columns=code&columns=quote&columns=offsets",
    "columns=code&columns=model&columns=interview&columns=quote",
    "columns=quote&columns=provenance",
    "themes={other}",
    "columns=code&columns=quote&codes={feeling}&codes={loose}",
    "columns=theme&columns=code&columns=quote&participants={claude}",
    "columns=theme&columns=code&columns=quote&coders=analyst_user",
]


def _spec(w, table: str):
    options = excerpt_options(w.project)
    uuids = {"other": w.themes["other"].uuid, "feeling": w.codes["Feeling"].uuid, "claude": w.claude.uuid, "gpt": w.gpt.uuid,
             "loose": Code.objects.get(project=w.project, name="Loose").uuid}
    query = table.format(**uuids).replace("analyst_user", w.analyst.username)
    return spec_from_query(options, QueryDict(query)), options


@pytest.mark.parametrize("table", TABLES)
def test_the_first_rows_are_the_head_of_the_full_table_however_few_codings_each_theme_holds(bigger, table, monkeypatch):
    spec, options = _spec(bigger, table)
    everything = [r.values(spec.columns) for r in excerpt_rows(bigger.project, spec, options=options)]
    assert len(everything) > 5
    # A small fetch walks the table a few codes at a time, growing the codes read and the rows fetched.
    monkeypatch.setattr(excerpts, "FIRST_ROWS_FETCH", 2)
    for codings in (None, 1, 10**6):  # not counted or a large table: walked; a small table: sorted whole
        for limit in range(len(everything) + 2):
            first = excerpt_rows(bigger.project, spec, options=options, limit=limit, codings=codings)
            assert [r.values(spec.columns) for r in first] == everything[:limit], (codings, limit)


def _queries(w, table: str) -> int:
    spec, options = _spec(w, table)
    with CaptureQueriesContext(connection) as captured:
        assert len(list(excerpt_rows(w.project, spec, options=options, limit=1, codings=10**6))) == 1
    return len(captured)


def test_a_large_table_reads_the_first_code_when_it_holds_the_page_and_four_times_more_codes_each_step(bigger):
    # The interviews' columns, the themes' codes in order, the first placed code's codings (AI self: enough).
    assert _queries(bigger, "") == 3
    # A table without themes walks the codes in order, with no query for the themes' codes.
    assert _queries(bigger, "columns=code&columns=quote") == 2
    # GPT's interview has no AI self codings: the first code's query comes back short, the next four codes hold the page.
    assert _queries(bigger, "participants={gpt}") == 4
