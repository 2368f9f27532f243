"""ChatGPT export parser: branch choice, visible turns, models, citations, streaming."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from pathlib import Path

import pytest

from interviews.parsers import Limits, ParseError, SourceFile, detect_format, parse_upload
from interviews.parsers.chatgpt import clean_citations

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
SAMPLE = SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json"


def sample() -> list[dict]:
    return json.loads(SAMPLE.read_text())


def parse_json(data: object, name: str = "conversations.json") -> list:
    return list(parse_upload(SourceFile.from_bytes(name, json.dumps(data).encode())))


def node(nid: str, parent: str | None, role: str | None, text: str = "", *, children=(),
         ctype: str = "text", t: float = 0.0, **extra) -> dict:
    msg = None
    if role is not None:
        msg = {"id": nid, "author": {"role": role, "name": None}, "create_time": t,
               "content": {"content_type": ctype, "parts": [text]},
               "status": "finished_successfully", "recipient": extra.pop("recipient", "all"),
               "channel": extra.pop("channel", None), "metadata": extra.pop("metadata", {})}
    return {"id": nid, "message": msg, "parent": parent, "children": list(children)}


def conversation(nodes: list[dict], current: str | None, **extra) -> dict:
    conv = {"title": "t", "create_time": 1700000000.0, "id": "c1",
            "mapping": {n["id"]: n for n in nodes}, "default_model_slug": "gpt-4o"}
    if current is not None:
        conv["current_node"] = current
    conv.update(extra)
    return conv


def branched() -> list[dict]:
    """root -> q1 -> (a1 old answer | a1b regenerated answer, newer)."""
    return [
        node("root", None, None, children=["q1"]),
        node("q1", "root", "user", "Why?", children=["a1", "a1b"], t=1.0),
        node("a1", "q1", "assistant", "First answer.", t=2.0,
             metadata={"model_slug": "gpt-4"}),
        node("a1b", "q1", "assistant", "Regenerated answer.", t=3.0,
             metadata={"model_slug": "gpt-4o"}),
    ]


def test_sample_imports_the_visible_turns_of_the_current_branch():
    (conv,) = list(parse_upload(SourceFile.from_path(str(SAMPLE))))
    assert conv.title == "Average Distance in U(0,1)"
    assert conv.external_id == "966da5c4-5bb7-4e4d-ab6d-a7316b96266e"
    assert conv.started_at.year == 2023
    assert conv.model_slugs == ["gpt-4-code-interpreter"]
    speakers = [t.speaker for t in conv.turns]
    assert speakers.count("interviewer") == 8 and speakers.count("participant") == 12
    assert speakers[:5] == ["interviewer", "participant", "tool", "tool", "participant"]
    assert conv.turns[0].text.startswith("given two random independent variables")
    assert conv.turns[1].text.startswith("To find the average distance")
    assert conv.turns[4].text.startswith("My apologies")
    assert all(t.metadata.get("model") == "gpt-4-code-interpreter"
               for t in conv.turns if t.speaker == "participant")
    assert conv.turns[-1].metadata["message_ids"] == [conv.metadata["current_node"]]


def test_code_interpreter_calls_and_outputs_are_tool_turns_in_order():
    (conv,) = list(parse_upload(SourceFile.from_path(str(SAMPLE))))
    tools = [t for t in conv.turns if t.speaker == "tool"]
    assert len(tools) == 22  # 11 code cells sent to python, 11 outputs
    call, result = tools[0], tools[1]
    assert call.text.startswith("```python\nfrom sympy import symbols, integrate, Abs") and call.text.endswith("\n```")
    assert call.metadata["tool"] == {"name": "python", "step": "call", "content_type": "code"}
    assert "model" not in call.metadata
    assert result.text == "```\n0\n```"
    assert result.metadata["tool"] == {"name": "python", "step": "result", "content_type": "execution_output"}
    # Every tool step follows the answer that made it: calls and results alternate.
    assert [t.metadata["tool"]["step"] for t in tools] == ["call", "result"] * 11


def test_browsing_steps_are_tool_turns_with_their_source():
    nodes = [
        node("root", None, None, children=["q"]),
        node("q", "root", "user", "Who won?", children=["call"]),
        node("call", "q", "assistant", "search('winner 2024')", recipient="browser", ctype="code", children=["disp"]),
        node("disp", "call", "tool", "", ctype="tether_browsing_display", children=["quote"]),
        node("quote", "disp", "tool", "", ctype="tether_quote", children=["a"]),
        node("a", "quote", "assistant", "Team A won."),
    ]
    nodes[2]["message"]["content"] = {"content_type": "code", "language": "unknown", "text": "search('winner 2024')"}
    nodes[3]["message"]["author"]["name"] = "browser"
    nodes[3]["message"]["content"] = {"content_type": "tether_browsing_display", "result": "Winner (example.org): Team A won.",
                                      "summary": None}
    nodes[4]["message"]["author"]["name"] = "browser"
    nodes[4]["message"]["content"] = {"content_type": "tether_quote", "url": "https://example.org/w", "domain": "example.org",
                                      "title": "Winner", "text": "Team A won the final."}
    (conv,) = parse_json([conversation(nodes, current="a")])
    assert [(t.speaker, t.text) for t in conv.turns] == [
        ("interviewer", "Who won?"),
        ("tool", "```\nsearch('winner 2024')\n```"),
        ("tool", "Winner (example.org): Team A won."),
        ("tool", "Winner https://example.org/w\n\nTeam A won the final."),
        ("participant", "Team A won."),
    ]
    assert [t.metadata["tool"]["name"] for t in conv.turns if t.speaker == "tool"] == ["browser"] * 3


def test_it_follows_current_node_not_the_newest_answer():
    (conv,) = parse_json([conversation(branched(), current="a1")])
    assert [t.text for t in conv.turns] == ["Why?", "First answer."]
    assert conv.turns[1].metadata["branch"] == {"index": 0, "alternatives": 2}
    assert conv.model_slugs == ["gpt-4"]
    assert conv.metadata["alternative_branches"] == 1


def test_it_follows_current_node_to_a_regenerated_answer():
    (conv,) = parse_json([conversation(branched(), current="a1b")])
    assert [t.text for t in conv.turns] == ["Why?", "Regenerated answer."]
    assert conv.turns[1].metadata["branch"] == {"index": 1, "alternatives": 2}


def test_without_current_node_it_takes_the_latest_leaf():
    (conv,) = parse_json([conversation(branched(), current=None)])
    assert conv.turns[-1].text == "Regenerated answer."


def test_model_is_per_message_with_default_as_fallback():
    nodes = [
        node("root", None, None, children=["q1"]),
        node("q1", "root", "user", "One", children=["a1"]),
        node("a1", "q1", "assistant", "A", children=["q2"], metadata={"model_slug": "gpt-4o"}),
        node("q2", "a1", "user", "Two", children=["a2"]),
        node("a2", "q2", "assistant", "B", children=["q3"], metadata={"model_slug": "o1"}),
        node("q3", "a2", "user", "Three", children=["a3"]),
        node("a3", "q3", "assistant", "C"),
    ]
    (conv,) = parse_json([conversation(nodes, current="a3", default_model_slug="gpt-4o-mini")])
    assert [t.metadata.get("model") for t in conv.turns if t.speaker == "participant"] == [
        "gpt-4o", "o1", "gpt-4o-mini"]
    assert conv.model_slugs == ["gpt-4o", "o1", "gpt-4o-mini"]


def test_hidden_tool_thinking_and_context_turns_are_dropped():
    nodes = [
        node("root", None, None, children=["sys"]),
        node("sys", "root", "system", "You are ChatGPT", children=["ctx"]),
        node("ctx", "sys", "user", "about me", ctype="user_editable_context", children=["q"]),
        node("q", "ctx", "user", "Search it", children=["hid"]),
        node("hid", "q", "user", "hidden", children=["th"],
             metadata={"is_visually_hidden_from_conversation": True}),
        node("th", "hid", "assistant", "thinking...", ctype="thoughts", children=["call"]),
        node("call", "th", "assistant", "search('x')", recipient="browser", children=["tool"]),
        node("tool", "call", "tool", "results", children=["ana"]),
        node("ana", "tool", "assistant", "analysis", channel="analysis", children=["ans"]),
        node("ans", "ana", "assistant", "The answer.", children=["empty"]),
        node("empty", "ans", "assistant", "   "),
    ]
    (conv,) = parse_json([conversation(nodes, current="empty")])
    # The browsing call and its result are shown on the page, so they stay, as tool turns.
    assert [(t.speaker, t.text) for t in conv.turns] == [
        ("interviewer", "Search it"), ("tool", "search('x')"), ("tool", "results"), ("participant", "The answer.")]


def test_multimodal_parts_join_text_and_mark_images():
    n = node("q", "root", "user", children=["a"])
    n["message"]["content"] = {"content_type": "multimodal_text", "parts": [
        {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
        "What is in this picture?",
        {"content_type": "audio_transcription", "text": "spoken words"}]}
    nodes = [node("root", None, None, children=["q"]), n, node("a", "q", "assistant", "A cat.")]
    (conv,) = parse_json([conversation(nodes, current="a")])
    assert conv.turns[0].text == "[image]\n\nWhat is in this picture?\n\nspoken words"


def test_citation_markers_are_cleaned():
    assert clean_citations("Paris is the capital 【11†source】.") == "Paris is the capital."
    assert clean_citations("Rome \ue200cite\ue202turn0search1\ue201 is old.") == "Rome is old."
    # Entity references keep the name the web interface shows.
    assert clean_citations('Try \ue200entity\ue202["restaurant", "Joe\'s Pizza", {}]\ue201 tonight.') == "Try Joe's Pizza tonight."
    # Plain 【】 are ordinary brackets in Chinese text, not citations.
    assert clean_citations("【注意】请看这里。") == "【注意】请看这里。"
    nodes = [node("root", None, None, children=["q"]), node("q", "root", "user", "Q", children=["a"]),
             node("a", "q", "assistant", "It is 5 km 【3:0†notes.pdf】 away.")]
    (conv,) = parse_json([conversation(nodes, current="a")])
    assert conv.turns[1].text == "It is 5 km away."


def test_wrapper_object_and_single_conversation_are_accepted():
    conv = conversation(branched(), current="a1")
    assert len(parse_json({"conversations": [conv, conv]})) == 2
    assert len(parse_json(conv)) == 1


def test_entries_without_mapping_are_skipped():
    convs = parse_json([{"title": "stub", "id": "x"}, conversation(branched(), current="a1")])
    assert [c.index for c in convs] == [1]


def test_split_export_zip_loads_every_part_in_order(tmp_path):
    conv = sample()[0]
    other = conversation(branched(), current="a1", title="Second")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("export/conversations-001.json", json.dumps([other]))
        zf.writestr("export/conversations-000.json", json.dumps([conv]))
        zf.writestr("export/chat.html", "<html>not a transcript</html>")
        zf.writestr("export/user.json", json.dumps({"id": "user-1"}))
    path = tmp_path / "export.zip"
    path.write_bytes(buf.getvalue())
    convs = list(parse_upload(SourceFile.from_path(str(path))))
    assert [c.title for c in convs] == ["Average Distance in U(0,1)", "Second"]
    assert convs[0].source_name == "export.zip/export/conversations-000.json"


def test_detects_chatgpt_exports():
    assert detect_format(SourceFile.from_path(str(SAMPLE))) == "chatgpt"


def test_parsing_streams_one_conversation_at_a_time():
    # The tail of this file is broken, yet the first conversation arrives first:
    # the parser does not load the whole export before yielding.
    good = json.dumps(conversation(branched(), current="a1"))
    data = ("[" + good + "," + good + ", {\"title\": ").encode()
    it = parse_upload(SourceFile.from_bytes("conversations.json", data), limits=Limits())
    assert next(it).turns[0].text == "Why?"
    assert next(it).turns[0].text == "Why?"
    with pytest.raises(ParseError):
        next(it)


def test_broken_json_in_a_file_too_big_to_re_read_names_the_conversation():
    good = json.dumps(conversation(branched(), current="a1"))
    data = ("[" + good + "," + good + ", {\"title\": tru }]").encode()
    with pytest.raises(ParseError) as exc:
        list(parse_upload(SourceFile.from_bytes("conversations.json", data), limits=Limits(max_text_bytes=100)))
    assert str(exc.value).startswith("conversations.json: conversation 3: expected valid JSON, found '")


# Broken variants of the real sample: each names file, place and expectation.

def broken(mutate) -> str:
    data = sample()
    mutate(data)
    with pytest.raises(ParseError) as exc:
        parse_json(data)
    return str(exc.value)


def test_truncated_json_names_line_and_column():
    text = SAMPLE.read_text()[:5000]
    with pytest.raises(ParseError) as exc:
        list(parse_upload(SourceFile.from_bytes("conversations.json", text.encode())))
    msg = str(exc.value)
    assert msg.startswith("conversations.json: line ")
    assert "column" in msg and "expected valid JSON" in msg
    assert "\n" not in msg


def test_mapping_of_the_wrong_type_is_named():
    msg = broken(lambda d: d[0].__setitem__("mapping", []))
    assert msg == ("conversations.json: conversation 1 (id 966da5c4-5bb7-4e4d-ab6d-a7316b96266e), "
                   "field 'mapping': expected an object of nodes, found a list")


def test_dangling_current_node_is_named():
    msg = broken(lambda d: d[0].__setitem__("current_node", "nope"))
    assert "field 'current_node': expected the id of a node in 'mapping', found the text 'nope'" in msg


def test_parent_cycle_is_refused():
    def cycle(d):
        m = d[0]["mapping"]
        root = next(k for k, v in m.items() if v["parent"] is None)
        m[root]["parent"] = d[0]["current_node"]
    assert "a cycle" in broken(cycle)


def test_parts_of_the_wrong_type_are_named():
    def bad_parts(d):
        m = d[0]["mapping"]
        m[d[0]["current_node"]]["message"]["content"]["parts"] = "text"
    msg = broken(bad_parts)
    assert "field 'content.parts': expected a list, found the text 'text'" in msg


def test_a_conversation_that_is_not_an_object_is_named():
    msg = broken(lambda d: d.append("oops"))
    assert msg == ("conversations.json: conversation 2: expected a conversation object, "
                   "found the text 'oops'")


def test_deep_copy_of_sample_is_unchanged_by_parsing():
    data = sample()
    before = copy.deepcopy(data)
    parse_json(data)
    assert data == before


def test_other_branches_are_kept_from_where_they_leave_the_transcript():
    (conv,) = parse_json([conversation(branched(), current="a1")])
    assert conv.metadata["branches"] == [{
        "leaf": "a1b", "diverges_at": 1,
        "turns": [{"speaker": "participant", "text": "Regenerated answer.",
                   "metadata": conv.metadata["branches"][0]["turns"][0]["metadata"]}],
    }]
    assert conv.metadata["branches"][0]["turns"][0]["metadata"]["model"] == "gpt-4o"
    (plain,) = list(parse_upload(SourceFile.from_path(str(SAMPLE))))
    assert "branches" not in plain.metadata


def test_a_conversation_with_thousands_of_branches_keeps_a_bounded_number():
    from interviews.parsers.chatgpt import MAX_BRANCHES

    answers = [f"a{k}" for k in range(3000)]
    nodes = [node("root", None, None, children=["q"]), node("q", "root", "user", "Why?", children=answers)]
    nodes += [node(a, "q", "assistant", f"Answer {a}.", t=float(k)) for k, a in enumerate(answers)]
    (conv,) = parse_json([conversation(nodes, current="a0")])
    assert len(conv.metadata["branches"]) == MAX_BRANCHES
    assert conv.metadata["alternative_branches"] == 2999
