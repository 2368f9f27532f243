from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from projects import services
from projects.models import AuditEvent, Invitation, Membership, Role
from projects.views_invitations import invitation_link_misses_clear

pytestmark = pytest.mark.django_db
User = get_user_model()
NEW_PASSWORD = "a-long-unusual-passphrase"


@pytest.fixture(autouse=True)
def _no_link_misses_counted():
    # The miss counter lives in the shared cache; other tests open unknown links from the same address.
    invitation_link_misses_clear("127.0.0.1")
    yield
    invitation_link_misses_clear("127.0.0.1")


@pytest.fixture
def issued(project, owner) -> services.IssuedInvitation:
    return services.invitation_create(project=project, actor=owner, email="nadia@example.org", role=Role.ANALYST)


def _members_url(project) -> str:
    return reverse("projects:members", args=[project.uuid])


def _accept_url(token: str) -> str:
    return reverse("projects:invitation_accept", args=[token])


def _signup(client: Client, token: str, username: str = "nadia", password: str = NEW_PASSWORD, again: str | None = None):
    return client.post(_accept_url(token), {"username": username, "password1": password, "password2": again or password})


class TestInviting:
    def test_owner_invites_by_email_and_sees_the_link_once(self, client_for, project, owner):
        c = client_for(owner)
        response = c.post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        assert response.status_code == 302
        invitation = Invitation.objects.get(project=project)
        assert invitation.role == Role.VIEWER
        [email] = mail.outbox
        assert email.to == ["nadia@example.org"] and "Chatbots and identity" in email.subject
        link = re.search(r"http://testserver/invitations/\S+/", email.body).group(0)
        assert Invitation.objects.by_token(link.rstrip("/").rsplit("/", 1)[1]) == invitation

        page = c.get(_members_url(project)).content.decode()
        assert f'value="{link}"' in page and "Invitation sent to nadia@example.org." in page
        assert link not in c.get(_members_url(project)).content.decode()

    def test_an_unsent_email_still_shows_the_link(self, client_for, project, owner):
        c = client_for(owner)
        # Nothing listens on port 9: the real SMTP backend fails to connect.
        with override_settings(MAILERS={"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                                    "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2}}}):
            c.post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        page = c.get(_members_url(project)).content.decode()
        assert "The email to nadia@example.org could not be sent: copy the link below" in page
        assert 'id="invitation-link" readonly value="http://testserver/invitations/' in page

    def test_without_a_mail_server_it_does_not_claim_the_email_went_out(self, client_for, project, owner):
        # `make run` (DEBUG) prints emails in the server's console: nobody receives them.
        c = client_for(owner)
        with override_settings(MAILERS={"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}):
            c.post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        page = c.get(_members_url(project)).content.decode()
        assert "Invitation sent" not in page and "We emailed this link" not in page
        assert "No mail server is set up here, so no email went to nadia@example.org: copy the link below" in page
        assert 'id="invitation-link" readonly value="http://testserver/invitations/' in page

    def test_members_page_lists_pending_invitations_for_owners_only(self, client_for, project, owner, analyst, issued):
        assert "nadia@example.org" in client_for(owner).get(_members_url(project)).content.decode()
        assert "nadia@example.org" not in client_for(analyst).get(_members_url(project)).content.decode()

    def test_a_second_invitation_to_the_same_email_says_so(self, client_for, project, owner, issued):
        response = client_for(owner).post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        assert response.status_code == 400
        assert "nadia@example.org already has a pending invitation (as analyst)" in response.content.decode()

    @pytest.mark.parametrize("role_user", ["analyst", "viewer"])
    def test_non_owners_cannot_invite(self, request, client_for, project, role_user):
        c = client_for(request.getfixturevalue(role_user))
        response = c.post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        assert response.status_code == 403
        assert not Invitation.objects.exists() and not mail.outbox

    def test_outsiders_get_404_when_inviting(self, client_for, project, outsider):
        response = client_for(outsider).post(reverse("projects:member_add", args=[project.uuid]), {"user": "nadia@example.org", "role": "viewer"})
        assert response.status_code == 404
        assert not Invitation.objects.exists()

    def test_members_page_query_count_does_not_grow_with_invitations(self, client_for, project, owner, make_user, django_assert_num_queries):
        inviter = make_user("second-owner")
        Membership.objects.create(project=project, user=inviter, role=Role.OWNER)
        for i in range(6):
            services.invitation_create(project=project, actor=owner if i % 2 else inviter, email=f"p{i}@example.org", role=Role.VIEWER)
        c = client_for(owner)
        # session, user, membership+project, members with users, pending invitations with inviters, unread-mentions badge
        with django_assert_num_queries(6):
            page = c.get(_members_url(project)).content.decode()
        assert page.count("@example.org</td>") == 6


class TestResendAndRevoke:
    def url(self, project, invitation, name):
        return reverse(f"projects:invitation_{name}", args=[project.uuid, invitation.uuid])

    def test_owner_resends_with_a_new_link(self, client_for, project, owner, issued):
        c = client_for(owner)
        assert c.post(self.url(project, issued.invitation, "regenerate")).status_code == 302
        assert Invitation.objects.by_token(issued.token) is None
        [email] = mail.outbox
        new_token = re.search(r"/invitations/(\S+)/", email.body).group(1)
        assert Invitation.objects.by_token(new_token) == issued.invitation
        assert f"/invitations/{new_token}/" in c.get(_members_url(project)).content.decode()

    def test_owner_revokes(self, client_for, project, owner, issued):
        response = client_for(owner).post(self.url(project, issued.invitation, "revoke"), follow=True)
        assert "Invitation to nadia@example.org withdrawn" in response.content.decode()
        assert not Invitation.objects.pending().exists()
        assert AuditEvent.objects.filter(target_type="invitation", action="deleted").exists()

    def test_revoking_twice_explains(self, client_for, project, owner, issued):
        c = client_for(owner)
        c.post(self.url(project, issued.invitation, "revoke"))
        response = c.post(self.url(project, issued.invitation, "regenerate"), follow=True)
        assert "The invitation to nadia@example.org was already withdrawn." in response.content.decode()

    @pytest.mark.parametrize("name", ["regenerate", "revoke"])
    @pytest.mark.parametrize("role_user", ["analyst", "viewer"])
    def test_non_owners_get_403(self, request, client_for, project, issued, name, role_user):
        response = client_for(request.getfixturevalue(role_user)).post(self.url(project, issued.invitation, name))
        assert response.status_code == 403
        assert Invitation.objects.by_token(issued.token).unusable_reason == ""

    @pytest.mark.parametrize("name", ["regenerate", "revoke"])
    def test_outsiders_get_404(self, client_for, project, outsider, issued, name):
        assert client_for(outsider).post(self.url(project, issued.invitation, name)).status_code == 404
        assert Invitation.objects.by_token(issued.token).unusable_reason == ""

    def test_another_projects_invitation_is_404(self, client_for, project, owner, outsider):
        other = services.project_create(owner=outsider, name="Elsewhere")
        foreign = services.invitation_create(project=other, actor=outsider, email="x@example.org", role=Role.VIEWER)
        assert client_for(owner).post(self.url(project, foreign.invitation, "revoke")).status_code == 404
        assert Invitation.objects.by_token(foreign.token).unusable_reason == ""


class TestAccepting:
    def test_anonymous_visitor_sees_the_project_and_a_signup_form(self, client, issued):
        page = client.get(_accept_url(issued.token)).content.decode()
        assert "Join “Chatbots and identity”" in page and "as analyst" in page
        assert 'name="password1"' in page and "nadia@example.org" in page

    def test_anonymous_visitor_signs_up_joins_and_is_logged_in(self, client, project, issued):
        response = _signup(client, issued.token)
        assert response.status_code == 302 and response["Location"] == reverse("project_home", args=[project.uuid])
        user = User.objects.get(username="nadia")
        assert user.email == "nadia@example.org"
        assert Membership.objects.get(project=project, user=user).role == Role.ANALYST
        assert client.get(reverse("project_home", args=[project.uuid])).status_code == 200
        assert AuditEvent.objects.filter(project=project, target_type="membership", actor=user).exists()

    @pytest.mark.parametrize(("password", "again", "message"), [
        ("short", None, "This password is too short."),
        (NEW_PASSWORD, "something-else-entirely", "The two passwords differ"),
    ])
    def test_a_bad_password_leaves_nothing(self, client, project, issued, password, again, message):
        users_before = User.objects.count()
        response = _signup(client, issued.token, password=password, again=again)
        assert response.status_code == 400
        assert message in response.content.decode()
        assert User.objects.count() == users_before
        assert Membership.objects.filter(project=project).count() == 3
        assert Invitation.objects.by_token(issued.token).unusable_reason == ""
        assert "_auth_user_id" not in client.session

    def test_a_taken_username_is_shown_on_the_form(self, client, issued):
        response = _signup(client, issued.token, username="olivia")
        assert response.status_code == 400
        assert "A user with that username already exists." in response.content.decode()
        assert not Invitation.objects.get().accepted_at

    def test_a_logged_in_user_accepts_with_one_click(self, client_for, project, outsider, issued):
        c = client_for(outsider)
        page = c.get(_accept_url(issued.token)).content.decode()
        assert "Join as oscar" in page and 'name="password1"' not in page
        assert not Membership.objects.filter(user=outsider).exists()  # a GET only shows the button
        response = c.post(_accept_url(issued.token))
        assert response.status_code == 302
        assert Membership.objects.get(project=project, user=outsider).role == Role.ANALYST
        # Opening the used link again leads the new member to the project.
        assert c.get(_accept_url(issued.token))["Location"] == reverse("project_home", args=[project.uuid])

    def test_a_member_is_told_they_already_belong(self, client_for, viewer, issued):
        response = client_for(viewer).post(_accept_url(issued.token))
        assert response.status_code == 409
        assert "You are already a member of “Chatbots and identity” (viewer)." in response.content.decode()

    @pytest.mark.parametrize(("spoil", "message"), [
        ("expire", "This invitation has expired."),
        ("revoke", "This invitation was withdrawn by the project&#x27;s owners."),
        ("use", "This invitation has already been used."),
    ])
    def test_stale_links_say_why_without_naming_the_project(self, client, owner, analyst, issued, spoil, message):
        if spoil == "expire":
            Invitation.objects.update(expires_at=timezone.now() - dt.timedelta(minutes=1))
        elif spoil == "revoke":
            services.invitation_revoke(invitation=issued.invitation, actor=owner)
        else:
            Invitation.objects.update(accepted_at=timezone.now(), accepted_by=analyst)
        for response in (client.get(_accept_url(issued.token)), _signup(client, issued.token)):
            assert response.status_code == 410
            page = response.content.decode()
            assert message in page and "Chatbots and identity" not in page
        assert not User.objects.filter(username="nadia").exists()

    def test_an_unknown_token_reveals_nothing(self, client, issued):
        response = client.get(_accept_url(issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B")))
        assert response.status_code == 404
        page = response.content.decode()
        assert "This invitation link is not valid." in page and "Chatbots and identity" not in page

    @override_settings(RTA_INVITATION_MAX_MISSES=3)
    def test_guessing_links_is_cut_off_per_address_but_valid_links_still_work(self, project, issued):
        # Guesser and colleague share an address (one office, one proxy): the guesser's misses
        # stop further guesses, not the colleague's real link.
        guesser, colleague = Client(REMOTE_ADDR="10.0.0.7"), Client(REMOTE_ADDR="10.0.0.7")
        try:
            assert [guesser.get(_accept_url(f"guess-{i}")).status_code for i in range(3)] == [404, 404, 404]
            refused = guesser.get(_accept_url("guess-4"))
            assert refused.status_code == 429 and "Too many invalid invitation links" in refused.content.decode()
            page = colleague.get(_accept_url(issued.token))
            assert page.status_code == 200 and "Chatbots and identity" in page.content.decode()
        finally:
            invitation_link_misses_clear("10.0.0.7")


def test_the_sign_up_form_gives_the_password_rules_but_not_what_only_a_password_change_does(client, issued):
    page = client.get(_accept_url(issued.token)).content.decode()
    assert "at least 8 characters" in page
    assert "API token" not in page  # a new account has none to revoke


def test_the_login_page_says_how_a_newcomer_gets_an_account(client, make_user):
    first = client.get(reverse("login")).content.decode()
    assert "This server has no accounts yet" in first and "manage.py createsuperuser" in first
    make_user("first")
    page = client.get(reverse("login")).content.decode()
    assert 'id="no-account"' in page and "ask a project owner for an invitation link" in page
    assert "createsuperuser" not in page
