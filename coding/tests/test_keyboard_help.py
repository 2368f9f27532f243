"""Keyboard help is generated from each page's one list of keys (coding/shortcuts.py), with the key map its script binds."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from coding.models import SuggestionRun
from coding.shortcuts import SECOND_READER, WORKSPACE
from projects.shortcuts import Shortcut, keymap

pytestmark = pytest.mark.django_db


def assert_help_lists(body: str, shortcuts: list[Shortcut]) -> None:
    """The page's key map is the list, and its help dialog shows every key of it with what it does."""
    data = re.search(r'<script id="keyboard-shortcuts" type="application/json">(.*?)</script>', body, re.S).group(1)
    assert json.loads(data) == keymap(shortcuts)
    dialog = body[body.index('<dialog id="help-dialog"'):]
    dialog = dialog[:dialog.index("</dialog>")]
    for shortcut in shortcuts:
        row = re.search(rf'<dt data-keys="{re.escape(html.escape(" ".join(shortcut.keys)))}">(.*?)</dt><dd>(.*?)</dd>', dialog)
        assert row, shortcut
        assert re.findall(r"<kbd>(.*?)</kbd>", row.group(1)) == [html.escape(k) for k in shortcut.shown]
        assert row.group(2) == html.escape(shortcut.does)


def test_keys_are_shown_as_people_press_them():
    assert Shortcut(("j", "ArrowDown"), "down", "").shown == ["j", "↓"]
    assert Shortcut(("J", "Escape", "/"), "x", "").shown == ["Shift+j", "Esc", "/"]
    assert Shortcut(tuple("123456789"), "recent", "").shown == ["1–9"]
    assert Shortcut(("1", "3", "4"), "some", "").shown == ["1", "3", "4"]


def test_no_two_actions_share_a_key():
    for shortcuts in (WORKSPACE, SECOND_READER):
        keys = [k for s in shortcuts for k in s.keys]
        assert len(keys) == len(set(keys))
        assert len({s.action for s in shortcuts}) == len(shortcuts)


def test_the_workspace_help_lists_its_keys(client_for, viewer, project, interview):
    r = client_for(viewer).get(reverse("coding:workspace", args=[project.uuid, interview.uuid]))
    assert_help_lists(r.content.decode(), WORKSPACE)


def test_the_second_readers_queue_lists_its_keys(client_for, analyst, project):
    run = SuggestionRun.objects.create(project=project, created_by=analyst, model="m", endpoint_url="http://x/v1",
                                       prompt_version="v", codebook=[], windows=[], status=SuggestionRun.Status.DONE)
    r = client_for(analyst).get(reverse("coding:reader_run", args=[project.uuid, run.uuid]))
    assert_help_lists(r.content.decode(), SECOND_READER)
