"""A depth bomb per input, parsed in a child process under a 512 MB memory ceiling (issue 21).

A 600 KB file nested 100,000 levels deep once drove a web worker to 14 GB. Each input here is parsed the
way the app parses it, in a process that cannot take more than 512 MB: it must be refused with the clear
message, quickly, and the process must not run out of memory or be killed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEVELS = 100_000
CEILING_MB = 512

PRELUDE = """
import os, sys
from config.memory import apply_memory_limit
apply_memory_limit(int(os.environ["CEILING_MB"]))
import django
django.setup()
path = sys.argv[1]
data = open(path, "rb").read()
try:
"""
POSTLUDE = """
except MemoryError:
    print("OUT OF MEMORY")
except Exception as e:
    print(f"{type(e).__name__}: {e}")
else:
    print("ACCEPTED")
"""


def parse_under_ceiling(tmp_path: Path, name: str, data: bytes, parse: str) -> str:
    """Run `parse` (which reads `path` or `data`) in a child process with the memory ceiling; its outcome."""
    path = tmp_path / name
    path.write_bytes(data)
    code = PRELUDE + textwrap.indent(textwrap.dedent(parse).strip(), "    ") + POSTLUDE
    env = {**os.environ, "CEILING_MB": str(CEILING_MB), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    # The timeout only keeps a regression from hanging the suite; a refusal takes well under a second.
    proc = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"the child process died ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc.stdout.strip()


def json_bomb(head: str, tail: str) -> bytes:
    """`head` + 100,000 nested {"a": ...} + `tail`: about 600 KB."""
    return (head + '{"a": ' * LEVELS + "1" + "}" * LEVELS + tail).encode()


def xml_bomb(head: str, tail: str) -> bytes:
    return (head + "<Code>" * LEVELS + "</Code>" * LEVELS + tail).encode()


def zipped(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


PARSE_TRANSCRIPT = """
from interviews.parsers import SourceFile, parse_upload
list(parse_upload(SourceFile.from_path(path)))
"""

TRANSCRIPTS = {
    "chatgpt": ("conversations.json", json_bomb('[{"title": "t", "mapping": ', "}]")),
    "claude": ("conversations.json", json_bomb('[{"uuid": "c", "chat_messages": [', "]}]")),
    "openai": ("chat.json", json_bomb('{"messages": [{"role": "user", "content": ', "}]}")),
    "openai-jsonl": ("chats.jsonl", b'{"messages": [{"role": "user", "content": "Hi"}]}\n'
                     + json_bomb('{"messages": [{"role": "user", "content": ', "}]}")),
    "sharegpt": ("sharegpt.json", json_bomb('[{"conversations": [{"from": "human", "value": ', "}]}]")),
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", TRANSCRIPTS)
def test_a_transcript_depth_bomb_is_refused_under_the_ceiling(tmp_path, fmt):
    name, data = TRANSCRIPTS[fmt]
    assert 500_000 < len(data) < 800_000
    outcome = parse_under_ceiling(tmp_path, name, data, PARSE_TRANSCRIPT)
    assert outcome.startswith(f"ParseError: {name}: line "), outcome
    assert "found data nested deeper than 100 levels" in outcome


@pytest.mark.slow
def test_a_transcript_depth_bomb_inside_a_zip_is_refused_under_the_ceiling(tmp_path):
    data = zipped({"export/conversations.json": TRANSCRIPTS["chatgpt"][1]})
    outcome = parse_under_ceiling(tmp_path, "chatgpt-export.zip", data, PARSE_TRANSCRIPT)
    assert "conversations.json: line 1, column " in outcome and "nested deeper than 100 levels" in outcome, outcome


@pytest.mark.slow
def test_a_backup_depth_bomb_is_refused_under_the_ceiling(tmp_path):
    data = zipped({"manifest.json": json_bomb('{"format": "rta-studio-project-backup", "models": ', "}")})
    outcome = parse_under_ceiling(tmp_path, "backup.zip", data, """
        from reports.backup import _Archive
        _Archive(path, "backup.zip").json("manifest.json")
    """)
    assert outcome.startswith("BackupError: backup.zip: manifest.json: data nested deeper than 100 levels at line 1, column "), outcome


@pytest.mark.slow
def test_a_qdpx_depth_bomb_is_refused_under_the_ceiling(tmp_path):
    qde = xml_bomb('<?xml version="1.0" encoding="utf-8"?>\n<Project xmlns="urn:QDA-XML:project:1.0" name="p">'
                   "<CodeBook><Codes>", "</Codes></CodeBook></Project>")
    # Stored, not deflated: a 1 MB member compressed 1000:1 is already refused as a ZIP bomb.
    outcome = parse_under_ceiling(tmp_path, "bomb.qdpx", zipped({"project.qde": qde}, zipfile.ZIP_STORED), """
        import refiqda
        refiqda.read_project(path, name="bomb.qdpx")
    """)
    assert outcome.startswith("UnsafeInputError: bomb.qdpx: project.qde: elements nested deeper than 256 levels at line 2, column "), outcome


@pytest.mark.slow
def test_a_qdpx_turn_map_depth_bomb_is_ignored_under_the_ceiling(tmp_path):
    """Our own export's turn map is JSON inside the XML; a deep one is not a turn map (the labels are used instead)."""
    outcome = parse_under_ceiling(tmp_path, "turnmap.json", json_bomb("[", "]"), """
        import refiqda
        from reports.exchange import _turns_from_map
        source = refiqda.TextSource(guid="s", name="s", text="Interviewer: Hi", variable_values=[
            refiqda.VariableValue("v", data.decode())])
        assert _turns_from_map(source, {"rta turns": "v"}) is None
    """)
    assert outcome == "ACCEPTED"


@pytest.mark.slow
def test_a_codebook_depth_bomb_is_refused_under_the_ceiling(tmp_path):
    qdc = xml_bomb('<?xml version="1.0" encoding="utf-8"?>\n<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>', "</Codes></CodeBook>")
    outcome = parse_under_ceiling(tmp_path, "codebook.qdc", qdc, """
        from coding.codebook_import import rows_from_qdc
        rows_from_qdc(data, filename="codebook.qdc")
    """)
    assert outcome.startswith("CodebookImportError: codebook.qdc: elements nested deeper than 256 levels at line 2, column "), outcome


@pytest.mark.slow
def test_an_api_body_depth_bomb_is_refused_under_the_ceiling(tmp_path):
    outcome = parse_under_ceiling(tmp_path, "body.json", json_bomb('{"name": "Trust", "definition": ', "}"), """
        import io
        from projects.api_parsers import SafeJSONParser
        SafeJSONParser().parse(io.BytesIO(data), "application/json", {})
    """)
    assert outcome.startswith("ParseError: JSON parse error - data nested deeper than 100 levels at line 1, column "), outcome


@pytest.mark.slow
def test_the_ceiling_really_stops_a_runaway_parse(tmp_path):
    """The harness itself: without the depth check, a child under the ceiling runs out of memory instead of
    taking the machine, and says so (so the tests above would have caught the 14 GB worker)."""
    outcome = parse_under_ceiling(tmp_path, "conversations.json", TRANSCRIPTS["chatgpt"][1], """
        import ijson
        for _ in ijson.parse(open(path, "rb")):
            pass
    """)
    assert outcome == "OUT OF MEMORY"


def test_json_bombs_are_about_600_kb():
    assert all(500_000 < len(data) < 800_000 for _, data in TRANSCRIPTS.values())
    assert len(json.dumps({"a": 1})) == 8  # the unit json_bomb repeats: {"a":  is 6 bytes, } is 1
