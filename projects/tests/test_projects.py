from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import AuditEvent, Membership, Project, Role

pytestmark = pytest.mark.django_db


def test_project_list_shows_only_my_projects(client_for, project, outsider):
    Project.objects.create(name="Someone else's study")
    response = client_for(project.created_by).get(reverse("projects:list"))
    assert response.status_code == 200
    assert b"Chatbots and identity" in response.content
    assert b"Someone else" not in response.content


def test_project_list_query_count_does_not_grow(client_for, owner, django_assert_num_queries):
    for i in range(5):
        p = Project.objects.create(name=f"Study {i}")
        Membership.objects.create(project=p, user=owner, role=Role.OWNER)
    c = client_for(owner)
    # session, user, memberships with their projects
    with django_assert_num_queries(3):
        c.get(reverse("projects:list"))


def test_creating_a_project_makes_me_owner_and_is_audited(client_for, outsider):
    response = client_for(outsider).post(reverse("projects:create"), {"name": "Identity and power"})
    project = Project.objects.get(name="Identity and power")
    assert response.status_code == 302
    assert response["Location"] == reverse("project_home", args=[project.uuid])
    assert Membership.objects.get(project=project, user=outsider).role == Role.OWNER
    assert AuditEvent.objects.filter(project=project, action="created").exists()


def test_creating_a_project_without_a_name_shows_the_error(client_for, outsider):
    response = client_for(outsider).post(reverse("projects:create"), {"name": ""})
    assert response.status_code == 400
    assert b"This field is required" in response.content
    assert not Project.objects.exists()


def test_anonymous_users_are_sent_to_login(client, project):
    response = client.get(reverse("project_home", args=[project.uuid]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role_user", ["owner", "analyst", "viewer"])
def test_members_see_the_project_home(request, client_for, project, role_user):
    response = client_for(request.getfixturevalue(role_user)).get(reverse("project_home", args=[project.uuid]))
    assert response.status_code == 200
    assert b"Familiarisation" in response.content


def test_outsiders_get_404_on_the_project_home(client_for, project, outsider):
    assert client_for(outsider).get(reverse("project_home", args=[project.uuid])).status_code == 404


def test_project_home_query_count_is_constant(client_for, demo_project, django_assert_num_queries):
    owner = demo_project.memberships.get().user
    c = client_for(owner)
    # session, user, membership+project, interviews, coded and codable segments (then cached a minute), themes by
    # status, codes, audit events, unread-mentions badge
    with django_assert_num_queries(9):
        c.get(reverse("project_home", args=[demo_project.uuid]))


class TestMembers:
    def url(self, project, name, *args):
        return reverse(f"projects:{name}", args=[project.uuid, *args])

    def test_owner_adds_a_member_by_email(self, client_for, project, owner, outsider):
        response = client_for(owner).post(self.url(project, "member_add"), {"user": "oscar@example.org", "role": "viewer"})
        assert response.status_code == 302
        assert Membership.objects.get(project=project, user=outsider).role == Role.VIEWER
        assert AuditEvent.objects.filter(project=project, target_type="membership", action="created").exists()

    def test_adding_an_unknown_user_says_so(self, client_for, project, owner):
        response = client_for(owner).post(self.url(project, "member_add"), {"user": "nobody", "role": "viewer"})
        assert response.status_code == 400
        assert "No account with the username or email “nobody”. To invite someone new, enter their email address." in response.content.decode()

    @pytest.mark.parametrize("role_user", ["analyst", "viewer"])
    def test_non_owners_cannot_add_members(self, request, client_for, project, outsider, role_user):
        response = client_for(request.getfixturevalue(role_user)).post(self.url(project, "member_add"), {"user": "oscar", "role": "owner"})
        assert response.status_code == 403
        assert not Membership.objects.filter(user=outsider).exists()

    def test_outsiders_get_404_when_adding(self, client_for, project, outsider):
        response = client_for(outsider).post(self.url(project, "member_add"), {"user": "oscar", "role": "owner"})
        assert response.status_code == 404

    def test_owner_changes_a_role(self, client_for, project, owner, analyst):
        client_for(owner).post(self.url(project, "member_role", "arjun"), {"role": "viewer"})
        assert Membership.objects.get(project=project, user=analyst).role == Role.VIEWER

    def test_the_last_owner_cannot_step_down(self, client_for, project, owner):
        response = client_for(owner).post(self.url(project, "member_role", "olivia"), {"role": "analyst"}, follow=True)
        assert Membership.objects.get(project=project, user=owner).role == Role.OWNER
        assert "at least one owner" in response.content.decode()

    def test_an_inactive_co_owner_does_not_let_the_last_active_owner_leave(self, client_for, project, owner, make_user):
        Membership.objects.create(project=project, user=make_user("placeholder", is_active=False), role=Role.OWNER)
        response = client_for(owner).post(self.url(project, "member_role", "olivia"), {"role": "analyst"}, follow=True)
        assert "at least one owner who can log in" in response.content.decode()
        response = client_for(owner).post(self.url(project, "member_remove", "olivia"), follow=True)
        assert "at least one owner who can log in" in response.content.decode()
        assert Membership.objects.get(project=project, user=owner).role == Role.OWNER
        assert "inactive account" in response.content.decode()

    def test_viewer_cannot_change_roles(self, client_for, project, viewer):
        assert client_for(viewer).post(self.url(project, "member_role", "vera"), {"role": "owner"}).status_code == 403
        assert Membership.objects.get(project=project, user=viewer).role == Role.VIEWER

    def test_owner_removes_a_member(self, client_for, project, owner, analyst):
        client_for(owner).post(self.url(project, "member_remove", "arjun"))
        assert not Membership.objects.filter(project=project, user=analyst).exists()

    def test_analyst_cannot_remove_members(self, client_for, project, analyst, viewer):
        assert client_for(analyst).post(self.url(project, "member_remove", "vera")).status_code == 403
        assert Membership.objects.filter(project=project, user=viewer).exists()

    def test_member_list_query_count(self, client_for, project, owner, make_user, django_assert_num_queries):
        for i in range(6):
            Membership.objects.create(project=project, user=make_user(f"extra{i}"), role=Role.VIEWER)
        c = client_for(owner)
        # session, user, membership+project, members with users, pending invitations with inviters, unread-mentions badge
        with django_assert_num_queries(6):
            assert c.get(self.url(project, "members")).status_code == 200

    def test_viewers_write_their_own_positionality(self, client_for, project, viewer):
        response = client_for(viewer).post(self.url(project, "positionality"), {"positionality": "I study AI ethics."})
        assert response.status_code == 302
        assert Membership.objects.get(project=project, user=viewer).positionality == "I study AI ethics."

    def test_outsiders_get_404_on_positionality(self, client_for, project, outsider):
        assert client_for(outsider).post(self.url(project, "positionality"), {"positionality": "x"}).status_code == 404


class TestSettings:
    def test_owner_turns_on_agreement_statistics(self, client_for, project, owner):
        url = reverse("projects:settings", args=[project.uuid])
        client_for(owner).post(url, {"name": project.name, "agreement_statistics_enabled": "on"})
        project.refresh_from_db()
        assert project.agreement_statistics_enabled

    def test_analyst_cannot_change_settings(self, client_for, project, analyst):
        url = reverse("projects:settings", args=[project.uuid])
        assert client_for(analyst).post(url, {"name": "Renamed"}).status_code == 403
        project.refresh_from_db()
        assert project.name == "Chatbots and identity"

    def test_outsider_gets_404_on_settings(self, client_for, project, outsider):
        assert client_for(outsider).get(reverse("projects:settings", args=[project.uuid])).status_code == 404


def test_healthz_reports_database_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"] in {"ok", "in-process"}


def test_the_browsers_default_icon_address_leads_to_the_apps_icon(client):
    # Browsers ask /favicon.ico for documents that name no icon (a turn's JSON record, API answers).
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response.url == "/static/favicon.svg"
    assert client.get(response.url).status_code == 200


def test_the_project_home_shows_the_description_and_links_every_phase_and_the_next_step(client_for, project, owner):
    from themes.models import Theme

    project.description = "Five chatbots asked about home."
    project.save(update_fields=["description"])
    Theme.objects.create(project=project, name="Belonging", position=0)
    page = client_for(owner).get(reverse("project_home", args=[project.uuid])).content.decode()
    assert "Five chatbots asked about home." in page
    for name in ("interviews:list", "coding:codebook", "themes:board", "themes:reviews", "reports:excerpts"):
        assert f'<a href="{reverse(name, args=[project.uuid])}">' in page
    assert "0 interviews" in page and "1 theme<" in page and "1 themes" not in page
    assert f'<strong>Next:</strong> <a href="{reverse("interviews:list", args=[project.uuid])}">Import or conduct' in page


def test_a_viewers_project_home_says_where_the_team_is_not_what_to_do(client_for, viewer, project):
    page = client_for(viewer).get(reverse("project_home", args=[project.uuid])).content.decode()
    assert "<strong>Next:</strong>" not in page
    assert (f'<strong>Where the team is:</strong> phase 1, <a href="{reverse("interviews:list", args=[project.uuid])}">'
            "familiarisation</a> (0 interviews). As a viewer you can read everything here") in page
