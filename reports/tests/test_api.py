# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""JSON endpoints for the report tables: same rules as the pages, flat query counts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects import live
from reports.tests.tables_world import code, seg, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def api(w, what: str) -> str:
    return f"/api/projects/{w.project.uuid}/reports/{what}/"


@pytest.mark.parametrize("what", ["excerpts", "frequency", "codebook"])
def test_outsiders_get_404_and_anonymous_users_are_refused(world, client_for, outsider, client, what):
    assert client_for(outsider).get(api(world, what)).status_code == 404
    assert client.get(api(world, what)).status_code in (401, 403)


@pytest.mark.parametrize("what", ["excerpts", "frequency", "codebook"])
def test_viewers_read_but_cannot_write(world, client_for, viewer, what):
    c = client_for(viewer)
    assert c.get(api(world, what)).status_code == 200
    assert c.post(api(world, what), {}).status_code in (403, 405)


def test_excerpts_json_with_columns_and_paging(world, client_for, owner):
    c = client_for(owner)
    data = c.get(api(world, "excerpts"), {"columns": ["code", "model", "quote"], "limit": 2}).json()
    assert data["columns"] == ["code", "model", "quote"] and data["headers"] == ["Code", "Model", "Quote"]
    assert len(data["results"]) == 2 and data["matching_segments"] >= 5
    assert set(data["results"][0]) == {"code", "model", "quote", "interview_uuid", "coders"}
    rest = c.get(api(world, "excerpts"), {"columns": ["code", "model", "quote"], "offset": 2, "limit": 100}).json()
    everything = c.get(api(world, "excerpts"), {"columns": ["code", "model", "quote"]}).json()["results"]
    assert data["results"] + rest["results"] == everything


def test_excerpts_json_rejects_bad_choices(world, client_for, owner):
    response = client_for(owner).get(api(world, "excerpts"), {"columns": "nope"})
    assert response.status_code == 400 and "Unknown column" in response.json()["detail"]
    assert client_for(owner).get(api(world, "excerpts"), {"limit": "many"}).status_code == 400


@pytest.mark.parametrize(("what", "params", "says"), [
    ("excerpts", {"rows": "bogus"}, "rows: 'bogus' is not one of all, exemplars."),
    ("excerpts", {"question": "2"}, "question: '2' is neither yes nor no; send 1 or 0."),
    ("excerpts", {"quotes": "html"}, "quotes: 'html' is not one of plain, markdown."),
    ("excerpts", {"suggestions": "bogus"}, "suggestions: 'bogus' is not one of include, exclude."),
    ("excerpts", {"caption": "c" * 301}, "caption: at most 300 characters (got 301)."),
    ("frequency", {"rollup": "maybe"}, "rollup: 'maybe' is neither yes nor no; send 1 or 0."),
    ("frequency", {"correction": "maybe"}, "correction: 'maybe' is neither yes nor no; send 1 or 0."),
    ("frequency", {"suggestions": "bogus"}, "suggestions: 'bogus' is not one of include, exclude."),
])
def test_a_report_option_that_means_nothing_is_refused_by_name(world, client_for, viewer, what, params, says):
    response = client_for(viewer).get(api(world, what), params)
    assert response.status_code == 400 and response.json() == {"detail": says}


def test_report_options_accept_what_the_pages_send(world, client_for, viewer):
    c = client_for(viewer)
    assert c.get(api(world, "excerpts"), {"rows": "exemplars", "question": "1", "quotes": "markdown",
                                          "suggestions": "exclude", "caption": "c" * 300}).status_code == 200
    # The frequency page sends rollup twice: its hidden "0", then the ticked box's "1".
    both = c.get(f"{api(world, 'frequency')}?rollup=0&rollup=1&correction=1&suggestions=exclude")
    assert both.status_code == 200
    assert c.get(api(world, "frequency"), {"rollup": "false", "correction": "no"}).status_code == 200


def test_frequency_json_encodes_infinity_as_text(world, client_for, owner):
    data = client_for(owner).get(api(world, "frequency"), {"a": str(world.gpt.uuid), "b": str(world.claude.uuid)}).json()
    by = {r["label"]: r for r in data["rows"]}
    assert by["Structure"]["log_ratio"] == "+inf" and by["AI self"]["log_ratio"] == "-inf"
    assert by["Unused"]["log_ratio"] is None and by["Feeling"]["log_ratio"] == 0.0
    assert [c["label"] for c in data["columns"]] == ["Claude", "GPT-4o", "Llama"]
    assert data["columns"][1]["key"] == str(world.gpt.uuid) and data["by"] == "participant"


def test_frequency_json_groups_by_any_attribute_with_the_pages_options(world, client_for, owner):
    c = client_for(owner)
    page = c.get(f"/p/{world.project.uuid}/reports/frequency/", {"by": "provider", "a": "OpenAI", "b": "Anthropic",
                                                                  "correction": "1", "denominator": "interviews"})
    data = c.get(api(world, "frequency"), {"by": "provider", "a": "OpenAI", "b": "Anthropic", "correction": "1",
                                           "denominator": "interviews"}).json()
    assert (data["by"], data["by_label"], data["denominator"]) == ("provider", "Provider", "interviews")
    assert [c["key"] for c in data["columns"]] == ["Anthropic", "Meta", "OpenAI"]
    assert "Continuity correction" in data["note"] and data["note"].split(" ")[0] in page.content.decode()
    structure = next(r for r in data["rows"] if r["label"] == "Structure")
    assert isinstance(structure["log_ratio"], float) and structure["ci_low"] < structure["log_ratio"] < structure["ci_high"]
    bad = c.get(api(world, "frequency"), {"by": "provider", "a": "Nobody"})
    assert bad.status_code == 400 and "Nobody" in bad.json()["detail"]


def test_api_query_counts_are_flat(world, client_for, owner):
    c = client_for(owner)

    def count(what: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert c.get(api(world, what)).status_code == 200
        return len(ctx)

    before = {w: count(w) for w in ("excerpts", "frequency", "codebook")}
    for text in ("It grows with time.", "Borders decide a lot."):
        code(world.codes["AI self"], seg(world.interviews["gpt"], text), world.analyst)
    live.publish(world.project.uuid, "coding")  # as coding.services does after every coding write: counted afresh
    assert {w: count(w) for w in ("excerpts", "frequency", "codebook")} == before


def test_the_codebook_counts_each_coded_segment_once_and_only_in_live_interviews(world, client_for, viewer):
    def coded_segments() -> dict[str, int]:
        return {r["code"]: r["coded_segments"] for r in client_for(viewer).get(api(world, "codebook")).json()["results"]}

    # Feeling: "Home is a feeling." (by both coders: once), "It grows with time.", Claude's "Belonging is yours".
    assert coded_segments() == {"Feeling": 3, "Structure": 2, "AI self": 1, "Unused": 0}
    world.interviews["claude"].deleted_at = world.interviews["claude"].created_at  # in the trash
    world.interviews["claude"].save(update_fields=["deleted_at"])
    assert coded_segments() == {"Feeling": 2, "Structure": 2, "AI self": 0, "Unused": 0}
