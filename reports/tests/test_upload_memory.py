"""A backup is refused by its members' sizes and its rows, counted before any is parsed; its rows are read a batch at a
time, so what a restore holds does not grow with the backup's bytes."""

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
def test_a_backup_of_more_rows_than_a_restore_may_bring_in_is_refused_before_any_is_parsed(monkeypatch):
    monkeypatch.setattr(backup, "MAX_RESTORE_ROWS", 100_000)
    data = backup_zip({"data/projects.project.json": PROJECT, "data/interviews.turn.json": (b'{"pk": 1, "fields": {}},', 150_000)})
    assert refused_within(data, 5 * MB) == ("b.zip: too large to restore on this server: it holds 150,001 rows, more than "
                                            "the 100,000 one restore may bring in")


@pytest.mark.django_db
@pytest.mark.parametrize("member", ["data/interviews.turn.json", "data/coding.coding.json"])
def test_a_member_of_millions_of_tiny_values_is_read_a_row_at_a_time(member):
    # 1.5 MB of `{},` and `[],` is 500,000 containers (~35 MB if parsed at once): the restore stops at the first,
    # which is not a row, having parsed only it (turns: when giving their UUIDs fresh ones; codings: their coders).
    from django.contrib.auth import get_user_model

    from reports.backup import project_restore

    owner = get_user_model().objects.create_user("restorer")
    tiny = VARIED.replace(b"0,", b"{},").replace(b"1,", b"[],")
    data = backup_zip({"data/projects.project.json": PROJECT, member: (tiny, 8)})
    refused = memory.refused_within(BackupError, lambda: project_restore(source=data, owner=owner, filename="b.zip"),
                                    4 * MB)
    label = member.removeprefix("data/").removesuffix(".json")
    assert str(refused) == f"b.zip: a {label} row is malformed"
    assert not backup.Project.objects.exists()


@pytest.mark.django_db
def test_a_member_that_is_not_a_list_of_rows_is_refused():
    from django.contrib.auth import get_user_model

    from reports.backup import project_restore

    data = backup_zip({"data/projects.project.json": PROJECT, "data/interviews.turn.json": b'{"pk": 1}'})
    with pytest.raises(BackupError, match="b.zip: data/interviews.turn.json is not a list of rows"):
        project_restore(source=data, owner=get_user_model().objects.create_user("restorer"), filename="b.zip")
