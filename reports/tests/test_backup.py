"""Project backups: every model covered, restore identical field by field, hostile archives refused."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import models

from coding.models import Code, CodeEvent, Coding, Suggestion
from conduct.models import ConductSession, EndpointKey, LiveEndpoint, Seat
from interviews.models import Guide, GuideVersion, Interview, Segment
from projects.models import AuditEvent, Membership, Project, Role
from reports.backup import EXCLUDED, FORMAT, BackupError, backup_plan, project_backup, project_restore, uncovered_models
from reports.tests.test_exchange import _enrich
from themes import models as tm

pytestmark = pytest.mark.django_db


def test_every_model_of_the_projects_apps_is_backed_up_or_excluded_with_a_reason():
    assert uncovered_models() == []
    labels = {p.label for p in backup_plan()}
    assert {"projects.project", "projects.membership", "projects.auditevent", "interviews.participant",
            "interviews.guide", "interviews.guideversion", "interviews.interview", "interviews.turn",
            "interviews.segment", "coding.code", "coding.codeevent", "coding.coding", "themes.theme",
            "themes.themecode"} <= labels
    assert not labels & set(EXCLUDED)
    assert all(reason.strip() for reason in EXCLUDED.values())


def _rich_project(demo_project: Project, analyst) -> Project:
    p = demo_project
    owner = p.memberships.get(role="owner").user
    Membership.objects.create(project=p, user=analyst, role=Role.ANALYST, positionality="Outsider to migration.")
    _enrich(p, analyst)
    code = Code.objects.get(project=p, name="Borders")
    CodeEvent.objects.create(project=p, code=code, actor=owner, action="renamed", reason="clearer",
                             data={"from": "Border", "code": str(code.uuid)})
    seg = Segment.objects.filter(interview__project=p).first()
    Suggestion.objects.create(segment=seg, code=code, rationale="mentions borders", model="gpt-x")
    guide = Guide.objects.create(project=p, name="Belonging guide", created_by=owner)
    version = GuideVersion.objects.create(guide=guide, number=1, opening_prompt="Where is home?",
                                          planned_questions=[{"text": "Why?", "probes": ["More?"]}])
    first, second = list(Interview.objects.filter(project=p).order_by("pk"))[:2]
    second.rerun_of = first
    second.guide_version = version
    second.metadata = {"rerun_of": str(first.uuid), "n": 1.5}
    second.save()
    session = ConductSession.objects.create(project=p, guide_version=version, created_by=owner, checked_questions=[0])
    Seat.objects.create(session=session, interview=first, position=0, replay=["Why?"])
    key = EndpointKey.objects.create(project=p, label="lab key", encrypted="secret-token", hint="sk-…abc")
    LiveEndpoint.objects.create(participant=first.participant, api_key=key, timeout_seconds=30)
    theme = tm.Theme.objects.get(project=p)
    sub = tm.Theme.objects.create(project=p, name="Sub-theme", parent=theme, status="reviewed", position=1)
    tm.ThemeCode.objects.create(theme=sub, code=code, position=0)
    memo = tm.Memo.objects.create(project=p, theme=theme, title="Why neutrality?", body="**Markdown** memo", author=owner)
    tm.MemoRevision.objects.create(memo=memo, number=1, title=memo.title, kind=memo.kind, body=memo.body, author=owner)
    tm.Memo.objects.create(project=p, code=code, title="Code memo", author=analyst)
    comment = tm.Comment.objects.create(theme=theme, body="Is this one theme?", author=analyst)
    comment.mentions.add(owner)
    tm.Comment.objects.create(theme=theme, parent=comment, body="Yes.", author=owner)
    review = tm.Review.objects.create(project=p, title="Week 3", date=dt.date(2026, 11, 20), created_by=owner)
    review.attendees.add(owner, analyst)
    tm.AgendaItem.objects.create(review=review, theme=theme)
    tm.Decision.objects.create(review=review, theme=sub, kind=tm.Decision.Kind.values[0], created_by=owner,
                               payload={"theme": str(sub.uuid)})
    tm.Snapshot.objects.create(project=p, review=review, label="before", taken_by=owner,
                               data={"themes": [{"uuid": str(theme.uuid), "codes": [str(code.uuid)]}]})
    tm.ThemeStatusChange.objects.create(theme=sub, to_status="reviewed", actor=owner, review=review)
    tm.Exemplar.objects.create(theme=theme, turn=seg.turn, segment=seg, quote=seg.text, spans=[[0, 5]], created_by=owner)
    tm.ThreadRead.objects.create(theme=theme, user=analyst, last_read_at=dt.datetime(2026, 11, 21, 8, 0, 0, 123456, tzinfo=dt.UTC))
    AuditEvent.objects.create(project=p, actor=owner, action="created", target_type="theme", target_id=str(theme.uuid),
                              summary="Theme created")
    # Timestamps with microseconds that bulk_create would otherwise overwrite.
    Coding.objects.filter(interview__project=p).update(created_at=dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC))
    return p


def _canonical(project: Project) -> dict[str, list[dict]]:
    """Every backed-up row of the project, with keys replaced by row order so two copies compare equal."""
    plans = backup_plan()
    rows = {p.label: list(p.model._base_manager.filter(**({"pk": project.pk} if not p.path else {p.path: project}))
                          .order_by("pk")) for p in plans}
    index = {label: {obj.pk: i for i, obj in enumerate(objs)} for label, objs in rows.items()}
    User = get_user_model()
    out = {}
    for p in plans:
        dumped = []
        for obj in rows[p.label]:
            row = {}
            for f in p.fields:
                value = getattr(obj, f.attname)
                if f.attname in p.fks:
                    value = None if value is None else ("ref", index[p.fks[f.attname]].get(value))
                elif f.attname in p.user_fks:
                    value = None if value is None else User.objects.get(pk=value).username
                elif isinstance(f, models.UUIDField) and f.unique:
                    value = "own-uuid"
                elif f.is_relation:
                    value = None
                row[f.name] = value
            for name in p.m2m:
                row[name] = sorted(str(o) for o in getattr(obj, name).all())
            dumped.append(row)
        out[p.label] = dumped
    return out


def _uuid_map(original: Project, restored: Project) -> dict[str, str]:
    mapping = {}
    for p in backup_plan():
        names = [f.attname for f in p.fields if isinstance(f, models.UUIDField) and f.unique]
        if not names:
            continue
        for a, b in zip(*(p.model._base_manager.filter(**({"pk": x.pk} if not p.path else {p.path: x})).order_by("pk")
                          for x in (original, restored)), strict=True):
            for n in names:
                mapping[str(getattr(a, n))] = str(getattr(b, n))
    return mapping


def _translate(value, mapping):
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_translate(v, mapping) for v in value]
    if isinstance(value, dict):
        return {mapping.get(k, k): _translate(v, mapping) for k, v in value.items()}
    return value


def _backup(project: Project) -> bytes:
    buf = io.BytesIO()
    project_backup(project=project, out=buf)
    return buf.getvalue()


def test_restore_into_a_new_project_is_identical_field_by_field(demo_project, analyst):
    original = _rich_project(demo_project, analyst)
    owner = original.memberships.get(role="owner").user
    data = _backup(original)
    result = project_restore(source=data, owner=owner, members="all")
    restored = result.project
    assert restored.pk != original.pk and restored.uuid != original.uuid
    before, after = _canonical(original), _canonical(restored)
    # The restore itself is recorded last in the restored project's audit trail.
    restored_event = after["projects.auditevent"].pop()
    assert restored_event["action"] == "restored" and "backup" in restored_event["summary"]
    mapping = _uuid_map(original, restored)
    for label, rows in before.items():
        expected = [{k: (v if k == "project" else _translate(v, mapping)) for k, v in row.items()} for row in rows]
        assert after[label] == expected, label
    # Some tables really are non-empty, so the comparison means something.
    for label in ("interviews.turn", "interviews.segment", "coding.coding", "themes.memo", "themes.memorevision",
                  "themes.comment", "themes.review", "themes.snapshot", "coding.codeevent", "conduct.seat"):
        assert before[label], label
    # UUIDs inside JSON and text follow their rows.
    snap = tm.Snapshot.objects.get(project=restored)
    assert snap.data["themes"][0]["uuid"] == str(tm.Theme.objects.get(project=restored, parent=None).uuid)
    assert AuditEvent.objects.filter(project=restored, target_id=snap.data["themes"][0]["uuid"]).exists()
    # Secrets never travel; the endpoint stays, without its key.
    assert not EndpointKey.objects.filter(project=restored).exists()
    assert LiveEndpoint.objects.get(participant__project=restored).api_key is None
    assert b"secret-token" not in data


def test_restore_twice_side_by_side_and_members_default_to_me(demo_project, analyst, make_user):
    original = _rich_project(demo_project, analyst)
    restorer = make_user("rita")
    first = project_restore(source=_backup(original), owner=restorer).project
    second = project_restore(source=_backup(original), owner=restorer, name="Copy 2").project
    assert second.name == "Copy 2" and first.name == original.name
    for p in (first, second):
        # Existing users elsewhere (demo, arjun) keep their authorship but get no access.
        assert list(p.memberships.values_list("user__username", "role")) == [("rita", "owner")]
        assert Coding.objects.filter(interview__project=p, coder=analyst).exists()


def test_missing_users_become_inactive_accounts_without_passwords(demo_project, analyst, owner):
    original = _rich_project(demo_project, analyst)
    data = _backup(original)
    analyst.delete()  # as on another instance where arjun has no account
    result = project_restore(source=data, owner=owner)
    arjun = get_user_model().objects.get(username="arjun")
    assert not arjun.is_active and not arjun.has_usable_password()
    assert result.project.memberships.filter(user=arjun).exists()  # keeps the positionality statement
    assert any("'arjun' does not exist here" in w for w in result.warnings)


def _with_manifest(data: bytes, change) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(content)
                change(manifest)
                content = json.dumps(manifest).encode()
            dst.writestr(info.filename, content)
    return buf.getvalue()


def test_bad_archives_are_refused_and_leave_nothing_behind(demo_project, owner):
    good = _backup(demo_project)
    cases = [
        (b"not a zip", "not a ZIP archive"),
        (_with_manifest(good, lambda m: m.update(format="something-else")), "not an RTA Studio project backup"),
        (_with_manifest(good, lambda m: m.update(version=99)), "newer than this instance"),
        (_with_manifest(good, lambda m: m["models"].append({"model": "x.unknown", "file": "data/x.json"})),
         "does not know"),
        (_with_manifest(good, lambda m: m["models"][0].update(file="data/missing.json")), "is missing"),
    ]
    before = (Project.objects.count(), get_user_model().objects.count())
    for data, message in cases:
        with pytest.raises(BackupError, match=message):
            project_restore(source=data, owner=owner)
    assert (Project.objects.count(), get_user_model().objects.count()) == before


def test_a_dangling_required_key_is_refused(demo_project, owner):
    good = _backup(demo_project)
    src = zipfile.ZipFile(io.BytesIO(good))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename == "data/interviews.turn.json":
                rows = json.loads(content)
                rows[0]["fields"]["interview_id"] = 999_999
                content = json.dumps(rows).encode()
            dst.writestr(info.filename, content)
    before = Project.objects.count()
    with pytest.raises(BackupError, match="interviews.turn row .* points to interviews.interview 999999"):
        project_restore(source=buf.getvalue(), owner=owner)
    assert Project.objects.count() == before


def test_zip_bomb_is_refused(owner):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", b" " * (20 * 1024 * 1024))
    with pytest.raises(BackupError, match="ZIP bomb"):
        project_restore(source=buf.getvalue(), owner=owner)


def test_export_and_restore_commands(demo_project, tmp_path, capsys):
    out = tmp_path / "backup.zip"
    call_command("export_project", str(demo_project.uuid), str(out))
    with zipfile.ZipFile(out) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["format"] == FORMAT and manifest["project"]["uuid"] == str(demo_project.uuid)
    call_command("restore_project", str(out), "--owner", "demo", "--project-name", "Restored demo")
    assert "Restored “Restored demo”" in capsys.readouterr().out
    restored = Project.objects.get(name="Restored demo")
    assert Coding.objects.filter(interview__project=restored).count() == Coding.objects.filter(
        interview__project=demo_project).count()
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"nope")
    with pytest.raises(CommandError, match="bad.zip: not a ZIP archive"):
        call_command("restore_project", str(bad), "--owner", "demo")
    with pytest.raises(CommandError, match="no user called"):
        call_command("restore_project", str(out), "--owner", "nobody")


def _edit_rows(data: bytes, member: str, change) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename == member:
                rows = json.loads(content)
                change(rows)
                content = json.dumps(rows).encode()
            dst.writestr(info.filename, content)
    return buf.getvalue()


def test_an_older_backup_without_a_field_restores_with_the_default(demo_project, owner):
    def drop_depth(rows):
        for row in rows:
            del row["fields"]["depth"]

    data = _edit_rows(_backup(demo_project), "data/interviews.interview.json", drop_depth)
    restored = project_restore(source=data, owner=owner).project
    assert set(Interview.objects.filter(project=restored).values_list("depth", flat=True)) == {Interview.Depth.COMPREHENSIVE}


def test_a_value_of_the_wrong_type_names_the_model_row_and_field(demo_project, owner):
    def break_date(rows):
        rows[0]["fields"]["conducted_at"] = "last Tuesday"

    data = _edit_rows(_backup(demo_project), "data/interviews.interview.json", break_date)
    before = Project.objects.count()
    with pytest.raises(BackupError, match=r"interviews.interview row \d+, field conducted_at"):
        project_restore(source=data, owner=owner)
    assert Project.objects.count() == before


def test_a_backup_naming_too_many_unknown_people_is_refused(demo_project, analyst, owner, monkeypatch):
    import reports.backup as backup

    original = _rich_project(demo_project, analyst)
    data = _backup(original)
    analyst.delete()
    monkeypatch.setattr(backup, "MAX_NEW_USERS", 0)
    users_before = get_user_model().objects.count()
    with pytest.raises(BackupError, match="more than 0 people who have no account here"):
        project_restore(source=data, owner=owner)
    assert get_user_model().objects.count() == users_before
