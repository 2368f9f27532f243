"""Interview statistics against values computed by hand, and the statistics page."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from interviews.statistics import STAT_COLUMNS, count_syllables, project_statistics, words
from interviews.tests.factories import make_interview, make_participant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("word", "syllables"),
    [("family", 3), ("people", 2), ("share", 1), ("home", 1), ("because", 2), ("tradition", 3),
     ("generations", 4), ("hoped", 1), ("table", 2), ("yesterday", 3), ("café", 2), ("I'm", 1), ("2024", 1), ("家庭", 1)],
)
def test_syllable_counter(word: str, syllables: int) -> None:
    assert count_syllables(word) == syllables


def test_words_ignore_markdown_and_count_links_once() -> None:
    assert words("**Don't** panic — it's a well-being check: see https://example.org/a.b?c=d.\n\n| a | b |\n- item") == [
        "Don't", "panic", "it's", "a", "well-being", "check", "see", "url", "a", "b", "item"]


@pytest.fixture
def fixture_project(project):
    """Two participants; hand-computed values are in the test below."""
    a = make_participant(project, label="Assistant A", model_id="model-a")
    b = make_participant(project, label="Bot B", provider="Meta", model_id="model-b")
    make_interview(project, a, [
        ("interviewer", "How do you define family?"),                        # 5 words
        ("participant", "Family is a group of people. They share a home."),  # 10 words, 2 sentences
        ("interviewer", "Why?"),                                             # 1 word
        ("participant", "Because they care."),                               # 3 words
    ], title="A1", depth="comprehensive")
    make_interview(project, a, [
        ("interviewer", "Tell me about tradition."),                         # 4 words
        ("participant", "Tradition connects generations."),                  # 3 words
    ], title="A2", depth="comprehensive")
    make_interview(project, b, [
        ("interviewer", "Hi there."),                                        # 2 words
        ("participant", "**Hello!** I'm fine."),                             # 3 words, 2 sentences
        ("system", "You are a helpful assistant."),                          # neither side
    ], title="B1", depth="brief")
    return project


def test_statistics_match_hand_computed_values(fixture_project) -> None:
    a, b = project_statistics(fixture_project)
    assert (a.label, a.interviews, a.questions, a.interviewer_words, a.participant_words) == ("Assistant A", 2, 3, 10, 16)
    assert a.avg_words_per_response == pytest.approx(16 / 3)
    assert (a.min_words_per_interview, a.mean_words_per_interview, a.max_words_per_interview) == (3, 8, 13)
    assert a.questions_spread == (1, 1.5, 2)  # A1 asks 2 questions, A2 asks 1
    assert a.interviewer_words_spread == (4, 5, 6)  # A1: 5 + 1, A2: 4
    # 4 sentences, 16 words, 26 syllables (family 3, people 2, because 2, tradition 3, connects 2,
    # generations 4, the rest 1), 3 complex words (family, tradition, generations), 79 letters.
    r = a.readability
    assert (r.sentences, r.words, r.syllables, r.complex_words, r.letters) == (4, 16, 26, 3, 79)
    assert r.flesch_kincaid_grade == pytest.approx(0.39 * 4 + 11.8 * 26 / 16 - 15.59)  # 5.145
    assert r.gunning_fog == pytest.approx(0.4 * (4 + 100 * 3 / 16))  # 9.1
    assert r.coleman_liau == pytest.approx(0.0588 * 493.75 - 0.296 * 25 - 15.8)  # 5.8325
    assert (b.label, b.interviews, b.questions, b.interviewer_words, b.participant_words) == ("Bot B", 1, 1, 2, 3)
    # "**Hello!**" and "I'm fine.": 2 sentences, 3 words, 4 syllables (hello 2), 11 letters.
    assert (b.readability.sentences, b.readability.syllables, b.readability.letters) == (2, 4, 11)
    assert b.readability.flesch_kincaid_grade == pytest.approx(0.39 * 1.5 + 11.8 * 4 / 3 - 15.59)
    assert b.readability.coleman_liau == pytest.approx(0.0588 * 1100 / 3 - 0.296 * 200 / 3 - 15.8)


def test_depth_filter(fixture_project) -> None:
    assert [r.label for r in project_statistics(fixture_project, depth="comprehensive")] == ["Assistant A"]
    assert [r.label for r in project_statistics(fixture_project, depth="brief")] == ["Bot B"]


def stats_url(project, **query) -> str:
    return reverse("interviews:statistics", args=[project.uuid]) + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_page_shows_rows_and_filters_by_depth(client_for, viewer, fixture_project) -> None:
    html = client_for(viewer).get(stats_url(fixture_project)).content.decode()
    assert "Assistant A" in html and "Bot B" in html and "5.3" in html  # avg words per response
    html = client_for(viewer).get(stats_url(fixture_project, depth="brief")).content.decode()
    assert "Bot B" in html and "Assistant A" not in html
    assert reverse("reports:statistics_latex", args=[fixture_project.uuid]) + "?depth=brief" in html


def test_outsiders_get_404(client_for, outsider, fixture_project) -> None:
    assert client_for(outsider).get(stats_url(fixture_project)).status_code == 404
    assert client_for(outsider).get(stats_url(fixture_project, format="csv")).status_code == 404


def test_csv_download(client_for, analyst, fixture_project) -> None:
    response = client_for(analyst).get(stats_url(fixture_project, depth="comprehensive", format="csv"))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment;" in response["Content-Disposition"] and "-comprehensive.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == STAT_COLUMNS
    assert rows[1] == ["Assistant A", "OpenAI", "model-a", "2", "3", "10", "16", "5.3", "3", "8.0", "13", "5.1", "9.1", "5.8",
                       "1", "1.5", "2", "4", "5.0", "6"]
    assert len(rows) == 2


def test_xlsx_download(client_for, analyst, fixture_project) -> None:
    from openpyxl import load_workbook

    response = client_for(analyst).get(stats_url(fixture_project, format="xlsx"))
    assert response["Content-Disposition"].endswith('.xlsx"')
    sheet = load_workbook(io.BytesIO(response.content)).active
    values = [[c.value for c in row] for row in sheet.iter_rows()]
    assert values[0] == STAT_COLUMNS
    assert values[2][:7] == ["Bot B", "Meta", "model-b", 1, 1, 2, 3]
    assert values[2][11] == pytest.approx(0.7, abs=0.05)


def test_formula_like_labels_are_neutralised_in_downloads(client_for, analyst, project) -> None:
    make_interview(project, make_participant(project, label="=HYPERLINK(\"http://evil\")"), [("participant", "Hi.")])
    rows = list(csv.reader(io.StringIO(client_for(analyst).get(stats_url(project, format="csv")).content.decode())))
    assert rows[1][0].startswith("'=")


def test_empty_project_says_so(client_for, analyst, project) -> None:
    assert "No interviews" in client_for(analyst).get(stats_url(project)).content.decode()


def test_query_count_does_not_grow_with_interviews(client_for, analyst, fixture_project, django_assert_num_queries) -> None:
    client = client_for(analyst)
    client.get(stats_url(fixture_project))
    # session, user, membership (+project), interviews (+participants), turns, unread-mentions badge
    with django_assert_num_queries(6):
        client.get(stats_url(fixture_project))
    participant = make_participant(fixture_project, label="Extra")
    for i in range(5):
        make_interview(fixture_project, participant, [("interviewer", "Q?"), ("participant", "A.")], title=f"x{i}")
    with django_assert_num_queries(6):
        client.get(stats_url(fixture_project))
