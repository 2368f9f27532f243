"""A decision whose theme another decision merged away or trashed: shown as such, set aside, and listed so at closing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from themes import services
from themes.models import Decision

pytestmark = pytest.mark.django_db


@pytest.fixture
def meeting(project, owner):
    """Rename A, then merge A into B: applying the merge leaves the rename with no theme to act on."""
    a = services.theme_create(project=project, actor=owner, name="Honesty")
    b = services.theme_create(project=project, actor=owner, name="Candour")
    c = services.theme_create(project=project, actor=owner, name="Friendship")
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner], themes=[a, b, c])
    rename = services.decision_record(review=review, theme=a, actor=owner, kind="rename", payload={"name": "Honesty about limits"})
    merge = services.decision_record(review=review, theme=a, actor=owner, kind="merge", payload={"into": str(b.uuid)})
    redefine = services.decision_record(review=review, theme=c, actor=owner, kind="redefine", payload={"definition": "Warmth."})
    services.decision_apply(decision=merge, actor=owner)
    return {"review": review, "rename": rename, "redefine": redefine, "c": c}


def page(client, project, review) -> str:
    return client.get(reverse("themes:review", args=[project.uuid, review.uuid])).content.decode()


def test_a_decision_on_a_merged_theme_offers_only_set_aside_with_the_reason(meeting, project, analyst, client_for):
    html = page(client_for(analyst), project, meeting["review"])
    rename = html[html.index("“Honesty” → “Honesty about limits”"):]
    rename = rename[:rename.index("</li>")]
    assert "cannot be applied: theme merged into “Candour”" in rename
    assert "Apply</button>" not in rename
    assert 'value="Cannot be applied: theme merged into “Candour”."' in rename and "Set aside</button>" in rename


def test_setting_it_aside_records_the_reason(meeting, project, analyst, viewer, outsider, client_for):
    url = reverse("themes:decision_decline", args=[project.uuid, meeting["rename"].uuid])
    assert client_for(outsider).post(url, {"reason": "x"}).status_code == 404
    assert client_for(viewer).post(url, {"reason": "x"}).status_code == 403
    response = client_for(analyst).post(url, {"reason": "Cannot be applied: theme merged into “Candour”."}, follow=True)
    assert "set aside: Cannot be applied: theme merged into “Candour”." in response.content.decode()
    decision = Decision.objects.get(pk=meeting["rename"].pk)
    assert decision.declined_at and decision.declined_by == analyst
    assert decision.declined_reason == "Cannot be applied: theme merged into “Candour”."


def test_a_trashed_theme_says_so(meeting, project, owner, analyst, client_for):
    services.theme_delete(theme=meeting["c"], actor=owner)
    assert "cannot be applied: theme in the trash" in page(client_for(analyst), project, meeting["review"])


def test_closing_lists_unappliable_decisions_as_set_aside_and_the_others_as_not_applied(meeting, project, owner, analyst, client_for):
    services.review_close(review=meeting["review"], actor=owner)
    rename, redefine = (Decision.objects.get(pk=meeting[k].pk) for k in ("rename", "redefine"))
    assert rename.declined_reason == "Cannot be applied: theme merged into “Candour”." and rename.declined_by == owner
    assert redefine.declined_at is None  # could have been applied: the minutes say the meeting left it undone
    html = page(client_for(analyst), project, meeting["review"])
    assert "Cannot be applied: theme merged into “Candour”." in html
    assert "not applied before the meeting closed" in html
