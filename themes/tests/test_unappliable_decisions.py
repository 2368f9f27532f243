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


# ---------------------------------------------------------------- the theme a merge or code move aims at

@pytest.fixture
def aimed(project, owner, make_code):
    """Merge Honesty into Candour; move a code of Friendship to Candour: both aim at Candour."""
    honesty = services.theme_create(project=project, actor=owner, name="Honesty")
    candour = services.theme_create(project=project, actor=owner, name="Candour")
    friendship = services.theme_create(project=project, actor=owner, name="Friendship")
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=friendship, actor=owner, code=code)
    review = services.review_create(project=project, actor=owner, title="Round 2", date="2026-11-23", attendees=[owner],
                                    themes=[honesty, candour, friendship])
    merge = services.decision_record(review=review, theme=honesty, actor=owner, kind="merge", payload={"into": str(candour.uuid)})
    move = services.decision_record(review=review, theme=friendship, actor=owner, kind="move_codes",
                                    payload={"to": str(candour.uuid), "codes": [str(code.uuid)]})
    return {"review": review, "merge": merge, "move": move, "honesty": honesty, "candour": candour, "friendship": friendship}


def decision_item(html: str, start: str) -> str:
    item = html[html.index(start):]
    return item[:item.index("</li>")]


def test_a_merge_into_a_trashed_theme_offers_set_aside_and_restore_not_apply(aimed, project, owner, analyst, client_for):
    services.theme_delete(theme=aimed["candour"], actor=owner)
    for who in (owner, analyst):
        merge = decision_item(page(client_for(who), project, aimed["review"]), "<strong>Honesty</strong>")
        assert "cannot be applied: target theme “Candour” in the trash" in merge
        assert "Apply</button>" not in merge
        assert 'value="Cannot be applied: target theme “Candour” in the trash."' in merge and "Set aside</button>" in merge
    # Restoring is the owners' (the trash): they get the way there, others are told who can.
    owners = decision_item(page(client_for(owner), project, aimed["review"]), "<strong>Honesty</strong>")
    assert f'href="{reverse("projects:trash", args=[project.uuid])}">Restore “Candour” from the trash</a> to apply it' in owners
    assert "A project owner can restore “Candour” from the trash to apply it" in page(client_for(analyst), project, aimed["review"])


def test_a_code_move_to_a_theme_merged_away_says_where_it_went(aimed, project, owner, analyst, client_for):
    elsewhere = services.theme_create(project=project, actor=owner, name="Openness")
    services.theme_merge(source=aimed["candour"], target=elsewhere, actor=owner)
    move = decision_item(page(client_for(analyst), project, aimed["review"]), "<strong>Friendship</strong>")
    assert "cannot be applied: target theme “Candour” merged into “Openness”" in move
    assert "Apply</button>" not in move and "Set aside</button>" in move
    assert "from the trash" not in move  # restoring would not bring it back: it lives on in Openness


def test_a_target_deleted_for_good_is_named_as_it_was(aimed, project, owner, analyst, client_for):
    from projects.trash import trash_empty

    services.theme_delete(theme=aimed["candour"], actor=owner)
    trash_empty(project=project, actor=owner)
    html = page(client_for(analyst), project, aimed["review"])
    assert "cannot be applied: target theme “Candour” deleted for good" in decision_item(html, "<strong>Honesty</strong>")
    assert "Apply</button>" not in html


def test_a_renamed_target_is_still_applied_and_shows_its_name_now(aimed, project, owner, analyst, client_for):
    services.theme_update(theme=aimed["candour"], actor=owner, base_version=None, name="Frankness")
    merge = decision_item(page(client_for(analyst), project, aimed["review"]), "<strong>Honesty</strong>")
    assert "→ into “Candour” <span class=\"muted\">(now “Frankness”)</span>" in merge
    assert "Apply</button>" in merge and "cannot be applied" not in merge
    services.decision_apply(decision=aimed["merge"], actor=owner)
    honesty = type(aimed["honesty"]).objects.get(pk=aimed["honesty"].pk)
    assert honesty.merged_into == aimed["candour"]


def test_applying_anyway_is_refused_with_the_reason_and_changes_nothing(aimed, project, owner, analyst, client_for):
    services.theme_delete(theme=aimed["candour"], actor=owner)
    url = reverse("themes:decision_apply", args=[project.uuid, aimed["move"].uuid])
    response = client_for(analyst).post(url, follow=True)
    assert ("Not applied: This decision cannot be applied: target theme “Candour” in the trash; restore it from the trash first, "
            "or set the decision aside. Nothing was changed.") in response.content.decode()
    assert aimed["friendship"].theme_codes.count() == 1
    assert Decision.objects.get(pk=aimed["move"].pk).applied_at is None


def test_closing_sets_aside_decisions_whose_target_is_gone(aimed, project, owner):
    services.theme_delete(theme=aimed["candour"], actor=owner)
    services.review_close(review=aimed["review"], actor=owner)
    reasons = set(Decision.objects.filter(review=aimed["review"]).values_list("declined_reason", flat=True))
    assert reasons == {"Cannot be applied: target theme “Candour” in the trash."}


def test_the_presenter_shows_the_same(aimed, project, owner, analyst, client_for):
    services.theme_delete(theme=aimed["candour"], actor=owner)
    html = client_for(analyst).get(reverse("themes:present", args=[project.uuid, aimed["review"].uuid, 0])).content.decode()
    merge = decision_item(html, "<strong>Honesty</strong>")
    assert "cannot be applied: target theme “Candour” in the trash" in merge and "Apply</button>" not in merge


def test_the_live_decisions_part_follows_the_board_and_is_fetched_again_with_the_change(aimed, project, owner, analyst, client_for):
    """The decisions part is re-read (hx-select from the page) on board news, which is what trashing or merging sends."""
    client = client_for(analyst)
    for url in (reverse("themes:review", args=[project.uuid, aimed["review"].uuid]),
                reverse("themes:present", args=[project.uuid, aimed["review"].uuid, 0])):
        before = client.get(url).content.decode()
        part = before[before.index('id="live-decisions"'):]
        assert "board" in part[:part.index(">")].split('data-live-on="')[1].split('"')[0].split()
    services.theme_delete(theme=aimed["candour"], actor=owner)
    after = client.get(reverse("themes:review", args=[project.uuid, aimed["review"].uuid]), HTTP_HX_REQUEST="true").content.decode()
    part = after[after.index('id="live-decisions"'):]
    assert part.count("cannot be applied: target theme “Candour” in the trash") == 2


def test_the_api_says_why_a_pending_decision_cannot_be_applied_in_one_query_for_the_targets(aimed, project, owner,
                                                                                              django_assert_max_num_queries):
    from rest_framework.test import APIClient

    review = aimed["review"]
    redefine = services.decision_record(review=review, theme=aimed["friendship"], actor=owner, kind="redefine",
                                        payload={"definition": "Warmth."})
    applied = services.decision_record(review=review, theme=aimed["honesty"], actor=owner, kind="status",
                                       payload={"status": "reviewed"})
    services.decision_apply(decision=applied, actor=owner)
    services.theme_delete(theme=aimed["candour"], actor=owner)
    api = APIClient()
    api.force_authenticate(owner)
    base = f"/api/projects/{project.uuid}/reviews/"
    expected = {str(aimed["merge"].uuid): "target theme “Candour” in the trash",
                str(aimed["move"].uuid): "target theme “Candour” in the trash", str(redefine.uuid): "", str(applied.uuid): ""}
    assert {d["uuid"]: d["cannot_apply"] for d in api.get(f"{base}{review.uuid}/").json()["decisions"]} == expected
    with django_assert_max_num_queries(12) as counted:
        listed = api.get(base).json()["results"]
    assert {d["uuid"]: d["cannot_apply"] for r in listed for d in r["decisions"]} == expected
    targets = [q for q in counted.captured_queries if 'FROM "themes_theme"' in q["sql"] and '"uuid" IN' in q["sql"]]
    assert len(targets) == 1, targets  # the targets of every decision on the page, at once
