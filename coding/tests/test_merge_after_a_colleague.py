"""Merging from a code's page loaded before a colleague merged, archived or trashed one of the two codes.

A walk-through found: with F merged into E by a colleague, a page of E still offering F merged E into F with
Django's "Select a valid choice. That choice is not one of the available choices."; merging a code a colleague
had merged meanwhile merged it a second time.
"""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from coding.models import CodeEvent, Coding
from coding.services import code_archive, code_merge

pytestmark = pytest.mark.django_db

BY_OLIVIA = r"\(by olivia (on \d{4}-\d\d-\d\d )?at \d\d:\d\d\)"


def _merge(client, project, source, target):
    r = client.post(reverse("coding:code_merge", args=[project.uuid, source.uuid]), {"target": target.pk, "reason": ""})
    return r.status_code, html.unescape(r.content.decode())


def test_merging_into_a_code_a_colleague_merged_into_this_one_says_who_did_and_that_nothing_is_left(
        client_for, owner, analyst, project, make_code, participant_segments):
    e, f = make_code("Explains by correction"), make_code("Frames home as safety")
    Coding.objects.create(segment=participant_segments[0], code=f, coder=owner, interview=participant_segments[0].interview)
    code_merge(source=f, target=e, actor=owner)  # while the analyst's page of E still offers F
    status, page = _merge(client_for(analyst), project, e, f)
    assert status == 400
    assert re.search(f"“Frames home as safety” was merged into “Explains by correction” {BY_OLIVIA}; nothing to merge.",
                     page)
    assert "Select a valid choice" not in page
    e.refresh_from_db()
    f.refresh_from_db()
    assert not e.archived and f.merged_into == e and list(Coding.objects.values_list("code_id", flat=True)) == [e.pk]


def test_merging_a_code_a_colleague_merged_meanwhile_says_where_it_went(client_for, owner, analyst, project, make_code):
    e, f, g = make_code("Explains by correction"), make_code("Frames home as safety"), make_code("Deference")
    code_merge(source=e, target=f, actor=owner)
    status, page = _merge(client_for(analyst), project, e, g)
    assert status == 400
    assert re.search(f"“Explains by correction” was merged into “Frames home as safety” {BY_OLIVIA}; nothing to merge.",
                     page)
    e.refresh_from_db()
    assert e.merged_into == f and CodeEvent.objects.filter(code=g).count() == 1  # created, never merged into


def test_merging_into_a_code_merged_into_a_third_leads_to_that_one(client_for, owner, analyst, project, make_code):
    e, f, g = make_code("Explains by correction"), make_code("Frames home as safety"), make_code("Deference")
    code_merge(source=f, target=g, actor=owner)
    event = CodeEvent.objects.get(code=f, action=CodeEvent.Action.MERGED)
    CodeEvent.objects.filter(pk=event.pk).update(created_at=dt.datetime(2026, 1, 2, 20, 29, tzinfo=dt.UTC))
    status, page = _merge(client_for(analyst), project, e, f)
    assert status == 400
    assert ("“Frames home as safety” was merged into “Deference” (by olivia on 2026-01-02 at 20:29); "
            "merge into “Deference” instead.") in page
    e.refresh_from_db()
    assert e.merged_into is None and not e.archived


def test_merging_into_a_code_archived_or_trashed_meanwhile_says_which(client_for, owner, analyst, project, make_code):
    e, f, g = make_code("Explains by correction"), make_code("Frames home as safety"), make_code("Deference")
    code_archive(code=f, actor=owner)
    g.deleted_at = timezone.now()
    g.save(update_fields=["deleted_at"])
    c = client_for(analyst)
    status, page = _merge(c, project, e, f)
    assert status == 400 and "“Frames home as safety” is archived; bring it back before merging into it." in page
    status, page = _merge(c, project, e, g)
    assert status == 400 and "“Deference” is in the trash; restore it before merging into it." in page
    e.refresh_from_db()
    assert e.merged_into is None and not e.archived


def test_the_merge_form_offers_only_codes_in_use(client_for, owner, analyst, project, make_code):
    e, f, g, h = (make_code(n) for n in ("Explains by correction", "Frames home as safety", "Deference", "Trust"))
    code_archive(code=f, actor=owner)
    g.deleted_at = timezone.now()
    g.save(update_fields=["deleted_at"])
    page = client_for(analyst).get(reverse("coding:code_detail", args=[project.uuid, e.uuid])).content.decode()
    merge_form = page[page.index('id="merge"'):page.index('id="split"')]
    assert f'value="{h.pk}"' in merge_form
    assert f'value="{f.pk}"' not in merge_form and f'value="{g.pk}"' not in merge_form and f'value="{e.pk}"' not in merge_form
