"""A backup is refused by what restoring it would take in memory, before its members are parsed."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from reports import backup
from reports.backup import BackupError, backup_people
from tests import memory
from tests.memory import MB


def backup_zip(members: dict[str, bytes | tuple[bytes, int]]) -> bytes:
    """A backup whose manifest lists `members`; a (block, n) member is streamed as `[` + block * n + `0]`."""
    out = io.BytesIO()
    manifest = {"format": backup.FORMAT, "version": 1,
                "models": [{"model": name.removeprefix("data/").removesuffix(".json"), "file": name} for name in members]}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, content in members.items():
            if isinstance(content, bytes):
                zf.writestr(name, content)
                continue
            block, times = content
            with zf.open(name, "w", force_zip64=True) as fh:
                fh.write(b"[")
                for _ in range(times):
                    fh.write(block)
                fh.write(b"0]")
    return out.getvalue()


PROJECT = json.dumps([{"pk": 1, "fields": {"name": "P", "uuid": "0b7c3f3e-7b6e-4a34-9d0b-1c2d3e4f5a6b"}}]).encode()
VARIED = bytes(b"01"[(n * 7919 % 101) & 1] for n in range(1 << 16)).replace(b"0", b"0,").replace(b"1", b"1,")


def refused_within(data: bytes, budget: int) -> str:
    return str(memory.refused_within(BackupError, lambda: backup_people(source=data, filename="b.zip"), budget))


@pytest.mark.django_db
def test_a_huge_project_member_is_refused_unread():
    data = backup_zip({"data/projects.project.json": (VARIED, 100)})  # 12 MB of one "project" list
    assert refused_within(data, 5 * MB) == "b.zip: data/projects.project.json unpacks to 12.5 MB; it may be at most 4 MB"


@pytest.mark.django_db
def test_members_larger_than_a_restore_may_hold_are_refused_from_the_zip_directory(monkeypatch):
    monkeypatch.setattr(backup, "RESTORE_MEMORY_BUDGET", 10 * MB)
    data = backup_zip({"data/projects.project.json": PROJECT, "data/interviews.turn.json": (VARIED, 100)})
    assert refused_within(data, 5 * MB) == ("b.zip: too large to restore on this server: its data unpacks to 13 MB, "
                                            "more than the 10 MB one restore may use")


@pytest.mark.django_db
@pytest.mark.parametrize("member", ["data/interviews.turn.json", "data/coding.coding.json"])
def test_a_member_of_millions_of_tiny_values_is_refused_before_it_is_parsed(monkeypatch, member):
    # 1.5 MB of `{},` and `[],` is 500,000 containers (~35 MB once parsed): over a 20 MB budget, whether the people step only
    # scans the member (turns) or parses it (codings name their coder).
    monkeypatch.setattr(backup, "RESTORE_MEMORY_BUDGET", 20 * MB)
    tiny = VARIED.replace(b"0,", b"{},").replace(b"1,", b"[],")  # 65,536 values, compressing like real data
    data = backup_zip({"data/projects.project.json": PROJECT, member: (tiny, 8)})
    message = refused_within(data, 8 * MB)
    assert message.startswith("b.zip: too large to restore on this server: restoring it would take about ")
    assert f"(at {member}), more than the 20 MB one restore may use" in message
