"""The audit log page (owners only) and the project home's recent activity: events said in words."""

from __future__ import annotations

import pytest
from django.urls import reverse

from projects.audit import audit_record
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


def _events(project, owner, n: int) -> None:
    for k in range(n):
        audit_record(project=project, actor=owner, action=AuditEvent.Action.CREATED, target_type="endpointkey",
                     target_id=f"key-{k}", summary=f"API key “Lab {k}” stored for https://api.example.org/v1")


def test_only_owners_read_the_log_outsiders_get_404(client_for, project, owner, analyst, viewer, outsider):
    url = reverse("projects:audit", args=[project.uuid])
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(analyst).get(url).status_code == 403
    assert client_for(viewer).get(url).status_code == 403
    assert client_for(owner).get(url).status_code == 200


@pytest.mark.parametrize("n", [1, 6])
def test_the_log_says_what_each_event_is_about_in_words_in_a_fixed_number_of_queries(
        client_for, project, owner, n, django_assert_num_queries):
    _events(project, owner, n)
    client = client_for(owner)
    # session, user, membership+project, members (who), event types (what), a page of events with their actors,
    # unread-mentions badge
    with django_assert_num_queries(7):
        page = client.get(reverse("projects:audit", args=[project.uuid])).content.decode()
    assert page.count("<td>endpoint key</td>") == n and "endpointkey</td>" not in page
    assert '<option value="endpointkey">endpoint key</option>' in page  # the "What" filter too


def test_the_project_home_tells_recent_activity_by_its_summary(client_for, project, owner):
    _events(project, owner, 1)
    page = client_for(owner).get(reverse("project_home", args=[project.uuid])).content.decode()
    assert f"{owner.username}: API key “Lab 0” stored for https://api.example.org/v1</li>" in page
    assert "created endpointkey" not in page
