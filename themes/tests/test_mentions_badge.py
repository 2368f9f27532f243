"""The unread-mentions badge in the project navigation: what it counts, when it clears, what it costs."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from projects.models import Membership, Project, Role
from themes import services
from themes.queries import unread_mentions_count

pytestmark = pytest.mark.django_db

BADGE = re.compile(r'<a class="nav-badge mentions-badge" href="([^"]+)"[^>]*aria-label="([^"]+)">@ (\d+)</a>')


@pytest.fixture
def theme(project, owner):
    return services.theme_create(project=project, actor=owner, name="Honesty about limits")


def _home(project) -> str:
    return reverse("project_home", args=[project.uuid])


def _badge(client, project):
    """(link, label, number) of the badge on the project home, or None when there is none."""
    found = BADGE.search(client.get(_home(project)).content.decode())
    return (found.group(1), found.group(2), int(found.group(3))) if found else None


def _mentions(project, **query) -> str:
    url = reverse("themes:mentions", args=[project.uuid])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_the_badge_counts_mentions_by_others_and_links_to_the_mentions_page(project, theme, owner, analyst, client_for):
    services.comment_post(theme=theme, actor=owner, body="What do you think, @arjun?")
    services.comment_post(theme=theme, actor=owner, body="And @arjun: one more.")
    services.comment_post(theme=theme, actor=owner, body="Nobody is mentioned here.")
    assert _badge(client_for(analyst), project) == (_mentions(project), "2 unread mentions", 2)
    # Mentions of colleagues are not news to you.
    assert _badge(client_for(owner), project) is None
    # Replying in the thread means having read it.
    services.comment_post(theme=theme, actor=analyst, body="On it, @olivia.")
    assert _badge(client_for(analyst), project) is None
    assert _badge(client_for(owner), project)[2] == 1


def test_opening_the_mentions_page_clears_the_badge_and_marks_what_was_new(project, theme, owner, analyst, client_for):
    services.comment_post(theme=theme, actor=owner, body="Old news for @arjun")
    client = client_for(analyst)
    first = client.get(_mentions(project)).content.decode()
    assert first.count('class="badge unread">new') == 1
    assert _badge(client, project) is None
    services.comment_post(theme=theme, actor=owner, body="Fresh question for @arjun")
    assert _badge(client, project)[1] == "1 unread mention"
    second = client.get(_mentions(project)).content.decode()
    assert second.count('class="badge unread">new') == 1
    # The new one is the fresh question (newest first), not the old news.
    assert second.index('class="badge unread">new') < second.index("Fresh question") < second.index("Old news")
    assert _badge(client, project) is None
    assert 'class="badge unread">new' not in client.get(_mentions(project)).content.decode()


def test_looking_at_a_colleagues_mentions_does_not_clear_yours(project, theme, owner, analyst, client_for):
    services.comment_post(theme=theme, actor=owner, body="@arjun and @vera, please look")
    client = client_for(analyst)
    html = client.get(_mentions(project, user="vera")).content.decode()
    assert "please look" in html and 'class="badge unread">new' not in html
    assert _badge(client, project)[2] == 1


def test_reading_the_thread_clears_its_mentions(project, theme, owner, analyst, client_for):
    other = services.theme_create(project=project, actor=owner, name="Friendship")
    services.comment_post(theme=theme, actor=owner, body="@arjun here")
    services.comment_post(theme=other, actor=owner, body="@arjun there")
    client = client_for(analyst)
    assert client.get(reverse("themes:thread", args=[project.uuid, theme.uuid])).status_code == 200
    assert _badge(client, project)[2] == 1


def test_trashed_themes_and_other_projects_do_not_count(project, theme, owner, analyst, client_for):
    services.comment_post(theme=theme, actor=owner, body="@arjun in a theme that goes to the trash")
    services.theme_delete(theme=theme, actor=owner)
    elsewhere = Project.objects.create(name="Elsewhere", created_by=owner)
    Membership.objects.create(project=elsewhere, user=owner, role=Role.OWNER)
    Membership.objects.create(project=elsewhere, user=analyst, role=Role.ANALYST)
    far = services.theme_create(project=elsewhere, actor=owner, name="Far away")
    services.comment_post(theme=far, actor=owner, body="@arjun in another project")
    assert _badge(client_for(analyst), project) is None
    assert _badge(client_for(analyst), elsewhere)[2] == 1


def test_the_badge_is_one_count_query_whatever_the_number_of_mentions(project, theme, owner, analyst, client_for,
                                                                       django_assert_num_queries):
    with CaptureQueriesContext(connection) as few:
        assert unread_mentions_count(project, analyst) == 0
    assert len(few.captured_queries) == 1 and "COUNT(" in few.captured_queries[0]["sql"].upper()
    client = client_for(analyst)
    client.get(_home(project))
    with CaptureQueriesContext(connection) as empty:
        client.get(_home(project))
    for i in range(30):
        services.comment_post(theme=theme, actor=owner, body=f"@arjun number {i}")
    with django_assert_num_queries(len(empty.captured_queries)):
        assert _badge(client, project)[2] == 30


def test_mentioning_yourself_is_not_news(project, theme, analyst):
    from themes.models import Comment

    comment = Comment.objects.create(theme=theme, author=analyst, body="Note to self, @arjun")  # e.g. an import
    comment.mentions.add(analyst)
    assert unread_mentions_count(project, analyst) == 0


def test_a_mention_by_a_deleted_account_still_counts(project, theme, owner, analyst):
    from django.contrib.auth import get_user_model

    leaver = get_user_model().objects.create_user("leaver", password="x")
    Membership.objects.create(project=project, user=leaver, role=Role.ANALYST)
    services.comment_post(theme=theme, actor=leaver, body="@arjun before I go")
    leaver.delete()  # the comment stays, without an author
    assert unread_mentions_count(project, analyst) == 1
