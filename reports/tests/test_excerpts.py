# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
from __future__ import annotations

import pytest
from django.http import QueryDict

from reports.excerpts import (
    ExcerptSpec,
    ExcerptSpecError,
    excerpt_count,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
    trim_quote,
)
from reports.tests.tables_world import NASTY, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def rows(w, query: str = ""):
    spec = spec_from_query(excerpt_options(w.project), QueryDict(query))
    return spec, list(excerpt_rows(w.project, spec))


def test_contiguous_segments_of_one_turn_are_one_excerpt_with_the_exact_text(world):
    spec, got = rows(world, "columns=code&columns=model&columns=quote")
    feeling = [r for r in got if r.code == "Feeling" and r.model == "GPT-4o"]
    assert len(feeling) == 1
    assert feeling[0].quote == "Home is a feeling. It grows with time."
    assert feeling[0].coders == ["arjun", "olivia"]  # both coders of the first segment, once each


def test_quotes_are_the_turn_text_verbatim(world):
    _, got = rows(world, "codes=" + str(world.codes["Structure"].uuid))
    quotes = {r.quote for r in got}
    assert "Borders decide a lot." in quotes
    assert any(q.startswith("Costs rose 50% & fees_2") and q in NASTY for q in quotes)


def test_theme_columns_place_sub_theme_codes_under_their_parent(world):
    spec, got = rows(world, "columns=theme&columns=subtheme&columns=code&columns=quote")
    table = [r.values(spec.columns) for r in got]
    assert table[0][:3] == ["Belonging as feeling", "", "AI self"]
    assert ["Belonging as feeling", "Personal journey", "Feeling"] == table[1][:3]
    assert table[-1][0] == "Limits"
    assert {r.code for r in got} == {"AI self", "Feeling", "Structure"}


def test_filters_by_theme_model_and_coder(world):
    w = world
    _, by_theme = rows(w, f"themes={w.themes['other'].uuid}")
    assert {r.code for r in by_theme} == {"Structure"}
    _, by_parent = rows(w, f"themes={w.themes['top'].uuid}")  # includes its sub-theme
    assert {r.code for r in by_parent} == {"AI self", "Feeling"}
    _, by_model = rows(w, f"participants={w.claude.uuid}&columns=model&columns=quote")
    assert {r.model for r in by_model} == {"Claude"}
    _, by_coder = rows(w, "coders=arjun")
    assert sorted(r.quote for r in by_coder) == ["Borders decide a lot.", "Home is a feeling."]


def test_exemplars_only(world):
    spec, got = rows(world, "rows=exemplars&columns=theme&columns=subtheme&columns=code&columns=quote")
    assert [r.values(spec.columns) for r in got] == [["Belonging as feeling", "Personal journey", "Feeling", "Home is a feeling."]]
    assert excerpt_count(world.project, spec) == 1


def test_trimming_is_marked(world):
    _, got = rows(world, f"codes={world.codes['Structure'].uuid}&trim=30")
    long = [r.quote for r in got if r.quote.startswith("Costs")][0]
    assert long.endswith(" [...]") and len(long) <= 30 + len(" [...]")
    assert NASTY.startswith(long.removesuffix(" [...]"))
    assert trim_quote("short", 30) == "short"


def test_provenance_names_model_source_turn_and_coders(world):
    _, got = rows(world, "columns=provenance")
    first = [r for r in got if r.quote.startswith("Home is")][0]
    assert first.provenance == ("chatgpt sha256:abababababab; gpt-4o-2024-08-06; OpenAI, Web chat; turn 2; "
                                "coded by arjun, olivia")


@pytest.mark.parametrize("query, message", [
    ("columns=nope", "Unknown column"),
    ("columns=quote&columns=quote", "twice"),
    ("themes=00000000-0000-0000-0000-000000000000", "no theme"),
    ("coders=nobody", "no coder"),
    ("trim=abc", "whole number"),
    ("trim=5", "at least"),
])
def test_bad_choices_say_what_is_wrong(world, query, message):
    with pytest.raises(ExcerptSpecError, match=message):
        spec_from_query(excerpt_options(world.project), QueryDict(query))


def test_trashed_interviews_and_codes_are_left_out(world):
    from django.utils import timezone

    world.interviews["claude"].deleted_at = timezone.now()
    world.interviews["claude"].save(update_fields=["deleted_at"])
    world.codes["Structure"].deleted_at = timezone.now()
    world.codes["Structure"].save(update_fields=["deleted_at"])
    _, got = rows(world, "columns=model&columns=code")
    assert {(r.model, r.code) for r in got} == {("GPT-4o", "Feeling")}


def test_rows_stream_in_one_query_whatever_their_number(world, django_assert_num_queries):
    spec = ExcerptSpec(columns=("theme", "subtheme", "code", "model", "interview", "turn", "quote", "provenance"))
    excerpt_options(world.project)  # who coded is counted once, then kept under the version of the project's coding events
    with django_assert_num_queries(4):  # the builder's options: themes, codes, participants, coders
        options = excerpt_options(world.project)
    with django_assert_num_queries(2):  # the interviews' columns, the rows
        few = list(excerpt_rows(world.project, spec, options=options))
    from reports.tests.tables_world import code, seg

    for text in ("It grows with time.", "Borders decide a lot."):
        code(world.codes["AI self"], seg(world.interviews["gpt"], text), world.owner)
    options = excerpt_options(world.project)
    with django_assert_num_queries(2):
        more = list(excerpt_rows(world.project, spec, options=options))
    assert len(more) > len(few)


def test_a_model_added_after_the_choices_were_loaded_still_exports(world):
    from reports.tests.tables_world import _interview, code, seg

    options = excerpt_options(world.project)  # e.g. loaded by the page before the rows are read
    from interviews.models import Participant

    newcomer = Participant.objects.create(project=world.project, label="Gemini", provider="Google")
    interview = _interview(world.project, newcomer, "Gemini on home", ["Home is data."], world.owner)
    code(world.codes["Feeling"], seg(interview, "Home is data."), world.owner)
    got = list(excerpt_rows(world.project, ExcerptSpec(columns=("model", "quote", "provenance")), options=options))
    assert ("Gemini", "Home is data.") in {(r.model, r.quote) for r in got}


def test_the_count_and_the_coders_are_kept_until_codings_interviews_codes_or_themes_change(world, make_user):
    """Counted once per version of the project's coding events; a trashed interview or code, or a theme's codes, show without a coding write."""
    from coding.models import Coding
    from projects import live
    from projects.trash import trash_move
    from reports.tests.tables_world import code, seg
    from themes.models import ThemeCode

    def plain(**filters) -> int:
        return Coding.objects.filter(interview__project=world.project, interview__deleted_at__isnull=True,
                                     code__deleted_at__isnull=True, **filters).count()

    def count(query: str = "") -> int:
        options = excerpt_options(world.project)
        return excerpt_count(world.project, spec_from_query(options, QueryDict(query)), options)

    assert count() == plain() == 7
    assert count(f"participants={world.claude.uuid}") == plain(interview__participant=world.claude) == 2
    newcomer = make_user("newcomer")
    code(world.codes["Unused"], seg(world.interviews["gpt"], "It grows with time."), newcomer)
    assert count() == 7  # written behind coding.services' back: the kept count stands
    live.publish(world.project.uuid, "coding")  # as coding.services does after every coding write
    assert count() == plain() == 8
    assert "newcomer" in {u.username for u in excerpt_options(world.project).coders}
    trash_move(obj=world.interviews["claude"], actor=world.owner)
    assert count() == plain() == 6
    trash_move(obj=world.codes["Structure"], actor=world.owner)
    assert count() == plain() == 4
    limits = f"themes={world.themes['other'].uuid}"
    assert count(limits) == 0  # Structure, its only code, is in the trash
    ThemeCode.objects.create(theme=world.themes["other"], code=world.codes["Feeling"], position=1)
    assert count(limits) == plain(code=world.codes["Feeling"]) == 3
