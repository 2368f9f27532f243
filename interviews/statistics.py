"""Descriptive interview statistics per participant (the chatbot), with readability of its answers.

Definitions, so a reader of the paper can reproduce every number:

- **Interviews**: the participant's interviews in the project (trash excluded), optionally one depth.
- **Questions**: interviewer turns. **Responses**: participant turns.
- **Words**: runs of letters/digits, inner apostrophes and hyphens kept
  ("don't", "well-being" are one word); a URL counts as one word; Markdown
  markers (``**``, ``#``, ``|``, ``-``) are not words. Scripts without spaces
  (Chinese, Japanese) count one word per run of characters, so compare those
  by characters instead.
- **Average words per response**: participant words / participant turns.
- **Per interview**: min, mean and max over the participant's interviews of its
  words, of the questions and of the interviewer's words.
- **Readability** of all the participant's answers pooled, over prose units
  from :func:`interviews.segmentation.segment_text` (code blocks and table rows
  are left out; each remaining segment is one sentence, its Markdown marker
  stripped):
  - Flesch–Kincaid grade = 0.39 · words/sentences + 11.8 · syllables/words − 15.59
  - Gunning fog = 0.4 · (words/sentences + 100 · complex/words), complex = words of 3+ syllables
  - Coleman–Liau = 0.0588 · L − 0.296 · S − 15.8, L = letters per 100 words, S = sentences per 100 words
- **Syllables**: :func:`count_syllables`, the common vowel-group heuristic
  (documented there); exact for most English words, ±1 on some.

The reports app exports the same rows (``STAT_COLUMNS`` and ``as_table``).
"""

from __future__ import annotations

import csv
import io
import re
import statistics as pystats
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from interviews.models import Interview, Speaker, Turn
from interviews.segmentation import segment_text, strip_markup

DEPTH_CHOICES = [("", "All depths"), *Interview.Depth.choices]

_URL = re.compile(r"https?://\S+|www\.\S+")
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_PROSE_KINDS = {"sentence", "heading", "list_item", "block_quote"}


def words(text: str) -> list[str]:
    """The words of a text, by the definition in the module docstring."""
    return _WORD.findall(_URL.sub(" url ", text))


def count_syllables(word: str) -> int:
    """Syllables of an English word by the vowel-group heuristic.

    Accents are folded ("café" → "cafe"); words of up to three letters have
    one syllable; a final silent "e"/"es"/"ed" after a consonant other than
    "l" is dropped ("hoped" 1, "table" 2) unless written "é" ("café" 2); a leading "y" is a consonant; then
    each run of one or two vowels (a, e, i, o, u, y) is one syllable. Numbers
    and words without Latin letters count as one.
    """
    accented_end = word.lower().endswith("é")  # "café": a written accent is pronounced
    w = unicodedata.normalize("NFKD", word.lower())
    w = "".join(c for c in w if "a" <= c <= "z")
    if len(w) <= 3:
        return 1
    if not accented_end:
        w = re.sub(r"(?:[^laeiouy]es|[^laeiouy]ed|[^laeiouy]e)$", "", w)
    w = re.sub(r"^y", "", w)
    return max(1, len(re.findall(r"[aeiouy]{1,2}", w)))


@lru_cache(maxsize=65536)
def _measure(word: str) -> tuple[int, int]:
    """(syllables, letters) of a word; cached because answers repeat their words a lot."""
    return count_syllables(word), sum(c.isalpha() for c in word)


@dataclass
class Readability:
    sentences: int = 0
    words: int = 0
    syllables: int = 0
    complex_words: int = 0
    letters: int = 0

    def add_text(self, text: str) -> None:
        for span in segment_text(text):
            if span.kind not in _PROSE_KINDS:
                continue
            found = words(strip_markup(text[span.start : span.end], span.kind))
            if not found:
                continue
            self.sentences += 1
            self.words += len(found)
            for w in found:
                syl, letters = _measure(w)
                self.syllables += syl
                self.complex_words += syl >= 3
                self.letters += letters

    @property
    def flesch_kincaid_grade(self) -> float | None:
        if not self.words:
            return None
        return 0.39 * self.words / self.sentences + 11.8 * self.syllables / self.words - 15.59

    @property
    def gunning_fog(self) -> float | None:
        if not self.words:
            return None
        return 0.4 * (self.words / self.sentences + 100 * self.complex_words / self.words)

    @property
    def coleman_liau(self) -> float | None:
        if not self.words:
            return None
        letters_per_100 = 100 * self.letters / self.words
        sentences_per_100 = 100 * self.sentences / self.words
        return 0.0588 * letters_per_100 - 0.296 * sentences_per_100 - 15.8


@dataclass
class ParticipantStatistics:
    label: str
    provider: str
    model_id: str
    interviews: int = 0
    questions: int = 0
    responses: int = 0
    interviewer_words: int = 0
    participant_words: int = 0
    words_per_interview: list[int] = field(default_factory=list)
    questions_per_interview: list[int] = field(default_factory=list)
    interviewer_words_per_interview: list[int] = field(default_factory=list)
    readability: Readability = field(default_factory=Readability)

    @staticmethod
    def spread(values: list[int]) -> tuple[int | None, float | None, int | None]:
        """(min, mean, max) across interviews."""
        return (min(values), pystats.fmean(values), max(values)) if values else (None, None, None)

    @property
    def questions_spread(self) -> tuple[int | None, float | None, int | None]:
        return self.spread(self.questions_per_interview)

    @property
    def interviewer_words_spread(self) -> tuple[int | None, float | None, int | None]:
        return self.spread(self.interviewer_words_per_interview)

    @property
    def avg_words_per_response(self) -> float | None:
        return self.participant_words / self.responses if self.responses else None

    @property
    def min_words_per_interview(self) -> int | None:
        return min(self.words_per_interview) if self.words_per_interview else None

    @property
    def max_words_per_interview(self) -> int | None:
        return max(self.words_per_interview) if self.words_per_interview else None

    @property
    def mean_words_per_interview(self) -> float | None:
        return pystats.fmean(self.words_per_interview) if self.words_per_interview else None


def project_statistics(project, *, depth: str | None = None) -> list[ParticipantStatistics]:
    """One row per participant with interviews in the project (2 queries)."""
    interviews = Interview.objects.for_project(project)
    if depth:
        interviews = interviews.filter(depth=depth)
    interviews = list(interviews.only("id", "participant__label", "participant__provider", "participant__model_id"))
    by_participant: dict[int, ParticipantStatistics] = {}
    interview_participant: dict[int, ParticipantStatistics] = {}
    for iv in interviews:
        p = iv.participant
        row = by_participant.setdefault(p.pk, ParticipantStatistics(p.label, p.provider, p.model_id))
        row.interviews += 1
        interview_participant[iv.pk] = row
    # interview id -> [questions, interviewer words, participant words]
    per_interview: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    turns = Turn.objects.filter(interview_id__in=list(interview_participant)).values_list("interview_id", "speaker", "text")
    for interview_id, speaker, text in turns.iterator(chunk_size=2000):
        row = interview_participant[interview_id]
        n = len(words(text))
        counts = per_interview[interview_id]
        if speaker == Speaker.INTERVIEWER:
            row.questions += 1
            row.interviewer_words += n
            counts[0] += 1
            counts[1] += n
        elif speaker == Speaker.PARTICIPANT:
            row.responses += 1
            row.participant_words += n
            counts[2] += n
            row.readability.add_text(text)
    for interview_id, row in interview_participant.items():
        questions, interviewer_words, participant_words = per_interview[interview_id]
        row.questions_per_interview.append(questions)
        row.interviewer_words_per_interview.append(interviewer_words)
        row.words_per_interview.append(participant_words)
    return sorted(by_participant.values(), key=lambda r: r.label.lower())


STAT_COLUMNS = [
    "Participant", "Provider", "Model id", "Interviews", "Questions", "Interviewer words", "Participant words",
    "Avg words per response", "Participant words per interview (min)", "(mean)", "(max)",
    "Flesch–Kincaid grade", "Gunning fog", "Coleman–Liau",
    "Questions per interview (min)", "(mean)", "(max)", "Interviewer words per interview (min)", "(mean)", "(max)",
]


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _spread_cells(spread: tuple[int | None, float | None, int | None]) -> list[object]:
    low, mean, high = spread
    return [low, _round(mean), high]


def as_table(rows: list[ParticipantStatistics]) -> list[list[object]]:
    """Rows matching STAT_COLUMNS, numbers rounded for publication (1 decimal)."""
    return [
        [
            r.label, r.provider, r.model_id, r.interviews, r.questions, r.interviewer_words, r.participant_words,
            _round(r.avg_words_per_response), r.min_words_per_interview, _round(r.mean_words_per_interview),
            r.max_words_per_interview, _round(r.readability.flesch_kincaid_grade),
            _round(r.readability.gunning_fog), _round(r.readability.coleman_liau),
            *_spread_cells(r.questions_spread), *_spread_cells(r.interviewer_words_spread),
        ]
        for r in rows
    ]


def statistics_csv(rows: list[ParticipantStatistics]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(STAT_COLUMNS)
    for row in as_table(rows):
        writer.writerow(["" if v is None else _csv_safe(v) for v in row])
    return out.getvalue()


def _csv_safe(value: object) -> object:
    # A label like "=HYPERLINK(...)" must not become a formula in a spreadsheet.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def statistics_xlsx(rows: list[ParticipantStatistics]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    ws = wb.active
    ws.title = "Interview statistics"
    ws.append(STAT_COLUMNS)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for row in as_table(rows):
        ws.append([_csv_safe(v) for v in row])
    for column in ws.columns:
        ws.column_dimensions[column[0].column_letter].width = max(12, min(40, max(len(str(c.value or "")) for c in column) + 2))
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()
