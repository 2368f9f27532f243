"""The case-variables page: every participant's variables in one table, edited in place or set from a CSV/XLSX sheet."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from interviews.models import Participant
from interviews.tests.factories import make_participant, xlsx

pytestmark = pytest.mark.django_db


@pytest.fixture
def models(project) -> dict[str, Participant]:
    return {"gpt": make_participant(project, label="GPT-4o", attributes={"family": "GPT", "params_b": 200}),
            "claude": make_participant(project, label="Claude", attributes={}),
            "llama": make_participant(project, label="Llama", attributes={"family": "Llama", "notes": {"a": 1}})}


def url(project) -> str:
    return reverse("interviews:participant_variables", args=[project.uuid])


def attrs(p: Participant) -> dict:
    p.refresh_from_db()
    return p.attributes




def test_members_see_the_table_outsiders_get_404_viewers_cannot_save(client_for, viewer, outsider, project, models):
    response = client_for(viewer).get(url(project))
    assert response.status_code == 200
    html = response.content.decode()
    assert "family" in html and "Llama" in html and 'name="cell-' not in html  # read-only for viewers
    assert client_for(outsider).get(url(project)).status_code == 404
    assert client_for(outsider).post(url(project), {"name": ["family"]}).status_code == 404
    assert client_for(viewer).post(url(project), {"name": ["family"], f"cell-{models['gpt'].uuid}": ["X"]}).status_code == 403
    assert attrs(models["gpt"])["family"] == "GPT"


def test_the_table_sets_renames_and_removes_variables(client_for, analyst, project, models):
    gpt, claude, llama = models["gpt"], models["claude"], models["llama"]
    # Columns as shown: family, notes, params_b, then one new column.
    data = {"name": ["lineage", "notes", "params_b", "open weights"], "shown": ["family", "notes", "params_b", ""],
            f"cell-{gpt.uuid}": ["GPT", "", "200", "no"],
            f"cell-{claude.uuid}": ["Claude", "", "", "no"],
            f"cell-{llama.uuid}": ["Llama", '{"a": 1}', "", "yes"]}
    response = client_for(analyst).post(url(project), data)
    assert response.status_code == 302
    assert attrs(gpt) == {"lineage": "GPT", "params_b": 200, "open weights": "no"}  # unchanged 200 stays a number
    assert attrs(claude) == {"lineage": "Claude", "open weights": "no"}
    assert attrs(llama) == {"lineage": "Llama", "notes": {"a": 1}, "open weights": "yes"}


def test_a_csv_sheet_sets_the_variables_it_names(client_for, analyst, project, models):
    sheet = b"participant;family;open weights\r\nClaude;Claude;no\r\nLlama;;yes\r\n"
    response = client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile("vars.csv", sheet), "action": "upload"})
    assert response.status_code == 302
    assert attrs(models["claude"]) == {"family": "Claude", "open weights": "no"}
    assert attrs(models["llama"]) == {"notes": {"a": 1}, "open weights": "yes"}  # empty cell removed family
    assert attrs(models["gpt"]) == {"family": "GPT", "params_b": 200}  # not in the sheet: untouched


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_a_csv_sheet_reads_whatever_its_line_endings(client_for, analyst, project, models, newline):
    """Excel for Mac's “CSV (Macintosh)” ends lines with a lone CR."""
    sheet = newline.join(["participant,family", "Claude,Claude", "Llama,Llama", ""]).encode()
    response = client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile("mac.csv", sheet), "action": "upload"})
    assert response.status_code == 302
    assert attrs(models["claude"]) == {"family": "Claude"} and attrs(models["llama"])["family"] == "Llama"


def test_an_xlsx_sheet_keeps_numbers(client_for, analyst, project, models):
    data = xlsx([["Participant", "params_b"], ["Claude", 175], ["Llama", 70.5]])
    client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile("vars.xlsx", data), "action": "upload"})
    assert attrs(models["claude"]) == {"params_b": 175} and attrs(models["llama"])["params_b"] == 70.5


@pytest.mark.parametrize(("name", "content", "message"), [
    ("vars.csv", "participant,family\nClaude,C\nMistral,M\n", "vars.csv, row 3: there is no participant “Mistral”"),
    ("vars.csv", "participant,family,family\nClaude,C,D\n", "the variable “family” is in columns 2 and 3"),
    ("vars.csv", "participant,,family\nClaude,C,D\n", "vars.csv, row 2, column 2: the value “C” has no variable name"),
    ("vars.csv", "participant,family\nClaude,C\nClaude,D\n", "row 3: participant “Claude” appears twice"),
    ("vars.txt", "participant,family\n", "upload a .csv or .xlsx file"),
    ("vars.xlsx", "not a workbook", "not a readable Excel workbook"),
    ("vars.csv", "participant,family\nClaude,C\x00\n", "vars.csv, row 2, “family”: a NUL character (byte 0x00), which "
                                                        "no text may hold"),
    ("vars.csv", "participant,fam\x00ily\nClaude,C\n", "vars.csv, column 2: a NUL character (byte 0x00), which no "
                                                       "text may hold"),
])
def test_a_bad_sheet_says_where_and_saves_nothing(client_for, analyst, project, models, name, content, message):
    response = client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile(name, content.encode()), "action": "upload"})
    assert response.status_code == 400 and message in response.content.decode()
    assert attrs(models["claude"]) == {}  # the valid first row did not land either


def test_query_count_does_not_grow_with_participants(client_for, analyst, project, models):
    c = client_for(analyst)
    with CaptureQueriesContext(connection) as before:
        c.get(url(project))
    for i in range(5):
        make_participant(project, label=f"Extra {i}", attributes={"family": "X"})
    with CaptureQueriesContext(connection) as after:
        c.get(url(project))
    assert len(before) == len(after) <= 5  # session, user, membership, participants, unread badge


def test_an_interview_sheet_sets_attributes_in_the_metadata(client_for, analyst, project, models):
    from interviews.tests.factories import make_interview
    from projects.models import AuditEvent

    one = make_interview(project, models["gpt"], [("participant", "One.")], title="Review 1")
    two = make_interview(project, models["gpt"], [("participant", "Two.")], title="Review 2")
    one.metadata = {"source": "kept"}
    one.save(update_fields=["metadata"])
    sheet = f"interview,author_gender,wave\nReview 1,W,1\n{two.uuid},M,\n".encode()
    response = client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile("truth.csv", sheet), "action": "interviews"})
    assert response.status_code == 302
    one.refresh_from_db()
    two.refresh_from_db()
    assert one.metadata == {"source": "kept", "author_gender": "W", "wave": "1"} and two.metadata == {"author_gender": "M"}
    event = AuditEvent.objects.filter(summary__startswith="Interview “Review 1”").get()
    assert event.data["changes"] == {"author_gender": [None, "W"], "wave": [None, "1"]}


def test_an_interview_sheet_refuses_a_title_two_interviews_share(client_for, analyst, project, models):
    from interviews.tests.factories import make_interview

    for _ in range(2):
        make_interview(project, models["gpt"], [("participant", "Same.")], title="Same title")
    sheet = b"interview,author_gender\nSame title,W\n"
    response = client_for(analyst).post(url(project), {"sheet": SimpleUploadedFile("t.csv", sheet), "action": "interviews"})
    assert response.status_code == 400
    assert "t.csv, row 2: there is no interview “Same title” in this project; use its title" in response.content.decode()


def test_a_wrong_file_for_interview_attributes_says_what_the_interview_sheet_holds(client_for, analyst, project, models):
    png = SimpleUploadedFile("screenshot.png", b"\x89PNG\r\n\x1a\n")
    response = client_for(analyst).post(url(project), {"sheet": png, "action": "interviews"})
    body = response.content.decode()
    assert response.status_code == 400
    # The interview sheet's first column names interviews: the case-variables sheet's layout would mislead.
    assert "screenshot.png: upload a .csv or .xlsx file (first column: the interview’s title or uuid" in body
    assert "first column: participant" not in body
