"""The database keeps each segment on an existing turn of its own interview (migration 0008's composite key)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from interviews.models import Interview, Segment, Turn
from interviews.tests.factories import make_interview, make_participant

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_interviews(project) -> tuple[Interview, Interview]:
    participant = make_participant(project)
    first = make_interview(project, participant, [("participant", "One answer. Two sentences.")], title="First")
    second = make_interview(project, participant, [("participant", "Another answer.")], title="Second")
    return first, second


def checked_now(write) -> None:
    """Run ``write`` and the deferred foreign-key checks with it, as a commit would."""
    with transaction.atomic():
        write()
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_a_segment_on_a_turn_of_another_interview_is_refused(two_interviews):
    first, second = two_interviews
    turn = first.turns.get()
    with pytest.raises(IntegrityError):
        checked_now(lambda: Segment.objects.create(interview=second, turn=turn, position=5, start=0, end=3,
                                                   text="One", speaker="participant"))


def test_a_segment_on_a_missing_turn_is_refused(two_interviews):
    first, _ = two_interviews
    missing = Turn.objects.order_by("-id").first().id + 1000
    with pytest.raises(IntegrityError):
        checked_now(lambda: Segment.objects.create(interview=first, turn_id=missing, position=5, start=0, end=3,
                                                   text="One", speaker="participant"))


def test_a_turn_with_segments_cannot_be_deleted_behind_the_orms_back(two_interviews):
    first, _ = two_interviews
    turn = first.turns.get()

    def delete_turn_only():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM interviews_turn WHERE id = %s", [turn.id])

    with pytest.raises(IntegrityError):
        checked_now(delete_turn_only)


def test_a_turn_cannot_move_to_another_interview_without_its_segments(two_interviews):
    first, second = two_interviews
    turn = first.turns.get()
    with pytest.raises(IntegrityError):
        checked_now(lambda: Turn.objects.filter(pk=turn.pk).update(interview=second, position=7))


def test_deleting_an_interview_takes_its_turns_and_segments(two_interviews):
    first, second = two_interviews
    checked_now(first.delete)
    assert not Segment.objects.filter(interview_id=first.id).exists()
    assert Segment.objects.filter(interview=second).count() == 1
