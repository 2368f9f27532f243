"""Pages: permissions for every writing view, constant query counts for every list/detail page, safe markup."""

from __future__ import annotations

import pytest
from django.urls import reverse

from coding.models import Code, Coding
from interviews.models import Speaker

pytestmark = pytest.mark.django_db


def _code_with_codings(project, owner, name, segments, coders):
    from coding.services import code_create

    code = code_create(project=project, actor=owner, name=name)
    for s in segments:
        for coder in coders:
            Coding.objects.create(segment=s, code=code, coder=coder, interview=s.interview)
    return code


def _writes(project, interview, code):
    p, i, c = project.uuid, interview.uuid, code.uuid
    return [
        (reverse("coding:code_new", args=[p]), {"name": "Fresh", "kind": "semantic"}),
        (reverse("coding:code_edit", args=[p, c]), {"name": "Renamed", "kind": "latent", "version": code.version}),
        (reverse("coding:code_move", args=[p, c]), {"parent": ""}),
        (reverse("coding:code_split", args=[p, c]), {"names": "One\nTwo"}),
        (reverse("coding:code_archive", args=[p, c]), {"archived": "on"}),
        (reverse("coding:import", args=[p]), {}),
        (reverse("coding:notes", args=[p, i]), {"text": "hello"}),
        (reverse("coding:create_inline", args=[p, i]), {"name": "Inline", "segments": ""}),
        (reverse("coding:undo", args=[p, i]), {}),
    ]


def test_every_writing_view_404s_outsiders_and_403s_viewers(client_for, outsider, viewer, project, interview, make_code):
    code = make_code("Trust")
    target = make_code("Target")
    writes = _writes(project, interview, code) + [
        (reverse("coding:code_merge", args=[project.uuid, code.uuid]), {"target": target.pk}),
    ]
    for url, data in writes:
        assert client_for(outsider).post(url, data).status_code == 404, url
        assert client_for(viewer).post(url, data).status_code == 403, url
    assert Code.objects.count() == 2 and not Code.objects.filter(archived=True).exists()


def test_writing_views_work_for_members(client_for, analyst, project, interview, make_code):
    code = make_code("Trust")
    c = client_for(analyst)
    for url, data in _writes(project, interview, code):
        if "import" in url:
            continue
        r = c.post(url, data)
        assert r.status_code in (200, 302), (url, r.status_code, r.content[:300])
        code.refresh_from_db()
    target = make_code("Target")
    fresh = Code.objects.get(name="Fresh")
    r = c.post(reverse("coding:code_merge", args=[project.uuid, fresh.uuid]), {"target": target.pk, "reason": "dup"})
    assert r.status_code == 302
    fresh.refresh_from_db()
    assert fresh.merged_into == target
    assert Code.objects.filter(name__in=["One", "Two", "Inline", "Renamed"]).count() == 4


def test_reading_pages_404_for_outsiders(client_for, outsider, project, interview, make_code):
    code = make_code("Trust")
    for url in [
        reverse("coding:codebook", args=[project.uuid]), reverse("coding:history", args=[project.uuid]),
        reverse("coding:code_detail", args=[project.uuid, code.uuid]), reverse("coding:excerpts", args=[project.uuid, code.uuid]),
        reverse("coding:workspace", args=[project.uuid, interview.uuid]), reverse("coding:compare", args=[project.uuid, interview.uuid]),
        reverse("coding:search", args=[project.uuid]) + "?q=home",
    ]:
        assert client_for(outsider).get(url).status_code == 404, url


def test_edit_conflict_shows_the_newer_text_and_keeps_mine(client_for, owner, analyst, project, make_code):
    from coding.services import code_update

    code = make_code("Trust", definition="first")
    code_update(code=code, actor=owner, version=1, definition="Owner's newer definition")
    r = client_for(analyst).post(reverse("coding:code_edit", args=[project.uuid, code.uuid]),
                                 {"name": "Trust", "kind": "semantic", "definition": "Analyst's definition", "version": 1})
    assert r.status_code == 409
    body = r.content.decode()
    assert "This code changed while you were editing: version 2 was saved" in body and "Its text is shown above" in body
    assert body.index("The newer text (version 2)") < body.index("Its text is shown above")  # above the form's error
    assert "Owner&#x27;s newer definition" in body
    assert "Analyst&#x27;s definition" in body and 'name="version" value="2"' in body
    assert Code.objects.get(pk=code.pk).definition == "Owner's newer definition"


def _populate(project, owner, analyst, make_interview, n_interviews):
    codes = []
    for i in range(n_interviews):
        interview = make_interview(title=f"Interview {i}", label=f"Model {i % 3}")
        segs = list(interview.segments.filter(speaker=Speaker.PARTICIPANT))
        codes.append(_code_with_codings(project, owner, f"Code {i}", segs[: 2 + i], [owner, analyst]))
    return codes


@pytest.mark.parametrize("n", [1, 4])
def test_codebook_queries_do_not_grow(client_for, owner, analyst, project, make_interview, make_code, django_assert_num_queries, n):
    codes = _populate(project, owner, analyst, make_interview, n)
    make_code("Child", parent=codes[0])
    c = client_for(owner)
    # session, user, membership+project, a page of participants (columns), codes, live interviews, counts per
    # code × participant, a page of interviews (short: not counted), their progress, the colours in use (the new
    # code's), parent choices (form), unread-mentions badge
    with django_assert_num_queries(12):
        r = c.get(reverse("coding:codebook", args=[project.uuid]))
    assert r.status_code == 200 and "Code 0" in r.content.decode()


@pytest.mark.parametrize("n", [1, 4])
def test_workspace_queries_do_not_grow(client_for, owner, analyst, project, make_interview, django_assert_num_queries, n):
    _populate(project, owner, analyst, make_interview, n)
    from interviews.models import Interview

    interview = Interview.objects.get(title=f"Interview {n - 1}")
    c = client_for(owner)
    # session, user, membership+project, interview+participant, codes, members, turns+segments+codings (one),
    # notes, pending AI suggestions, project progress (cached for a minute afterwards), the journal's familiarisation
    # memos on the interview, unread-mentions badge
    with django_assert_num_queries(12):
        r = c.get(reverse("coding:workspace", args=[project.uuid, interview.uuid]))
    assert r.status_code == 200
    body = r.content.decode()
    assert body.count('class="chip') >= 2 * (n + 1)


@pytest.mark.parametrize("n", [1, 4])
def test_excerpts_and_search_and_compare_queries_do_not_grow(client_for, owner, analyst, project, make_interview,
                                                            django_assert_num_queries, n):
    codes = _populate(project, owner, analyst, make_interview, n)
    from interviews.models import Interview

    c = client_for(owner)
    # session, user, membership, code, the codebook (for sub-codes), a page of interviews using the code (short: not
    # counted), their excerpts, texts of the turns excerpts span, the questions they answer, members, unread-mentions badge
    with django_assert_num_queries(11):
        r = c.get(reverse("coding:excerpts", args=[project.uuid, codes[-1].uuid]))
    assert r.status_code == 200
    # session, user, membership, search (in a savepoint: two more statements), unread-mentions badge
    with django_assert_num_queries(7):
        r = c.get(reverse("coding:search", args=[project.uuid]) + "?q=belonging&coded=coded")
    assert r.status_code == 200
    interview = Interview.objects.get(title=f"Interview {n - 1}")
    # session, user, membership, interview, members, coders here, differences, codes, unread-mentions badge
    with django_assert_num_queries(9):
        r = c.get(reverse("coding:compare", args=[project.uuid, interview.uuid]) + f"?a={owner.pk}&b={analyst.pk}")
    assert r.status_code == 200


def test_hostile_text_and_code_names_are_escaped(client_for, owner, project, make_interview):
    from coding.services import code_create, note_save

    hostile = '<img src=x onerror=alert(1)> "quoted" & <script>alert(2)</script>'
    interview = make_interview(title="<b>title</b>", label="<i>model</i>",
                               turns=[(Speaker.PARTICIPANT, f"Plain start. {hostile}")])
    seg = interview.segments.order_by("position").last()
    code = code_create(project=project, actor=owner, name='<svg onload=alert(3)>"code"', colour="#123456")
    Coding.objects.create(segment=seg, code=code, coder=owner, interview=interview)
    note_save(interview=interview, turn=interview.turns.first(), author=owner, text="<script>alert(4)</script>")
    owner.first_name = "<b>O"
    owner.save()
    c = client_for(owner)
    pages = [reverse("coding:workspace", args=[project.uuid, interview.uuid]), reverse("coding:codebook", args=[project.uuid]),
             reverse("coding:excerpts", args=[project.uuid, code.uuid]), reverse("coding:search", args=[project.uuid]) + "?q=quoted",
             reverse("coding:code_detail", args=[project.uuid, code.uuid])]
    for url in pages:
        body = c.get(url).content.decode()
        for raw in ("<img src=x", "<script>alert", "<svg onload", "<b>title</b>", "<i>model</i>"):
            assert raw not in body, (url, raw)
    body = c.get(pages[0]).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "&lt;svg onload=alert(3)&gt;" in body
    # escaped exactly once: the note is readable text, not doubly escaped markup
    assert "&lt;script&gt;alert(4)&lt;/script&gt;" in body and "&amp;lt;" not in body
    r = c.post(reverse("coding:apply", args=[project.uuid, interview.uuid]), {"code": code.pk, "segments": str(seg.pk)})
    assert "<svg onload" not in r.content.decode() and "&lt;svg" in r.content.decode()


def test_codebook_search_and_kind_filter(client_for, owner, project, make_code):
    make_code("Trust", kind="latent")
    make_code("Home", definition="Where trust lives")
    make_code("Food")
    c = client_for(owner)
    url = reverse("coding:codebook", args=[project.uuid])
    r = c.get(url, {"q": "trust"})
    assert [n.code.name for n in r.context["nodes"]] == ["Home", "Trust"]
    body = c.get(url, {"kind": "latent"}, headers={"HX-Request": "true"}).content.decode()
    assert "Trust" in body and ">Home<" not in body and "<html" not in body


def test_excerpts_merge_contiguous_segments_and_group_by_model(project, owner, analyst, make_interview):
    from coding.excerpts import excerpts_by_participant, excerpts_for_codes
    from coding.services import code_create

    a = make_interview(title="A", label="GPT-4o")
    b = make_interview(title="B", label="Claude")
    code = code_create(project=project, actor=owner, name="Trust")
    sa = list(a.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position"))
    # turn 1: segments 0,1,2 contiguous (1 by a second coder too); turn 3: segments 3 and 5 (gap)
    for s, coder in [(sa[0], owner), (sa[1], owner), (sa[1], analyst), (sa[2], analyst), (sa[3], owner), (sa[5], owner)]:
        Coding.objects.create(segment=s, code=code, coder=coder, interview=a)
    sb = b.segments.filter(speaker=Speaker.PARTICIPANT).first()
    Coding.objects.create(segment=sb, code=code, coder=owner, interview=b)
    excerpts = excerpts_for_codes(project, [code.pk])
    texts = [e.text for e in excerpts]
    assert texts[0] == sb.text  # Claude sorts before GPT-4o
    turn_text = sa[0].turn.text
    assert turn_text[sa[0].start:sa[2].end] in texts  # the exact quote, separators kept
    assert sa[3].text in texts and sa[5].text in texts and len(excerpts) == 4
    assert [label for label, _ in excerpts_by_participant(excerpts)] == ["Claude", "GPT-4o"]
    merged = next(e for e in excerpts if len(e.segment_ids) == 3)
    assert merged.coder_ids == {owner.pk, analyst.pk}
    assert len(excerpts_for_codes(project, [code.pk], coder_ids=[analyst.pk])) == 1
    # a trashed interview's codings are not excerpts
    from django.utils import timezone

    b.deleted_at = timezone.now()
    b.save()
    assert len(excerpts_for_codes(project, [code.pk])) == 3


def test_the_first_excerpts_are_the_head_of_all_of_them_under_every_filter(project, owner, analyst, make_interview):
    """The LIMITed read (one interview at a time, coding/excerpts.py) keeps the full read's order and filters."""
    from django.utils import timezone

    from coding.excerpts import excerpts_for_codes
    from coding.services import code_create

    interviews = [make_interview(title=title, label=label) for title, label in
                  [("B", "GPT-4o"), ("A", "GPT-4o"), ("C", "Claude"), ("Gone", "Claude")]]
    codes = [code_create(project=project, actor=owner, name=name) for name in ("Trust", "Power", "Deleted")]
    for k, iv in enumerate(interviews):
        segments = list(iv.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position"))
        for n, segment in enumerate(segments):
            for code in codes:
                if (n + k + code.pk) % 3:
                    Coding.objects.create(segment=segment, code=code, coder=owner if n % 2 else analyst, interview=iv)
            if n % 4 == 0:
                Coding.objects.create(segment=segment, code=codes[0], coder=owner if n % 2 == 0 else analyst,
                                      interview=iv)
    interviews[3].deleted_at = timezone.now()
    interviews[3].save()
    codes[2].deleted_at = timezone.now()
    codes[2].save()
    code_ids = [c.pk for c in codes]
    for filters in ({}, {"coder_ids": [analyst.pk]}, {"coder_ids": [owner.pk, analyst.pk]}, {"coder_ids": []},
                    {"interview_ids": [interviews[0].pk, interviews[2].pk]}, {"interview_ids": []},
                    {"interview_ids": [interviews[1].pk], "coder_ids": [owner.pk]}):
        everything = excerpts_for_codes(project, code_ids, **filters)
        for limit in (0, 1, 3, len(everything) // 2, len(everything), len(everything) + 1):
            first = excerpts_for_codes(project, code_ids, limit=limit, **filters)
            assert [(e.code_id, e.interview_id, e.segment_ids, e.coder_ids, e.text) for e in first] == [
                (e.code_id, e.interview_id, e.segment_ids, e.coder_ids, e.text) for e in everything[:limit]], filters
    everything = excerpts_for_codes(project, code_ids)
    assert {e.code_id for e in everything} == {codes[0].pk, codes[1].pk}
    assert interviews[3].pk not in {e.interview_id for e in everything}
    assert [e.interview_title for e in everything if e.code_id == codes[0].pk][:1] == ["C"]  # Claude before GPT-4o


def test_search_filters_coded_and_uncoded(client_for, owner, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    trust = next(s for s in participant_segments if "trust" in s.text)
    Coding.objects.create(segment=trust, code=code, coder=owner, interview=interview)
    c = client_for(owner)
    url = reverse("coding:search", args=[project.uuid])
    assert "It needs time and trust." in c.get(url, {"q": "trust", "coded": "coded"}).content.decode()
    assert "It needs time and trust." not in c.get(url, {"q": "trust", "coded": "uncoded"}).content.decode()
    # stemming: "belongs" finds "Belonging"
    assert "Belonging grows slowly." in c.get(url, {"q": "belongs"}).content.decode()


def test_compare_shows_differences_and_agreement_only_when_enabled(client_for, owner, analyst, project, interview,
                                                                  participant_segments, make_code):
    a, b = make_code("Trust"), make_code("Home")
    s = participant_segments
    for seg, code, coder in [(s[0], a, owner), (s[0], a, analyst), (s[1], a, owner), (s[2], b, analyst), (s[3], a, owner), (s[3], b, analyst)]:
        Coding.objects.create(segment=seg, code=code, coder=coder, interview=interview)
    c = client_for(owner)
    url = reverse("coding:compare", args=[project.uuid, interview.uuid]) + f"?a={owner.pk}&b={analyst.pk}"
    r = c.get(url)
    body = r.content.decode()
    assert r.context["summary"] == {"only_a": 1, "only_b": 1, "different": 1, "same": 1}
    assert "Agreement statistics" not in body
    project.agreement_statistics_enabled = True
    project.save()
    body = c.get(url).content.decode()
    assert "Agreement statistics" in body and "Cohen" in body


def test_codebook_import_csv_all_or_nothing(client_for, owner, project, make_code):
    from django.core.files.uploadedfile import SimpleUploadedFile

    make_code("Existing")
    url = reverse("coding:import", args=[project.uuid])
    bad = "name,kind,colour,parent\nTrust,latent,#112233,\nHome,weird,,\nKitchen,,red,Home\nHearth,,,Nowhere\nExisting,,,\n"
    r = client_for(owner).post(url, {"file": SimpleUploadedFile("book.csv", bad.encode())})
    body = r.content.decode()
    assert r.status_code == 400 and "Nothing was imported" in body
    for msg in ["book.csv, line 3, kind", "book.csv, line 4, colour", "book.csv, line 5, parent", "book.csv, line 6: a code named"]:
        assert msg in body, msg
    assert Code.objects.count() == 1
    good = "Name,Definition,What counts,Kind,Parent\nKitchen,Cooking,Food talk,semantic,Home\nHome,Place,,latent,\n"
    r = client_for(owner).post(url, {"file": SimpleUploadedFile("book.csv", good.encode())})
    assert r.status_code == 302
    kitchen = Code.objects.get(name="Kitchen")
    assert kitchen.parent.name == "Home" and kitchen.include_when == "Food talk" and kitchen.events.get().action == "imported"


def test_codebook_import_qdc(client_for, owner, project):
    from django.core.files.uploadedfile import SimpleUploadedFile

    qdc = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="test">
  <Codes>
    <Code guid="11111111-1111-1111-1111-111111111111" name="Place" isCodable="true" color="#AA0000">
      <Description>Where things happen</Description>
      <Code guid="22222222-2222-2222-2222-222222222222" name="Home" isCodable="true"/>
    </Code>
  </Codes>
</CodeBook>"""
    url = reverse("coding:import", args=[project.uuid])
    r = client_for(owner).post(url, {"file": SimpleUploadedFile("book.qdc", qdc)})
    assert r.status_code == 302, r.content[:500]
    home = Code.objects.get(name="Home")
    assert home.parent.name == "Place" and home.parent.definition == "Where things happen" and home.parent.colour == "#aa0000"
    bomb = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="33333333-3333-3333-3333-333333333333" name="&lol2;"/></Codes></CodeBook>"""
    r = client_for(owner).post(url, {"file": SimpleUploadedFile("bomb.qdc", bomb)})
    assert r.status_code == 400 and "bomb.qdc" in r.content.decode() and Code.objects.count() == 2


def test_codebook_lists_interviews_with_their_progress(client_for, owner, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    for s in participant_segments[:2]:
        Coding.objects.create(segment=s, code=code, coder=owner, interview=interview)
    Coding.objects.create(segment=participant_segments[0], code=make_code("Home"), coder=owner, interview=interview)
    r = client_for(owner).get(reverse("coding:codebook", args=[project.uuid]))
    [row] = r.context["progress"]
    assert (row["coded"], row["codable"], row["percent"]) == (2, len(participant_segments), round(200 / len(participant_segments)))
    assert reverse("coding:workspace", args=[project.uuid, interview.uuid]) in r.content.decode()


@pytest.mark.parametrize("poll", ["9" * 5000, "-3", "abc"])
def test_a_hostile_poll_interval_falls_back_to_a_sane_one(client_for, analyst, project, make_interview, poll):
    interview = make_interview()
    response = client_for(analyst).get(reverse("coding:workspace", args=[project.uuid, interview.uuid]), {"poll": poll})
    assert response.status_code == 200
    assert '"pollSeconds": 15' in response.content.decode() or "&quot;pollSeconds&quot;: 15" in response.content.decode()


@pytest.mark.parametrize("n", [1, 4])
def test_polling_state_is_constant_queries_and_members_only(client_for, owner, analyst, outsider, project, make_interview,
                                                           django_assert_num_queries, n):
    _populate(project, owner, analyst, make_interview, n)
    from interviews.models import Interview

    interview = Interview.objects.get(title=f"Interview {n - 1}")
    url = reverse("coding:state", args=[project.uuid, interview.uuid])
    assert client_for(outsider).get(url).status_code == 404
    c = client_for(analyst)
    # session, user, membership, interview, the project's codes, codings with their codes
    with django_assert_num_queries(6):
        data = c.get(url).json()
    assert len(data["codings"]) == 2 * (n + 1)
    live = Code.objects.filter(project=project, deleted_at__isnull=True)
    assert set(data["codes"]) == {str(pk) for pk in live.values_list("pk", flat=True)}  # unused codes too
    used = Code.objects.get(name=f"Code {n - 1}")
    assert data["codes"][str(used.pk)] == [used.name, used.colour, used.kind, False, None]


@pytest.mark.parametrize("n", [1, 5])
def test_history_and_code_page_queries_do_not_grow(client_for, owner, project, make_code, django_assert_num_queries, n):
    from coding.services import code_update

    code = make_code("Trust")
    parent = make_code("Parent")
    for i in range(n):
        code = code_update(code=code, actor=owner, version=code.version, definition=f"v{i}", reason=f"round {i}")
        make_code(f"Other {i}", parent=parent)
    c = client_for(owner)
    # session, user, membership, events with actor and code, unread-mentions badge
    with django_assert_num_queries(5):
        r = c.get(reverse("coding:history", args=[project.uuid]))
    assert r.status_code == 200 and "round 0" in r.content.decode()
    # session, user, membership, code (+parent), events, uses, move choices, merge choices, unread-mentions badge
    with django_assert_num_queries(9):
        r = c.get(reverse("coding:code_detail", args=[project.uuid, code.uuid]))
    assert r.status_code == 200 and f"v{n - 1}" in r.content.decode()


def test_the_code_page_lists_the_other_live_codes_by_name_and_moves_to_the_one_chosen(client_for, owner, project, make_code):
    from coding.services import code_archive

    parent = make_code("Parent <b>")
    code = make_code("Trust", parent=parent)
    make_code("Another")
    code_archive(code=make_code("Archived"), actor=owner, archived=True)
    c = client_for(owner)
    body = c.get(reverse("coding:code_detail", args=[project.uuid, code.uuid])).content.decode()
    move = body[body.index('<select name="parent"'):]
    move = move[:move.index("</select>")]
    assert f'<option value="{parent.pk}" selected>Parent &lt;b&gt;</option>' in move
    assert '<option value="">(top level)</option>' in move
    assert "Another" in move and "Trust" not in move and "Archived" not in move
    merge = body[body.index('<select name="target"'):]
    merge = merge[:merge.index("</select>")]
    assert "Another" in merge and "Parent &lt;b&gt;" in merge and "Trust" not in merge and "Archived" not in merge

    r = c.post(reverse("coding:code_move", args=[project.uuid, code.uuid]), {"parent": Code.objects.get(name="Another").pk})
    assert r.status_code == 302
    assert Code.objects.get(pk=code.pk).parent.name == "Another"
    archived = Code.objects.get(name="Archived")
    r = c.post(reverse("coding:code_move", args=[project.uuid, code.uuid]), {"parent": archived.pk})
    assert r.status_code == 400 and Code.objects.get(pk=code.pk).parent.name == "Another"


def test_create_form_errors_are_inline(client_for, analyst, project, make_code):
    make_code("Trust")
    r = client_for(analyst).post(reverse("coding:code_new", args=[project.uuid]), {"name": "trust", "kind": "semantic",
                                                                                  "colour": "#zzzzzz"})
    assert r.status_code == 400
    body = r.content.decode()
    assert "Enter a valid" in body or "is not a colour" in body or "already a code" in body
    assert 'class="card narrow new-code" id="new-code" open' in body
    assert Code.objects.count() == 1


def test_split_from_the_page_moves_chosen_excerpts(client_for, owner, project, interview, participant_segments, make_code):
    code = make_code("Home")
    s = participant_segments
    for seg in (s[0], s[1], s[3]):
        Coding.objects.create(segment=seg, code=code, coder=owner, interview=interview)
    c = client_for(owner)
    page = c.get(reverse("coding:code_detail", args=[project.uuid, code.uuid])).content.decode()
    choices = reverse("coding:code_split_excerpts", args=[project.uuid, code.uuid])
    assert choices in page and "name=\"assign\"" not in page  # the choices come when asked for
    assert 'hx-include="[name=\'names\']"' in page  # the names typed so far come along
    numbered = c.get(choices).content.decode()
    assert f'<option value="1:{s[0].pk},{s[1].pk}">new code 2</option>' in numbered  # nothing typed yet
    choices = c.get(choices, {"names": "Home as people\n\n Home as place \n"}).content.decode()
    assert f'<option value="1:{s[0].pk},{s[1].pk}">Home as place</option>' in choices  # two contiguous segments
    assert choices.count(f':{s[0].pk},{s[1].pk}">') == 2 and "new code 1" not in choices  # one choice per name
    assert "The first" not in choices
    r = c.post(reverse("coding:code_split", args=[project.uuid, code.uuid]),
               {"names": "Home as people\nHome as place", "assign": [f"1:{s[0].pk},{s[1].pk}", ""], "reason": "two readings"})
    assert r.status_code == 302
    place = Code.objects.get(name="Home as place")
    assert set(Coding.objects.filter(code=place).values_list("segment_id", flat=True)) == {s[0].pk, s[1].pk}
    assert list(Coding.objects.filter(code=code).values_list("segment_id", flat=True)) == [s[3].pk]


def test_split_choices_are_for_writers_and_list_the_first_excerpts(client_for, owner, viewer, outsider, project, interview,
                                                                  participant_segments, make_code, django_assert_num_queries,
                                                                  monkeypatch):
    from coding import views

    code = make_code("Home")
    for seg in participant_segments[::2]:  # no two contiguous: one excerpt each
        Coding.objects.create(segment=seg, code=code, coder=owner, interview=interview)
    url = reverse("coding:code_split_excerpts", args=[project.uuid, code.uuid])
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(viewer).get(url).status_code == 403
    c = client_for(owner)
    monkeypatch.setattr(views, "SPLIT_EXCERPTS", 2)
    # session, user, membership, code, codings (one segment each: no turn texts)
    with django_assert_num_queries(5):
        body = c.get(url).content.decode()
    assert body.count('name="assign"') == 2
    assert "The first 2 excerpts are listed; the others stay with “Home”." in body


def test_speaker_toggle_is_a_personal_preference(client_for, outsider, viewer, project, interview):
    url = reverse("coding:speaker_toggle", args=[project.uuid, interview.uuid])
    assert client_for(outsider).post(url, {"any_speaker": "1"}).status_code == 404
    # Viewers may change how they see the transcript: it writes nothing to the project.
    c = client_for(viewer)
    assert c.post(url, {"any_speaker": "1"}).status_code == 302
    assert c.session[f"coding:any_speaker:{project.uuid}"] is True
    body = c.get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    assert "Code participant turns only" not in body  # viewers get no coding controls
    assert body.count('class="seg codable') == interview.segments.count()


def test_the_one_query_transcript_matches_the_plain_reads(owner, analyst, project, interview, participant_segments, make_code):
    from coding import queries
    from interviews.models import Turn

    Turn.objects.create(interview=interview, position=9, speaker=Speaker.PARTICIPANT, text="")  # a failed turn: no segments
    a, b = make_code("A"), make_code("B")
    for seg, code, coder in [(participant_segments[0], b, owner), (participant_segments[0], a, analyst),
                             (participant_segments[0], a, owner), (participant_segments[2], b, analyst)]:
        Coding.objects.create(segment=seg, code=code, coder=coder, interview=interview)
    order = {a.pk: 0, b.pk: 1}
    turns, segments, codings = queries.interview_transcript(interview, order)
    assert turns == list(interview.turns.order_by("position").values_list("id", "position", "speaker"))
    assert segments == queries.interview_segments(interview)
    assert codings == queries.interview_codings(interview, order)
    assert codings[participant_segments[0].pk] == sorted([(a.pk, owner.pk), (a.pk, analyst.pk), (b.pk, owner.pk)],
                                                         key=lambda p: (order[p[0]], p[1]))


def test_creating_a_code_comes_first_on_the_codebook_and_an_empty_codebook_says_how(client_for, analyst, project):
    page = client_for(analyst).get(reverse("coding:codebook", args=[project.uuid])).content.decode()
    # Above the codes and the interviews to code, open while the codebook is empty.
    assert page.index('id="new-code" open') < page.index('id="code-list"') < page.index("Code an interview")
    assert "import a codebook" in page and "press <kbd>c</kbd>" in page


def test_tool_steps_are_collapsed_and_codable_only_with_other_speakers(client_for, analyst, project, make_interview, make_code):
    interview = make_interview(turns=[
        (Speaker.INTERVIEWER, "Compute the mean."),
        (Speaker.TOOL, "```python\nprint(sum([1, 2, 3]) / 3)\n```"),
        (Speaker.TOOL, "```\n2.0\n```"),
        (Speaker.PARTICIPANT, "The mean is 2."),
    ])
    tool_segment = interview.segments.filter(speaker=Speaker.TOOL).order_by("position").first()
    code = make_code("Computation")
    c = client_for(analyst)
    workspace = reverse("coding:workspace", args=[project.uuid, interview.uuid])
    apply = reverse("coding:apply", args=[project.uuid, interview.uuid])
    body = c.get(workspace).content.decode()
    tool_turn = body.split('class="turn sp-tool"')[1]
    assert '<details class="tool-step"><summary>Tool step: code, output or browsing</summary>' in tool_turn
    assert f'<div class="seg other k-code_block" id="s-{tool_segment.pk}">' in tool_turn  # shown, not codable
    c.post(apply, {"code": code.pk, "segments": str(tool_segment.pk)})
    assert not Coding.objects.exists()

    c.post(reverse("coding:speaker_toggle", args=[project.uuid, interview.uuid]), {"any_speaker": "1"})
    body = c.get(workspace).content.decode()
    assert '<details class="tool-step" open>' in body
    assert f'<div class="seg codable other k-code_block" id="s-{tool_segment.pk}">' in body
    assert c.post(apply, {"code": code.pk, "segments": str(tool_segment.pk)}).status_code == 200
    assert list(Coding.objects.values_list("segment_id", flat=True)) == [tool_segment.pk]


def _model_headers(html: str) -> list[str]:
    import re

    return re.findall(r'<th class="num model-col" title="Uses in interviews with ([^"]+)"', html)


def test_codebook_columns_are_the_interviewed_models_only(client_for, owner, project, make_interview, make_code):
    from interviews.models import Interview, Participant

    make_code("Home")
    make_interview(label="GPT-4o")
    make_interview(title="Claude on belonging", label="Claude")
    Participant.objects.create(project=project, label="Never interviewed")
    trashed = make_interview(title="Binned", label="Only in the trash")
    Interview.objects.filter(pk=trashed.pk).update(deleted_at=trashed.created_at)
    html = client_for(owner).get(reverse("coding:codebook", args=[project.uuid])).content.decode()
    assert _model_headers(html) == ["Claude", "GPT-4o"]
    assert "Hide the 2 per-model columns" in html


def test_codebook_collapses_many_model_columns_behind_a_toggle_that_works_without_javascript(
        client_for, owner, project, make_interview, make_code):
    make_code("Home")
    for i in range(5):
        make_interview(title=f"Interview {i}", label=f"Model {i}")
    c = client_for(owner)
    url = reverse("coding:codebook", args=[project.uuid])
    collapsed = c.get(url).content.decode()
    assert _model_headers(collapsed) == [] and "Show 5 per-model columns" in collapsed
    assert f'href="{url}?breakdown=show"' in collapsed  # a plain link: no script needed
    shown = c.get(url, {"breakdown": "show", "q": "Home"}).content.decode()
    assert _model_headers(shown) == [f"Model {i}" for i in range(5)]
    # The search form keeps the choice, and the way back keeps the search.
    assert '<input type="hidden" name="breakdown" value="show">' in shown
    assert f'href="{url}?breakdown=hide&amp;q=Home"' in shown or f'href="{url}?q=Home&amp;breakdown=hide"' in shown
    assert _model_headers(c.get(url, {"breakdown": "hide"}).content.decode()) == []


def test_while_coding_the_next_step_leads_to_the_codebooks_list_of_interviews_to_code(client_for, project, owner,
                                                                                      interview):
    page = client_for(owner).get(reverse("project_home", args=[project.uuid])).content.decode()
    codebook = reverse("coding:codebook", args=[project.uuid])
    assert f'<strong>Next:</strong> <a href="{codebook}#interview-progress">Keep coding: open an interview' in page
    assert 'id="interview-progress"' in client_for(owner).get(codebook).content.decode()


def test_a_merged_codes_page_offers_no_bring_back_and_a_post_is_refused_with_why(client_for, analyst, project, make_code):
    from coding.services import code_merge

    source, target = make_code("Advice list"), make_code("Deference")
    code_merge(source=source, target=target, actor=analyst)
    page = client_for(analyst).get(reverse("coding:code_detail", args=[project.uuid, source.uuid]))
    assert page.status_code == 200
    assert "Bring back into use" not in page.content.decode() and "A merged code stays archived" in page.content.decode()
    r = client_for(analyst).post(reverse("coding:code_archive", args=[project.uuid, source.uuid]), {"archived": ""})
    assert r.status_code == 400 and "was merged into “Deference”, which holds its codings" in r.content.decode()
    source.refresh_from_db()
    assert source.archived and source.merged_into == target
