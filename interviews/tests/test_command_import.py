"""python manage.py import_transcripts: summaries, clear errors, nothing half-imported."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from interviews.models import Interview, Participant, Segment, Turn
from projects.models import Membership, Project

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CHATGPT = SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_transcripts", *args, stdout=out)
    return out.getvalue()


def state() -> tuple[int, int, int, int, int]:
    return (Project.objects.count(), Interview.objects.count(), Turn.objects.count(), Segment.objects.count(),
            Participant.objects.count())


def test_imports_into_a_project_by_name_with_a_line_per_interview(project):
    out = run(str(CHATGPT), str(CLAUDE), "--project", project.name)
    lines = out.splitlines()
    assert lines[0].startswith("imported  chatgpt2graph-conversations.json: “Average Distance in U(0,1)” — "
                               "gpt-4-code-interpreter, 42 turns (")
    assert sum(line.startswith("imported  ") for line in lines) == 4
    assert lines[-1].startswith(f"4 interviews, 50 turns, {Segment.objects.count()} segments imported into "
                                f"“{project.name}”")
    assert Interview.objects.filter(project=project).count() == 4


def test_project_by_uuid_with_a_chosen_participant_and_depth(project):
    run(str(CLAUDE), "--project", str(project.uuid), "--participant", "Claude 3 Opus", "--depth", "brief")
    assert set(Interview.objects.values_list("participant__label", "depth")) == {("Claude 3 Opus", "brief")}


def test_create_project_with_owner(owner):
    run(str(CLAUDE), "--project", "New study", "--create-project", "--owner", owner.username)
    project = Project.objects.get(name="New study")
    assert Membership.objects.get(project=project).user == owner
    assert project.interviews.count() == 3


def test_second_run_skips_what_was_imported(project):
    run(str(CLAUDE), "--project", project.name)
    out = run(str(CLAUDE), "--project", project.name)
    assert out.count("skipped   ") == 3
    assert "already imported as “Explain async/await vs Promises”" in out
    assert Interview.objects.count() == 3


def test_unknown_project_is_a_clear_error(db):
    with pytest.raises(CommandError, match="--project: expected the name or UUID of an existing project, found 'Nope' "
                                           r"\(add --create-project to create it\)"):
        run(str(CLAUDE), "--project", "Nope")


def test_bad_file_fails_with_its_location_and_changes_nothing(project, tmp_path):
    bad = tmp_path / "conversations.json"
    data = json.loads(CHATGPT.read_text())
    data[0]["current_node"] = "missing-node"
    bad.write_text(json.dumps(data))
    before = state()
    with pytest.raises(CommandError) as exc:
        run(str(CLAUDE), str(bad), "--project", "Fresh", "--create-project")
    assert str(exc.value) == ("conversations.json: conversation 1 (id 966da5c4-5bb7-4e4d-ab6d-a7316b96266e), "
                              "field 'current_node': expected the id of a node in 'mapping', found the text 'missing-node'")
    assert state() == before  # not even the project was created


def test_missing_file_is_named(project):
    with pytest.raises(CommandError, match=r"^/nope\.json: expected a readable file, found nothing there$"):
        run("/nope.json", "--project", project.name)


def test_forced_format_mismatch_is_named(project):
    with pytest.raises(CommandError, match="expected an object with a 'messages' list"):
        run(str(CLAUDE), "--project", project.name, "--format", "openai")


def test_exit_status_is_non_zero_from_the_shell(project, tmp_path):
    import subprocess
    import sys

    from django.db import connection

    bad = tmp_path / "t.txt"
    bad.write_text("no labels here\n")
    db = connection.settings_dict
    env = {"DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
           "DJANGO_SETTINGS_MODULE": "config.settings_test", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "manage.py", "import_transcripts", str(bad), "--project", "X", "--create-project"],
                          cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "t.txt: expected speaker labels at the start of lines" in proc.stderr
