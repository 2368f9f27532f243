"""A quote is pinned to a theme once: a second pin, sequential or at the same moment, says it is already pinned."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from projects.tests.race import in_two_threads
from themes import services
from themes.models import Exemplar


@pytest.mark.django_db
def test_pinning_the_same_quote_twice_says_it_is_already_pinned(project, owner, analyst, make_interview, client_for):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    _, segments = make_interview()
    url = f"/p/{project.uuid}/themes/t/{theme.uuid}/exemplars/"
    client = client_for(analyst)
    client.post(url, {"segment": segments[0].pk})
    response = client.post(url, {"segment": segments[0].pk}, follow=True)
    assert "Not pinned: This quote is already pinned to “Honesty”." in response.content.decode()
    assert Exemplar.objects.filter(theme=theme).count() == 1
    # Another stretch of the same sentence, or the same sentence on another theme, is another pin.
    services.exemplar_pin(theme=theme, actor=owner, segment=segments[0], quote="I try to be honest")
    services.exemplar_pin(theme=services.theme_create(project=project, actor=owner, name="Other"), actor=owner, segment=segments[0])
    assert Exemplar.objects.count() == 3


@pytest.mark.django_db
def test_merging_keeps_a_quote_both_themes_had_once(project, owner, make_interview):
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    _, segments = make_interview()
    services.exemplar_pin(theme=a, actor=owner, segment=segments[0])
    services.exemplar_pin(theme=a, actor=owner, segment=segments[1])
    kept = services.exemplar_pin(theme=b, actor=owner, segment=segments[0])
    services.theme_merge(source=a, target=b, actor=owner)
    assert sorted(Exemplar.objects.filter(theme=b).values_list("segment_id", flat=True)) == [segments[0].pk, segments[1].pk]
    assert Exemplar.objects.filter(theme=b, segment=segments[0]).get() == kept


@pytest.mark.django_db(transaction=True)
def test_two_pins_of_one_quote_at_the_same_moment_make_one_exemplar(project, owner, make_interview):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    _, segments = make_interview()
    barrier, refusals, errors = threading.Barrier(2), [], []

    def pin():
        try:
            barrier.wait()
            services.exemplar_pin(theme=theme, actor=owner, segment=segments[0])
        except ValidationError as exc:
            refusals.extend(exc.messages)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    in_two_threads(pin, timeout=60)
    assert errors == []
    assert refusals == ["This quote is already pinned to “Honesty”."]
    assert Exemplar.objects.filter(theme=theme).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_first_of_a_quote_pinned_twice(project, owner, make_interview):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    _, segments = make_interview()
    first = services.exemplar_pin(theme=theme, actor=owner, segment=segments[0])
    other = services.exemplar_pin(theme=theme, actor=owner, segment=segments[1])
    executor = MigrationExecutor(connection)
    executor.migrate([("themes", "0008_review_notes_saved")])
    try:
        with connection.cursor() as cursor:  # a double click before the constraint existed
            cursor.execute("INSERT INTO themes_exemplar (uuid, theme_id, turn_id, segment_id, spans, quote, note, position, created_at)"
                           " SELECT gen_random_uuid(), theme_id, turn_id, segment_id, spans, quote, 'again', position + 5, now()"
                           " FROM themes_exemplar WHERE id = %s", [first.pk])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert list(Exemplar.objects.filter(theme=theme).order_by("id")) == [first, other]
