"""Trajectories of a code set: each interview's moves answer by answer and the transition table, against counts made
by hand; the page, its exports, and what outsiders and bad input get."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from coding.models import Code
from interviews.models import Participant
from reports.frequency import Population
from reports.tests.tables_world import _interview, code, seg
from reports.trajectories import TrajectorySpecError, spec_from_query, trajectories

pytestmark = pytest.mark.django_db


@dataclass
class Moves:
    project: object
    codes: dict[str, Code]
    interviews: dict[str, object]


@pytest.fixture
def moves(project, owner) -> Moves:
    """GPT: answers [Elicit+Bracket], [Hedge], [], [Refuse]; Claude: [Hedge], [Refuse+Elicit]."""
    gpt = Participant.objects.create(project=project, label="GPT-4o")
    claude = Participant.objects.create(project=project, label="Claude")
    parent = Code.objects.create(project=project, name="Negotiation moves", position=0)
    codes = {name: Code.objects.create(project=project, name=name, parent=parent, position=i, colour=colour)
             for i, (name, colour) in enumerate([("Elicit", "#1b9e77"), ("Bracket", "#d95f02"), ("Hedge", "#7570b3"),
                                                 ("Refuse", "#e7298a")], start=1)}
    codes["Negotiation moves"] = parent
    g = _interview(project, gpt, "GPT on bias", ["Tell me more. I would bracket that.", "Maybe it depends.",
                                                 "Nothing here.", "I cannot do that."], owner)
    c = _interview(project, claude, "Claude on bias", ["Maybe so.", "I cannot help. Tell me more."], owner)
    for iv, fragment, name in [(g, "Tell me more.", "Elicit"), (g, "I would bracket", "Bracket"), (g, "Maybe it", "Hedge"),
                               (g, "I cannot do", "Refuse"), (c, "Maybe so.", "Hedge"), (c, "I cannot help.", "Refuse"),
                               (c, "Tell me more.", "Elicit")]:
        code(codes[name], seg(iv, fragment), owner)
    return Moves(project=project, codes=codes, interviews={"gpt": g, "claude": c})


def run(m: Moves, query: str):
    population = Population.of(m.project)
    codes = list(Code.objects.for_project(m.project).order_by("position", "name"))
    spec = spec_from_query(codes, population, QueryDict(query))
    return trajectories(m.project, spec, population=population, codes=codes)


def table(t) -> dict[tuple[str, str], tuple[list[int], list[int]]]:
    return {(r.source.name, r.target.name): (r.counts, r.occurrences) for r in t.transitions}


def test_sequences_answer_by_answer(moves):
    t = run(moves, f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1")
    names = {c.pk: c.name for c in t.codes}
    seqs = {s.title: [[names[c] for c in a] for a in s.answers] for s in t.sequences}
    assert seqs == {"GPT on bias": [["Elicit", "Bracket"], ["Hedge"], [], ["Refuse"]],
                    "Claude on bias": [["Hedge"], ["Refuse", "Elicit"]]}


def test_transitions_within_one_answer_hand_counted(moves):
    t = run(moves, f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1&within=1")
    assert [c.label for c in t.columns] == ["Claude", "GPT-4o"]
    # GPT: Elicit, Bracket (answer 1) -> Hedge (answer 2); Claude: Hedge (1) -> Refuse, Elicit (2).
    # Occurrences per column [Claude, GPT]: Elicit [1, 1], Bracket [0, 1], Hedge [1, 1], Refuse [1, 1].
    assert table(t) == {
        ("Elicit", "Hedge"): ([0, 1], [1, 1]),
        ("Bracket", "Hedge"): ([0, 1], [0, 1]),
        ("Hedge", "Elicit"): ([1, 0], [1, 1]),
        ("Hedge", "Refuse"): ([1, 0], [1, 1]),
    }
    elicit_hedge = t.transitions[0]
    assert elicit_hedge.shares == [0.0, 1.0] and elicit_hedge.total_share == 0.5


def test_a_wider_window_reaches_past_an_answer_without_moves(moves):
    t = run(moves, f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1&within=2")
    # GPT's Hedge (answer 2) now reaches Refuse (answer 4) across the empty answer 3.
    assert table(t)[("Hedge", "Refuse")] == ([1, 1], [1, 1])
    assert ("Elicit", "Refuse") not in table(t)  # answer 1 + 2 = 3: Refuse is in answer 4
    t = run(moves, f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1&within=3")
    assert table(t)[("Elicit", "Refuse")] == ([0, 1], [1, 1])


def test_columns_by_an_interview_attribute(moves):
    for key, condition in (("gpt", "X"), ("claude", "X")):
        moves.interviews[key].metadata = {"condition": condition}
        moves.interviews[key].save(update_fields=["metadata"])
    t = run(moves, f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1&by=interview:condition")
    assert [c.label for c in t.columns] == ["X"] and table(t)[("Hedge", "Refuse")] == ([1], [2])


def test_bad_choices_say_what_is_wrong(moves):
    with pytest.raises(TrajectorySpecError, match="between 1 and 20"):
        run(moves, "within=0")
    with pytest.raises(TrajectorySpecError, match="whole number"):
        run(moves, "within=two")
    with pytest.raises(TrajectorySpecError, match="no code"):
        run(moves, "codes=nope")


def test_query_count_does_not_grow_with_codings(moves):
    query = f"codes={moves.codes['Negotiation moves'].uuid}&subcodes=1"
    with CaptureQueriesContext(connection) as before:
        run(moves, query)
    code(moves.codes["Hedge"], seg(moves.interviews["gpt"], "Nothing here."), moves.project.created_by)
    with CaptureQueriesContext(connection) as after:
        run(moves, query)
    assert len(before) == len(after) <= 5  # participants, interviews, codes, codings of the set, answers


def test_page_and_exports(moves, client_for, viewer, outsider):
    url = reverse("reports:trajectories", args=[moves.project.uuid])
    query = {"codes": str(moves.codes["Negotiation moves"].uuid), "subcodes": "1"}
    html = client_for(viewer).get(url, query).content.decode()
    assert 'id="trajectory-timeline"' in html and "<svg" in html and 'id="transition-table"' in html
    assert client_for(outsider).get(url, query).status_code == 404
    response = client_for(viewer).get(url, {"within": "99"})
    assert response.status_code == 400 and "between 1 and 20" in response.content.decode()
    export = reverse("reports:trajectory_export", args=[moves.project.uuid])
    data = b"".join(client_for(viewer).get(export, {**query, "format": "csv"}).streaming_content).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(data)))
    assert rows[0][:5] == ["Move A", "Followed by B", "Claude n", "Claude A occurrences", "Claude share"]
    assert rows[1] == ["Elicit", "Hedge", "0", "1", "0.0", "1", "1", "1.0", "1", "2", "0.5"]
    svg = client_for(viewer).get(export, {**query, "format": "svg"})
    assert svg.content.startswith(b"<svg") and "trajectories-" in svg["Content-Disposition"]
    # Every answer is a cell and every move a stripe: GPT 4 answers + Claude 2, 7 moves, 5 legend swatches (the
    # parent is in the set too); the legend fits the picture.
    assert svg.content.count(b"<rect") == 6 + 7 + 5 and b'width="724"' in svg.content
    png = client_for(viewer).get(export, {**query, "format": "png"})
    assert png.content.startswith(b"\x89PNG") and png["Content-Disposition"].endswith('.png"')
    assert client_for(outsider).get(export, {**query, "format": "csv"}).status_code == 404
