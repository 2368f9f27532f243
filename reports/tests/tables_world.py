"""A small but complete project for the report-table tests: themes with a sub-theme, two coders,
contiguous and separate coded segments, an exemplar, and text full of characters that
break naive writers (LaTeX specials, quotes, formula starters, emoji)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from coding.models import Code, Coding
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.segment_store import segments_for_turns
from themes.models import Exemplar, Theme, ThemeCode

NASTY = ("Costs rose 50% & fees_2 hit $100 #1 {ok} ~ ^ back\\slash. "
         "She said “home” isn’t ‘one place’ – or — is it… «maybe». "
         "=SUM(A1) +1 -2 @me are formulas in a spreadsheet. "
         "Emoji 🏠 and 家 stay. [...] brackets -- and `` quotes ''.")


@dataclass
class World:
    project: object
    gpt: Participant
    claude: Participant
    llama: Participant
    codes: dict
    themes: dict
    interviews: dict
    owner: object
    analyst: object


def _interview(project, participant, title, answers, user) -> Interview:
    interview = Interview.objects.create(project=project, participant=participant, title=title, created_by=user,
                                         source_format="chatgpt", source_sha256="ab" * 32)
    turns = []
    for i, text in enumerate(answers):
        turns.append(Turn(interview=interview, position=2 * i, speaker=Speaker.INTERVIEWER, text=f"Question {i + 1}?"))
        turns.append(Turn(interview=interview, position=2 * i + 1, speaker=Speaker.PARTICIPANT, text=text,
                          model_slug=participant.model_id))
    turns = Turn.objects.bulk_create(turns)
    Segment.objects.bulk_create(segments_for_turns(interview, turns))
    return interview


def seg(interview: Interview, fragment: str) -> Segment:
    return Segment.objects.get(interview=interview, speaker=Speaker.PARTICIPANT, text__contains=fragment)


def code(c: Code, segment: Segment, user) -> Coding:
    return Coding.objects.create(segment=segment, code=c, coder=user, interview=segment.interview)


@pytest.fixture
def world(project, owner, analyst) -> World:
    gpt = Participant.objects.create(project=project, label="GPT-4o", provider="OpenAI", model_id="gpt-4o-2024-08-06")
    claude = Participant.objects.create(project=project, label="Claude", provider="Anthropic", model_id="claude-3-5")
    llama = Participant.objects.create(project=project, label="Llama", provider="Meta", model_id="llama-3.1", interface="api")
    iv_gpt = _interview(project, gpt, "GPT on home", [
        "Home is a feeling. It grows with time. Borders decide a lot.",
        NASTY,
    ], owner)
    iv_claude = _interview(project, claude, "Claude on home", ["I have no home. Belonging is yours to name."], owner)
    _interview(project, llama, "Llama on home", ["You can belong everywhere!"], owner)
    codes = {name: Code.objects.create(project=project, name=name, position=i, colour="#336699")
             for i, name in enumerate(["Feeling", "Structure", "AI self", "Unused"])}
    # GPT: "Home is a feeling." + "It grows with time." contiguous under Feeling (one excerpt),
    # coded by both coders on the first segment; "Borders decide a lot." Structure.
    code(codes["Feeling"], seg(iv_gpt, "Home is a feeling."), owner)
    code(codes["Feeling"], seg(iv_gpt, "Home is a feeling."), analyst)
    code(codes["Feeling"], seg(iv_gpt, "It grows with time."), owner)
    code(codes["Structure"], seg(iv_gpt, "Borders decide a lot."), analyst)
    code(codes["Structure"], seg(iv_gpt, "Costs rose"), owner)
    code(codes["AI self"], seg(iv_claude, "I have no home."), owner)
    code(codes["Feeling"], seg(iv_claude, "Belonging is yours"), owner)
    top = Theme.objects.create(project=project, name="Belonging as feeling", position=0)
    sub = Theme.objects.create(project=project, name="Personal journey", position=0, parent=top)
    other = Theme.objects.create(project=project, name="Limits", position=1)
    ThemeCode.objects.create(theme=top, code=codes["AI self"], position=0)
    ThemeCode.objects.create(theme=sub, code=codes["Feeling"], position=0)
    ThemeCode.objects.create(theme=other, code=codes["Structure"], position=0)
    s = seg(iv_gpt, "Home is a feeling.")
    Exemplar.objects.create(theme=sub, turn=s.turn, segment=s, spans=[[s.start, s.end]], quote=s.text, position=1,
                            created_by=owner)
    return World(project=project, gpt=gpt, claude=claude, llama=llama, codes=codes,
                 themes={"top": top, "sub": sub, "other": other},
                 interviews={"gpt": iv_gpt, "claude": iv_claude}, owner=owner, analyst=analyst)
