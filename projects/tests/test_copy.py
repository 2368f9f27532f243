"""projects.copy.insert_all: rows in by COPY on PostgreSQL, as bulk_create would put them, keys and times included."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction

from interviews.models import Participant, Segment, Turn
from projects.copy import insert_all

pytestmark = pytest.mark.django_db
LONG_AGO = dt.datetime(2020, 5, 17, 9, 30, tzinfo=dt.UTC)


def test_rows_go_in_with_their_values_and_each_object_learns_its_key(project):
    rows = [Participant(project=project, label=f"Model {i}", attributes={"size": i, "tags": ["a", "é"]}, seed=i,
                        temperature=0.5 if i else None) for i in range(3)]
    insert_all(Participant, rows)
    assert connection.vendor == "postgresql"  # the COPY path; reports/tests/test_laptop.py walks the SQLite one
    assert all(not p._state.adding for p in rows)
    stored = {p.pk: p for p in Participant.objects.filter(pk__in=[p.pk for p in rows])}
    assert [(stored[p.pk].label, stored[p.pk].attributes, stored[p.pk].seed, stored[p.pk].temperature) for p in rows] == [
        ("Model 0", {"size": 0, "tags": ["a", "é"]}, 0, None), ("Model 1", {"size": 1, "tags": ["a", "é"]}, 1, 0.5),
        ("Model 2", {"size": 2, "tags": ["a", "é"]}, 2, 0.5)]
    assert sorted(p.pk for p in rows) == [p.pk for p in rows]  # keys drawn in order from the table's sequence


def test_times_are_set_as_on_save_unless_the_rows_are_raw(project):
    fresh = Participant(project=project, label="Fresh", created_at=LONG_AGO, updated_at=LONG_AGO)
    kept = Participant(project=project, label="Kept", created_at=LONG_AGO, updated_at=LONG_AGO)
    insert_all(Participant, [fresh])
    insert_all(Participant, [kept], raw=True)  # a restore keeps the backed-up times
    fresh.refresh_from_db()
    kept.refresh_from_db()
    assert fresh.created_at > LONG_AGO and fresh.updated_at > LONG_AGO
    assert (kept.created_at, kept.updated_at) == (LONG_AGO, LONG_AGO)


def test_a_row_the_database_refuses_fails_as_any_statement_does_and_leaves_nothing(project):
    Participant.objects.create(project=project, label="GPT-4o")
    with pytest.raises(IntegrityError, match="unique_participant_label"), transaction.atomic():
        insert_all(Participant, [Participant(project=project, label="Claude"), Participant(project=project, label="gpt-4o")])
    assert list(Participant.objects.filter(project=project).values_list("label", flat=True)) == ["GPT-4o"]


def test_a_column_the_database_generates_is_left_to_it(project):
    """The segments' search vector (migration interviews 0007) is no model field: segments in by COPY are found."""
    from coding.queries import search_segments

    interview = project.interviews.create(title="t", participant=Participant.objects.create(project=project, label="P"))
    turn = Turn(interview=interview, position=0, speaker="participant", text="Nurses negotiate rotas.")
    insert_all(Turn, [turn])
    insert_all(Segment, [Segment(interview=interview, turn=turn, position=0, start=0, end=23, text=turn.text,
                                 speaker="participant")])
    assert [row["text"] for row in search_segments(project, "negotiating")] == ["Nurses negotiate rotas."]
