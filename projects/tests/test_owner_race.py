"""Two owners stepping down at the same moment: one of them stays owner."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction

from projects.models import Membership, Role
from projects.services import membership_change_role


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_two_owners_stepping_down_at_once_leave_one_owner(project, owner, make_user):
    co_owner = make_user("co-owner")
    Membership.objects.create(project=project, user=co_owner, role=Role.OWNER)
    first_done, let_first_commit, second_done = threading.Event(), threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def co_owner_steps_down() -> None:
        try:
            with transaction.atomic():  # held open until the second step-down has started
                membership = Membership.objects.select_related("user", "project").get(project=project, user=co_owner)
                membership_change_role(membership=membership, actor=co_owner, role=Role.ANALYST)
                first_done.set()
                let_first_commit.wait(timeout=30)
        finally:
            connections.close_all()

    def owner_steps_down() -> None:
        try:
            membership = Membership.objects.select_related("user", "project").get(project=project, user=owner)
            membership_change_role(membership=membership, actor=owner, role=Role.VIEWER)
            outcome["second"] = "demoted"
        except ValidationError as exc:
            outcome["second"] = " ".join(exc.messages)
        finally:
            second_done.set()
            connections.close_all()

    first = threading.Thread(target=co_owner_steps_down)
    first.start()
    assert first_done.wait(timeout=30)
    second = threading.Thread(target=owner_steps_down)
    second.start()
    # The second step-down either waits for the first (the project is locked) or, were it
    # not, would already have finished, believing the co-owner still owner.
    deadline = time.monotonic() + 30
    while not second_done.is_set() and not _waiting_on_a_lock() and time.monotonic() < deadline:
        second_done.wait(timeout=0.05)
    let_first_commit.set()
    first.join(timeout=30)
    second.join(timeout=30)

    assert "at least one owner who can log in" in str(outcome["second"])
    assert list(Membership.objects.filter(project=project, role=Role.OWNER).values_list("user__username", flat=True)) == ["olivia"]
