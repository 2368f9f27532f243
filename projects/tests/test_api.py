"""The members, audit-log and trash API: the pages' rules (members read, owners manage; the log and trash are owners')."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from coding.models import Code
from coding.services import code_create
from projects.models import AuditEvent, Membership, Role
from projects.trash import trash_move

pytestmark = pytest.mark.django_db


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def url(project, path: str) -> str:
    return f"/api/projects/{project.uuid}/{path}"


def rows(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return response.json()["results"]


# --- members ------------------------------------------------------------------------------


def test_every_member_lists_the_members_with_roles_and_can_filter_by_role(project, owner, analyst, viewer, outsider):
    listed = rows(api(viewer).get(url(project, "members/")))
    assert [(m["username"], m["role"]) for m in listed] == [("arjun", "analyst"), ("olivia", "owner"), ("vera", "viewer")]
    assert listed[1]["name"] == "Olivia Owner"
    assert [m["username"] for m in rows(api(analyst).get(url(project, "members/"), {"role": "owner"}))] == ["olivia"]
    response = api(owner).get(url(project, "members/"), {"role": "boss"})
    assert response.status_code == 400 and "role" in response.json()
    assert api(outsider).get(url(project, "members/")).status_code == 404
    assert api().get(url(project, "members/")).status_code == 401


def test_member_list_queries_do_not_grow(project, owner, make_user, django_assert_num_queries):
    client = api(owner)
    # membership (+project, user), count, page of members (+users)
    with django_assert_num_queries(3):
        assert len(rows(client.get(url(project, "members/")))) == 3
    for i in range(4):
        Membership.objects.create(project=project, user=make_user(f"member{i}"), role=Role.VIEWER)
    with django_assert_num_queries(3):
        assert len(rows(client.get(url(project, "members/")))) == 7


def test_owners_add_members_by_username_or_email_and_it_is_audited(project, owner, make_user):
    make_user("nadia")
    make_user("tomas")
    response = api(owner).post(url(project, "members/"), {"user": "nadia", "role": "viewer"}, format="json")
    assert response.status_code == 201 and response.json()["role"] == "viewer"
    response = api(owner).post(url(project, "members/"), {"user": "tomas@example.org"}, format="json")
    assert response.status_code == 201 and response.json() | {"joined_at": None} == {
        "username": "tomas", "name": "", "role": "analyst", "positionality": "", "joined_at": None}
    assert AuditEvent.objects.filter(project=project, target_type="membership", action="created").count() == 2


def test_adding_an_unknown_account_or_a_member_again_names_the_problem(project, owner):
    response = api(owner).post(url(project, "members/"), {"user": "nobody", "role": "viewer"}, format="json")
    assert response.status_code == 400 and "No account" in response.json()["user"][0]
    response = api(owner).post(url(project, "members/"), {"user": "arjun"}, format="json")
    assert response.status_code == 400 and "already a member" in response.json()["user"][0]
    response = api(owner).post(url(project, "members/"), {"user": "arjun", "role": "boss"}, format="json")
    assert response.status_code == 400 and "role" in response.json()


def test_owners_change_roles_and_remove_members(project, owner, viewer):
    detail = url(project, "members/vera/")
    response = api(owner).patch(detail, {"role": "analyst"}, format="json")
    assert response.status_code == 200 and response.json()["role"] == "analyst"
    assert Membership.objects.get(project=project, user=viewer).role == Role.ANALYST
    assert api(owner).delete(detail).status_code == 204
    assert not Membership.objects.filter(project=project, user=viewer).exists()
    assert api(owner).get(detail).status_code == 404
    assert set(AuditEvent.objects.filter(target_type="membership").values_list("action", flat=True)) == {"changed", "deleted"}


def test_the_last_owner_can_be_neither_demoted_nor_removed(project, owner):
    detail = url(project, "members/olivia/")
    response = api(owner).patch(detail, {"role": "viewer"}, format="json")
    assert response.status_code == 400 and "at least one owner" in response.json()["role"][0]
    response = api(owner).delete(detail)
    assert response.status_code == 400 and "at least one owner" in response.json()["role"][0]
    assert Membership.objects.get(project=project, user=owner).role == Role.OWNER


def test_an_inactive_co_owner_does_not_count_as_the_other_owner(project, owner, make_user):
    placeholder = make_user("placeholder", is_active=False)
    Membership.objects.create(project=project, user=placeholder, role=Role.OWNER)
    detail = url(project, "members/olivia/")
    response = api(owner).patch(detail, {"role": "viewer"}, format="json")
    assert response.status_code == 400 and "at least one owner who can log in" in response.json()["role"][0]
    response = api(owner).delete(detail)
    assert response.status_code == 400 and "at least one owner who can log in" in response.json()["role"][0]
    assert Membership.objects.get(project=project, user=owner).role == Role.OWNER
    # The inactive owner itself may go: the active owner remains.
    assert api(owner).delete(url(project, "members/placeholder/")).status_code == 204


def test_creating_a_project_answers_the_creators_role(owner):
    response = api(owner).post("/api/projects/", {"name": "New study"}, format="json")
    assert response.status_code == 201 and response.json()["role"] == "owner"
    assert api(owner).get(f"/api/projects/{response.json()['uuid']}/").json()["role"] == "owner"


@pytest.mark.parametrize("method,path,body", [
    ("post", "members/", {"user": "oscar", "role": "viewer"}),
    ("patch", "members/vera/", {"role": "analyst"}),
    ("delete", "members/vera/", None),
])
def test_only_owners_manage_members(method, path, body, project, analyst, viewer, outsider):
    before = sorted(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert getattr(api(outsider), method)(url(project, path), body, format="json").status_code == 404
    assert getattr(api(viewer), method)(url(project, path), body, format="json").status_code == 403
    assert getattr(api(analyst), method)(url(project, path), body, format="json").status_code == 403
    assert getattr(api(), method)(url(project, path), body, format="json").status_code == 401
    assert sorted(Membership.objects.filter(project=project).values_list("user__username", "role")) == before


# --- audit log ----------------------------------------------------------------------------


@pytest.fixture
def events(project, owner, analyst):
    """Three events: the analyst creates two codes (today), the owner archives one (ten days ago)."""
    trust = code_create(project=project, actor=analyst, name="Trust")
    code_create(project=project, actor=analyst, name="Home")
    old = AuditEvent.objects.create(project=project, actor=owner, action="changed", target_type="code",
                                    target_id=str(trust.uuid), summary="Code “Trust” archived")
    AuditEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=10))
    return AuditEvent.objects.filter(project=project)


def test_owners_read_the_audit_log_newest_first(project, owner, events):
    listed = rows(api(owner).get(url(project, "audit-events/")))
    assert [e["summary"] for e in listed] == ["Code “Home” created", "Code “Trust” created", "Code “Trust” archived"]
    assert listed[0]["actor"] == "arjun" and listed[0]["action"] == "created" and listed[0]["target_type"] == "code"


def test_the_audit_log_filters_like_the_page(project, owner, events):
    def summaries(**params) -> list[str]:
        return [e["summary"] for e in rows(api(owner).get(url(project, "audit-events/"), params))]

    ten_days_ago = (timezone.localdate() - dt.timedelta(days=10)).isoformat()
    assert summaries(actor="olivia") == ["Code “Trust” archived"]
    assert summaries(action="created", target_type="code") == ["Code “Home” created", "Code “Trust” created"]
    assert summaries(since=timezone.localdate().isoformat()) == ["Code “Home” created", "Code “Trust” created"]
    assert summaries(until=ten_days_ago) == ["Code “Trust” archived"]
    # Like the page's form: actors are members and target types those already logged, anything else is named.
    response = api(owner).get(url(project, "audit-events/"), {"target_type": "theme", "actor": "oscar"})
    assert response.status_code == 400 and {"target_type", "actor"} <= set(response.json())


def test_a_malformed_audit_filter_is_a_400_naming_it(project, owner, events):
    response = api(owner).get(url(project, "audit-events/"), {"since": "yesterday", "action": "exploded"})
    assert response.status_code == 400 and {"since", "action"} <= set(response.json())
    response = api(owner).get(url(project, "audit-events/"), {"since": "2026-02-01", "until": "2026-01-01"})
    assert response.status_code == 400 and "until" in response.json()


def test_the_audit_log_is_for_owners_only(project, analyst, viewer, outsider, events):
    assert api(analyst).get(url(project, "audit-events/")).status_code == 403
    assert api(viewer).get(url(project, "audit-events/")).status_code == 403
    assert api(outsider).get(url(project, "audit-events/")).status_code == 404
    assert api().get(url(project, "audit-events/")).status_code == 401
    assert api(viewer).post(url(project, "audit-events/"), {}, format="json").status_code in (403, 405)


def test_audit_log_queries_do_not_grow(project, owner, analyst, django_assert_num_queries):
    client = api(owner)
    code_create(project=project, actor=analyst, name="Trust")
    # membership (+project), count, page of events (+actors)
    with django_assert_num_queries(3):
        rows(client.get(url(project, "audit-events/")))
    for i in range(5):
        code_create(project=project, actor=analyst, name=f"Code {i}")
    with django_assert_num_queries(3):
        assert len(rows(client.get(url(project, "audit-events/")))) == 6
    # a filter adds the filter form's two choice lists (members, target types)
    with django_assert_num_queries(5):
        assert len(rows(client.get(url(project, "audit-events/"), {"actor": "arjun"}))) == 6


# --- trash --------------------------------------------------------------------------------


def test_owners_list_the_trash_with_who_deleted_what_and_filter_by_kind(project, owner, analyst):
    trash_move(obj=code_create(project=project, actor=analyst, name="Trust"), actor=analyst)
    listed = rows(api(owner).get(url(project, "trash/")))
    assert [(i["kind"], i["title"], i["deleted_by"]) for i in listed] == [("code", "Trust", "arjun")]
    assert rows(api(owner).get(url(project, "trash/"), {"kind": "theme"})) == []
    assert api(owner).get(url(project, "trash/"), {"kind": "spoon"}).status_code == 400


def test_owners_restore_from_the_trash_and_it_is_audited(project, owner, analyst):
    code = code_create(project=project, actor=analyst, name="Trust")
    trash_move(obj=code, actor=analyst)
    response = api(owner).post(url(project, "trash/restore/"), {"kind": "code", "uuid": str(code.uuid)}, format="json")
    assert response.status_code == 200
    assert [(i["kind"], i["uuid"]) for i in response.json()["restored"]] == [("code", str(code.uuid))]
    assert Code.objects.get(pk=code.pk).deleted_at is None
    assert AuditEvent.objects.filter(project=project, action="restored", target_id=str(code.uuid)).exists()
    again = api(owner).post(url(project, "trash/restore/"), {"kind": "code", "uuid": str(code.uuid)}, format="json")
    assert again.status_code == 400 and "not in this project's trash" in again.json()["uuid"][0]
    wrong = api(owner).post(url(project, "trash/restore/"), {"kind": "spoon", "uuid": "nope"}, format="json")
    assert wrong.status_code == 400 and {"kind", "uuid"} <= set(wrong.json())


def test_the_trash_is_for_owners_only(project, analyst, viewer, outsider):
    code = code_create(project=project, actor=analyst, name="Trust")
    trash_move(obj=code, actor=analyst)
    body = {"kind": "code", "uuid": str(code.uuid)}
    for client, expected in ((api(analyst), 403), (api(viewer), 403), (api(outsider), 404), (api(), 401)):
        assert client.get(url(project, "trash/")).status_code == expected
        assert client.post(url(project, "trash/restore/"), body, format="json").status_code == expected
    assert Code.objects.get(pk=code.pk).deleted_at is not None


def test_trash_list_queries_do_not_grow(project, owner, analyst, django_assert_num_queries):
    client = api(owner)
    trash_move(obj=code_create(project=project, actor=analyst, name="Trust"), actor=analyst)
    # membership (+project), the paginator's count and a page's read per trashable kind (interview, code, theme,
    # memo, probe), who deleted them
    with django_assert_num_queries(12):
        rows(client.get(url(project, "trash/")))
    for i in range(4):
        trash_move(obj=code_create(project=project, actor=analyst, name=f"Code {i}"), actor=analyst)
    with django_assert_num_queries(12):
        assert len(rows(client.get(url(project, "trash/")))) == 5
