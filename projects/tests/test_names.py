"""One spelling for names that look the same (projects/names.py)."""

from __future__ import annotations

import unicodedata

import pytest

from projects.names import name_key, normalised_name

CAFE = "Zuhause Café"


@pytest.mark.parametrize("variant", [
    unicodedata.normalize("NFD", CAFE), "Zuhause Ca\u200bfé", "Zuhause\u00a0Café", "Zuhause  Café", " Zuhause Café\t",
    "\ufeffZuhause Café", "Zuhause\u2060 Café", "Zuhause\u202fCafé",
])
def test_names_that_look_the_same_are_stored_the_same(variant):
    assert normalised_name(variant) == CAFE


def test_case_is_kept_but_not_compared():
    assert normalised_name("GPT-4O") == "GPT-4O"
    assert name_key("GPT-4O") == name_key(" gpt-4o ")


def test_joiners_that_change_how_a_word_is_written_stay():
    persian = "می\u200cخواهم"  # the zero-width non-joiner is part of the spelling
    family = "\U0001f469\u200d\U0001f4bb coding"  # one emoji (woman technologist), not two
    assert normalised_name(persian) == persian and normalised_name(family) == family


def test_nothing_but_invisible_characters_is_no_name():
    assert normalised_name("\u200b \u00a0") == "" and normalised_name(None) == ""
