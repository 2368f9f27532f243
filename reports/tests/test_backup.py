"""Project backups: every model covered, restore identical field by field, hostile archives refused."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import models

from coding.models import Code, CodeEvent, Coding, Suggestion
from conduct.models import ConductSession, EndpointKey, LiveEndpoint, Seat
from interviews.models import Guide, GuideVersion, Interview, Segment, Turn
from probes.models import Answer as ProbeAnswer
from probes.models import Condition, ConditionVersion, Item, Probe
from projects.models import AuditEvent, Membership, Project, Role
from reports.backup import (
    EXCLUDED,
    FORMAT,
    BackupError,
    backup_people,
    backup_plan,
    project_backup,
    project_restore,
    uncovered_models,
)
from reports.models import PersonName
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
    Suggestion.objects.create(segment=seg, interview=seg.interview, code=code, rationale="mentions borders", model="gpt-x")
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
    probe = Probe.objects.create(project=p, name="Gender probe", label_columns=["gender"], created_by=owner)
    probe.participants.set([first.participant])
    item = Item.objects.create(probe=probe, position=1, text="So rude.", labels={"gender": "woman"}, attributes={"stars": 1})
    condition = Condition.objects.create(probe=probe, name="Control")
    condition_version = ConditionVersion.objects.create(condition=condition, number=1, template="{text}", labels=["woman", "man"])
    ProbeAnswer.objects.create(item=item, condition=condition, condition_version=condition_version,
                               participant=first.participant, status="done", label="woman", provenance={"latency_ms": 5})
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
    everyone = {u.username: u for u in get_user_model().objects.all()}
    result = project_restore(source=data, owner=owner, members="all", people=everyone)
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
                  "themes.comment", "themes.review", "themes.snapshot", "coding.codeevent", "conduct.seat",
                  "probes.answer"):
        assert before[label], label
    # UUIDs inside JSON and text follow their rows.
    snap = tm.Snapshot.objects.get(project=restored)
    assert snap.data["themes"][0]["uuid"] == str(tm.Theme.objects.get(project=restored, parent=None).uuid)
    assert AuditEvent.objects.filter(project=restored, target_id=snap.data["themes"][0]["uuid"]).exists()
    # Secrets never travel; the endpoint stays, without its key.
    assert not EndpointKey.objects.filter(project=restored).exists()
    assert LiveEndpoint.objects.get(participant__project=restored).api_key is None
    assert b"secret-token" not in data


def _coders(project: Project) -> dict[str, object]:
    """The backup's coders mapped to their own accounts (codings belong to an account)."""
    User = get_user_model()
    return {u.username: u for u in User.objects.filter(codings__interview__project=project).distinct()}


def test_restore_twice_side_by_side_and_members_default_to_me(demo_project, analyst, make_user):
    original = _rich_project(demo_project, analyst)
    restorer = make_user("rita")
    people = _coders(original)
    first = project_restore(source=_backup(original), owner=restorer, people=people).project
    second = project_restore(source=_backup(original), owner=restorer, name="Copy 2", people=people).project
    assert second.name == "Copy 2" and first.name == original.name
    for p in (first, second):
        # People mapped to accounts (demo, arjun) keep their authorship but get no access.
        assert list(p.memberships.values_list("user__username", "role")) == [("rita", "owner")]
        assert Coding.objects.filter(interview__project=p, coder=analyst).exists()


def test_a_pending_invitation_stays_with_the_original_and_its_link_joins_only_the_original(demo_project, analyst,
                                                                                           make_user):
    from projects.models import Invitation
    from projects.services import invitation_accept_new_user, invitation_create

    original = _rich_project(demo_project, analyst)
    owner = original.memberships.get(role="owner").user
    issued = invitation_create(project=original, actor=owner, email="new@example.org", role=Role.ANALYST)
    restored = project_restore(source=_backup(original), owner=make_user("rita"), people=_coders(original)).project
    assert not Invitation.objects.filter(project=restored).exists()
    membership = invitation_accept_new_user(invitation=Invitation.objects.by_token(issued.token), username="newcomer",
                                            password="a long passphrase 42")
    assert membership.project == original
    assert not restored.memberships.filter(user__username="newcomer").exists()


def test_people_are_listed_with_what_they_did_for_the_mapping_step(demo_project, analyst):
    people = {p.username: p for p in backup_people(source=_backup(_rich_project(demo_project, analyst)))}
    assert {"demo", "arjun"} <= set(people)
    assert people["arjun"].needs_account and "codings" in people["arjun"].summary
    assert people["arjun"].counts["memos"] == 2


def test_what_a_person_did_is_said_in_the_singular_for_one():
    from reports.backup import BackupPerson

    person = BackupPerson("arjun", counts={"memos": 2, "thread reads": 1, "guides": 1, "codings": 1_204, "notes": 1})
    assert person.summary == "1,204 codings, 1 guide, 2 memos, 1 note, 1 thread read"


def test_a_person_mapped_to_an_existing_account_gets_their_work_and_with_members_all_their_role(
        demo_project, analyst, make_user):
    original = _rich_project(demo_project, analyst)
    restorer, colleague = make_user("rita"), make_user("arjun2")
    people = {"demo": restorer, "arjun": colleague}
    restored = project_restore(source=_backup(original), owner=restorer, people=people, members="all").project
    assert Coding.objects.filter(interview__project=restored, coder=colleague).count() == Coding.objects.filter(
        interview__project=original, coder=analyst).count()
    assert tm.Memo.objects.get(project=restored, title="Code memo").author == colleague
    membership = restored.memberships.get(user=colleague)
    assert membership.role == Role.ANALYST and membership.positionality == "Outsider to migration."
    assert not Coding.objects.filter(interview__project=restored, coder=analyst).exists()
    assert not PersonName.objects.filter(project=restored).exists()


def test_people_not_mapped_are_kept_as_names_and_travel_in_the_next_backup(demo_project, analyst, make_user):
    original = _rich_project(demo_project, analyst)
    tm.Memo.objects.create(project=original, title="By a former colleague", author=None)
    Coding.objects.filter(interview__project=original, coder=analyst).delete()
    restorer = make_user("rita")
    users_before = get_user_model().objects.count()
    result = project_restore(source=_backup(original), owner=restorer, people={"demo": restorer})
    restored = result.project
    assert get_user_model().objects.count() == users_before
    memo = tm.Memo.objects.get(project=restored, title="Code memo")
    assert memo.author is None
    assert PersonName.objects.get(project=restored, model="themes.memo", row_id=memo.pk, field="author_id").name == "arjun"
    review = tm.Review.objects.get(project=restored)
    assert list(review.attendees.values_list("username", flat=True)) == ["rita"]
    assert PersonName.objects.filter(project=restored, model="themes.review", row_id=review.pk, field="attendees",
                                     name="arjun").exists()
    assert not restored.memberships.filter(user__username="arjun").exists()
    assert not tm.ThreadRead.objects.filter(theme__project=restored).exists()  # arjun's read marker needs an account
    assert any("Kept as names only (no account here): arjun" in w for w in result.warnings)
    # The next backup writes the kept names back into the rows: arjun is a person of it again.
    again = {p.username: p for p in backup_people(source=_backup(restored))}
    assert again["arjun"].counts["memos"] == 2 and not again["arjun"].needs_account
    assert "rita" in again and "demo" not in again


CRAFTED = ("data/themes.memo.json", "data/projects.auditevent.json", "data/projects.membership.json")


def _crafted(data: bytes, names: list, members: tuple[str, ...] = CRAFTED) -> bytes:
    """The backup with a memo, an audit event and a membership per name: people nobody here has heard of."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename in members:
                rows = json.loads(content)
                template = rows[0]
                user_field = {"data/themes.memo.json": "author_id", "data/projects.auditevent.json": "actor_id",
                              "data/projects.membership.json": "user_id"}[info.filename]
                for i, name in enumerate(names):
                    row = json.loads(json.dumps(template))
                    row["pk"] = 10_000_000 + i
                    row["fields"][user_field] = name
                    if "uuid" in row["fields"]:
                        row["fields"]["uuid"] = f"00000000-0000-4000-8000-{i:012d}"
                    rows.append(row)
                content = json.dumps(rows).encode()
            dst.writestr(info.filename, content)
    return buf.getvalue()


def test_a_crafted_backup_creates_no_accounts_and_an_invitation_to_its_address_still_works(
        demo_project, analyst, make_user):
    from projects.services import invitation_accept_new_user, invitation_create

    original = _rich_project(demo_project, analyst)
    names = ["admin", "root", "<script>alert(1)</script>", "victim@example.org"] + [f"ghost{i}" for i in range(400)]
    data = _crafted(_backup(original), names)
    restorer = make_user("rita")
    users_before = set(get_user_model().objects.values_list("username", flat=True))
    result = project_restore(source=data, owner=restorer, people={"demo": restorer, "arjun": analyst}, members="all")
    assert set(get_user_model().objects.values_list("username", flat=True)) == users_before
    restored = result.project
    assert sorted(restored.memberships.values_list("user__username", flat=True)) == ["arjun", "rita"]
    kept = set(PersonName.objects.filter(project=restored, model="themes.memo").values_list("name", flat=True))
    assert {"admin", "<script>alert(1)</script>", "victim@example.org", "ghost399"} <= kept
    # An invitation to that address later makes the real person a member, not a placeholder.
    issued = invitation_create(project=restored, actor=restorer, email="victim@example.org", role=Role.ANALYST)
    membership = invitation_accept_new_user(invitation=issued.invitation, username="victim@example.org",
                                            password="a long passphrase 42")
    assert membership.user.is_active and membership.user.has_usable_password()
    assert restored.memberships.get(user__username="victim@example.org").role == Role.ANALYST


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


@pytest.mark.parametrize("member", ["manifest.json", "data/interviews.turn.json"])
@pytest.mark.parametrize("how,reason", [("encrypted", "is encrypted"), ("damaged", "is damaged")])
def test_an_encrypted_or_damaged_member_is_refused_naming_it(demo_project, owner, member, how, reason):
    from refiqda.tests import helpers

    data = getattr(helpers, how)(_backup(demo_project), member)
    before = Project.objects.count()
    with pytest.raises(BackupError, match=rf"backup\.zip: member '{re.escape(member)}' {reason}"):
        project_restore(source=data, owner=owner, people=_coders(demo_project))
    assert Project.objects.count() == before


def test_a_zip_that_is_no_backup_is_called_so(owner):
    # A Word file, or a .qdpx picked under "Restore", is a ZIP without a manifest: "manifest.json is missing" told
    # a researcher nothing.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("project.qde", "<Project/>")
    with pytest.raises(BackupError) as exc:
        project_restore(source=buf.getvalue(), owner=owner)
    assert "not an RTA Studio project backup (it holds no manifest.json); a .qdpx from a QDA tool" in str(exc.value)


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
        project_restore(source=buf.getvalue(), owner=owner, people=_coders(demo_project))
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
    restored = project_restore(source=data, owner=owner, people=_coders(demo_project)).project
    assert set(Interview.objects.filter(project=restored).values_list("depth", flat=True)) == {Interview.Depth.COMPREHENSIVE}


def test_a_value_of_the_wrong_type_names_the_model_row_and_field(demo_project, owner):
    def break_date(rows):
        rows[0]["fields"]["conducted_at"] = "last Tuesday"

    data = _edit_rows(_backup(demo_project), "data/interviews.interview.json", break_date)
    before = Project.objects.count()
    with pytest.raises(BackupError, match=r"interviews.interview row \d+, field conducted_at"):
        project_restore(source=data, owner=owner, people=_coders(demo_project))
    assert Project.objects.count() == before


# A value the database cannot hold: refused before any row is written, naming the row and the field in words a
# person can act on, never in the database's own (“character varying(300)”, “interviews_turn_position_check”).
@pytest.mark.parametrize("member,field,value,reason", [
    ("data/interviews.interview.json", "title", "x" * 301, "at most 300 characters (it has 301)"),
    ("data/interviews.interview.json", "title", "a\x00b", "NUL character"),
    ("data/interviews.interview.json", "status", "bogus", "not a valid choice"),
    ("data/interviews.interview.json", "conducted_at", "0001-01-01T00:00:00+05:00", "outside the years 1 to 9999"),
    ("data/interviews.interview.json", "conducted_at", "9999-12-31T23:59:59-05:00", "outside the years 1 to 9999"),
    ("data/interviews.interview.json", "metadata", {"note": "a\x00b"}, "NUL character"),
    ("data/interviews.turn.json", "position", -1, "greater than or equal to 0"),
    ("data/interviews.turn.json", "position", 2**31, "less than or equal to 2147483647"),
])
def test_a_value_the_database_cannot_hold_names_the_model_row_and_field(demo_project, owner, member, field, value,
                                                                        reason):
    def change(rows):
        rows[0]["fields"][field] = value

    data = _edit_rows(_backup(demo_project), member, change)
    before = Project.objects.count()
    with pytest.raises(BackupError) as refused:
        project_restore(source=data, owner=owner, people=_coders(demo_project))
    label = member.removeprefix("data/").removesuffix(".json")
    assert re.search(rf"{re.escape(label)} row \d+, field {field}: .*{re.escape(reason)}", str(refused.value)), \
        str(refused.value)
    assert Project.objects.count() == before


def _same_code_name(rows):
    rows[1]["fields"]["name"] = rows[0]["fields"]["name"].upper()


def _empty_segment(rows):
    rows[0]["fields"].update(start=5, end=0)


@pytest.mark.parametrize("member,change,rule", [
    ("data/coding.code.json", _same_code_name, "unique_live_code_name"),
    ("data/interviews.segment.json", _empty_segment, "segment_not_empty"),
])
def test_rows_that_break_a_rule_of_the_database_name_the_rows_and_the_rule_in_words(demo_project, owner, member, change,
                                                                                    rule):
    data = _edit_rows(_backup(demo_project), member, change)
    before = Project.objects.count()
    with pytest.raises(BackupError) as refused:
        project_restore(source=data, owner=owner, people=_coders(demo_project))
    label = member.removeprefix("data/").removesuffix(".json")
    message = str(refused.value)
    assert re.search(rf"{re.escape(label)} rows \d+ to \d+ break the rule “{rule}”", message), message
    assert "violates" not in message and "duplicate key" not in message and "relation" not in message
    assert Project.objects.count() == before


def test_a_backup_naming_too_many_people_is_refused(demo_project, analyst, owner, monkeypatch):
    import reports.backup as backup

    monkeypatch.setattr(backup, "MAX_PEOPLE", 3)
    data = _crafted(_backup(_rich_project(demo_project, analyst)), ["a", "b"])  # + demo and arjun
    users_before, projects_before = get_user_model().objects.count(), Project.objects.count()
    with pytest.raises(BackupError, match="names more than 3 people"):
        project_restore(source=data, owner=owner)
    assert (get_user_model().objects.count(), Project.objects.count()) == (users_before, projects_before)


def test_coders_need_an_account_and_one_account_stands_for_one_person(demo_project, analyst, owner):
    original = _rich_project(demo_project, analyst)
    data = _backup(original)
    projects_before = Project.objects.count()
    with pytest.raises(BackupError, match=r"choose an existing account for arjun \(.*codings"):
        project_restore(source=data, owner=owner, people={"demo": owner})
    with pytest.raises(BackupError, match="demo and arjun are mapped to the same account"):
        project_restore(source=data, owner=owner, people={"demo": owner, "arjun": owner})
    with pytest.raises(BackupError, match="not a username"):
        project_restore(source=_crafted(data, [["a", "list"]]), owner=owner, people=_coders(original))
    assert Project.objects.count() == projects_before


def test_restore_command_maps_people_explicitly_and_never_creates_accounts(demo_project, analyst, make_user, tmp_path,
                                                                           capsys):
    original = _rich_project(demo_project, analyst)
    out = tmp_path / "backup.zip"
    out.write_bytes(_backup(original))
    colleague = make_user("arjun2")
    users_before = get_user_model().objects.count()
    call_command("restore_project", str(out), "--owner", "demo", "--project-name", "Mapped", "--map", "arjun=arjun2")
    mapped = Project.objects.get(name="Mapped")
    assert Coding.objects.filter(interview__project=mapped, coder=colleague).exists()
    call_command("restore_project", str(out), "--owner", "demo", "--project-name", "Same names", "--map-same-usernames")
    same = Project.objects.get(name="Same names")
    assert Coding.objects.filter(interview__project=same, coder=analyst).exists()
    assert get_user_model().objects.count() == users_before
    with pytest.raises(CommandError, match="choose an existing account for arjun"):
        call_command("restore_project", str(out), "--owner", "demo")
    with pytest.raises(CommandError, match="no account called 'nobody'"):
        call_command("restore_project", str(out), "--owner", "demo", "--map", "arjun=nobody")
    with pytest.raises(CommandError, match="write NAME=ACCOUNT"):
        call_command("restore_project", str(out), "--owner", "demo", "--map", "arjun")




def _nested_dict(levels: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _set_turn_metadata(value):
    def change(rows):
        rows[0]["fields"]["metadata"] = value

    return change


@pytest.mark.parametrize(("value", "message"), [
    (_nested_dict(200), r"data/interviews\.turn\.json: data nested deeper than 100 levels at line 1, column \d+"),
    ("BIGNUMBER", r"data/interviews\.turn\.json: a number longer than 1000 digits at line 1, column \d+"),
], ids=["deeply nested member", "5000-digit integer"])
def test_a_hostile_member_is_refused_naming_the_member_and_place(demo_project, owner, value, message):
    data = _edit_rows(_backup(demo_project), "data/interviews.turn.json", _set_turn_metadata(value))
    data = _rezip_replacing(data, b'"BIGNUMBER"', b"9" * 5000)
    before = (Project.objects.count(), get_user_model().objects.count())
    with pytest.raises(BackupError, match=message):
        project_restore(source=data, owner=owner)
    assert (Project.objects.count(), get_user_model().objects.count()) == before


def _rezip_replacing(data: bytes, old: bytes, new: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info).replace(old, new))
    return buf.getvalue()


def test_metadata_nested_just_under_the_limit_restores(demo_project, owner):
    # The member is a list of rows, each with "fields" and "metadata": three levels above the metadata itself.
    deep = _nested_dict(97)
    data = _edit_rows(_backup(demo_project), "data/interviews.turn.json", _set_turn_metadata(deep))
    restored = project_restore(source=data, owner=owner, people=_coders(demo_project)).project
    assert deep in [t.metadata for t in Turn.objects.filter(interview__project=restored)]


def test_a_member_found_broken_after_rows_are_in_leaves_nothing_behind(demo_project, owner):
    # The codings come after the interviews, turns and segments are inserted: a row of theirs that is not JSON
    # (which the scan before any insert does not look for) stops the restore there, and all of it rolls back.
    data = _rezip_replacing(_backup(demo_project), b'"origin": "human"', b'"origin": human')
    before = (Project.objects.count(), Interview.objects.count(), get_user_model().objects.count())
    with pytest.raises(BackupError, match=r"^backup\.zip: data/coding\.coding\.json: not valid JSON"):
        project_restore(source=data, owner=owner)
    assert (Project.objects.count(), Interview.objects.count(), get_user_model().objects.count()) == before
