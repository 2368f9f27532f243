"""Compare sentence segmenters on quality (two published sets, our LLM-answer set) and speed (peer corpus).

    .venv/bin/python bench/segmenters.py          # prints the table
    .venv/bin/python bench/run.py --only segmentation   # same, into RESULTS.md

Contenders, each returning character spans:
- ours: interviews.segmentation.segment_text (Markdown blocks + rule fast
  path + pysbd for doubtful ends)
- pysbd 0.3.4 (char_span=True), blingfire 0.1.8
- nltk 3.10.4 Punkt: NLTK's pretrained punkt comes from a data hub download,
  which this project does not do. Two variants instead: Punkt with default
  parameters (untrained) and Punkt trained here on English prose that ships
  with Python itself (the standard library's docstrings), cached in bench/out/.
- spaCy 3.8.18: blank("en") + the rule-based sentencizer (no model download)

Quality on sets we did not write, both installed from PyPI (bench/requirements.txt):
- the English "Golden Rules" of pragmatic_segmenter (48 cases: abbreviations,
  lists, ellipses, quotes), shipped inside the pysbd wheel as
  ``benchmarks.english_golden_rules``; a case counts only if every sentence is right;
- syntok 1.4.4's ``syntok/segmenter_test.py`` ``OSPL`` text, one sentence per line
  (109 sentences: abbreviations, enumerations, parentheses, biomedical abstracts),
  joined by spaces as syntok's own test does; a sentence counts if a segment has
  exactly its offsets.

Quality on our own LLM-answer set: the cases of interviews/tests/segmentation_cases.py, exact match of
the whole case (every segment right). "plain" = single-paragraph cases that
any sentence splitter can be judged on; "all" adds Markdown (lists, tables,
code, quotes) where only a Markdown-aware splitter can be right.
"""

from __future__ import annotations

import ast
import pickle
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import OUT, Section, best_of, corpus_module  # noqa: E402

SpanFn = Callable[[str], list[tuple[int, int]]]


def _ours() -> SpanFn:
    from interviews.segmentation import segment_text

    return lambda text: [(s.start, s.end) for s in segment_text(text)]


def _pysbd() -> SpanFn:
    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return lambda text: [(s.start, s.end) for s in seg.segment(text)]


def _blingfire() -> SpanFn:
    import blingfire

    def spans(text: str) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        _, offsets = blingfire.text_to_sentences_and_offsets(text)
        return [tuple(o) for o in offsets]

    return spans


def _punkt_untrained() -> SpanFn:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    tok = PunktSentenceTokenizer()
    return lambda text: list(tok.span_tokenize(text))


def _punkt_trained() -> SpanFn:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    tok = PunktSentenceTokenizer(train_punkt_locally())
    return lambda text: list(tok.span_tokenize(text))


def train_punkt_locally(limit_chars: int = 3_000_000):
    """Punkt parameters learnt from the docstrings of Python's standard library (no download)."""
    cache = OUT / f"punkt-stdlib-{sys.version_info.major}{sys.version_info.minor}.pickle"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    from nltk.tokenize.punkt import PunktTrainer

    chunks, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "test" in path.parts or "idlelib" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    chunks.append(doc)
                    size += len(doc)
        if size > limit_chars:
            break
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    trainer.train("\n\n".join(chunks), finalize=True)
    params = trainer.get_params()
    OUT.mkdir(exist_ok=True)
    cache.write_bytes(pickle.dumps(params))
    return params


def _spacy() -> SpanFn:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 5_000_000
    return lambda text: [(s.start_char, s.end_char) for s in nlp(text).sents]


CONTENDERS: list[tuple[str, str, Callable[[], SpanFn]]] = [
    ("ours (rules + pysbd for doubtful)", "interviews.segmentation", _ours),
    ("pysbd", "pysbd 0.3.4", _pysbd),
    ("blingfire", "blingfire 0.1.8", _blingfire),
    ("nltk punkt, untrained", "nltk 3.10.4", _punkt_untrained),
    ("nltk punkt, trained on stdlib docstrings", "nltk 3.10.4", _punkt_trained),
    ("spaCy blank en + sentencizer", "spacy 3.8.18", _spacy),
]


def _trimmed(text: str, spans: list[tuple[int, int]]) -> list[str]:
    out = []
    for a, b in spans:
        piece = text[a:b].strip()
        if piece:
            out.append(piece)
    return out


def quality(fn: SpanFn) -> tuple[int, int, int, int, list[str]]:
    """(plain right, plain total, all right, all total, ids of failed plain cases)."""
    from interviews.tests.segmentation_cases import CASES, expected_segments, is_plain

    plain_ok = plain_n = all_ok = 0
    failed: list[str] = []
    for case_id, text, expected in CASES:
        want = [seg for _, seg in expected_segments(expected)]
        right = _trimmed(text, fn(text)) == want
        all_ok += right
        if is_plain(text, expected):
            plain_n += 1
            plain_ok += right
            if not right:
                failed.append(case_id)
    return plain_ok, plain_n, all_ok, len(CASES), failed


def golden_rules(fn: SpanFn) -> tuple[int, int, list[int]]:
    """(cases right, cases, numbers of the rules missed) on the Golden Rules shipped with pysbd."""
    from benchmarks.english_golden_rules import GOLDEN_EN_RULES

    missed = [k for k, (text, want) in enumerate(GOLDEN_EN_RULES, 1) if _trimmed(text, fn(text)) != want]
    return len(GOLDEN_EN_RULES) - len(missed), len(GOLDEN_EN_RULES), missed


def syntok_ospl(fn: SpanFn) -> tuple[int, int]:
    """(sentences with exact offsets, sentences) on syntok's one-sentence-per-line test text; (0, 0) without syntok."""
    try:
        from syntok.segmenter_test import SENTENCES, TEXT
    except ImportError:
        return 0, 0  # bench/requirements.txt installs it

    want, pos = set(), 0
    for sentence in SENTENCES:
        want.add((pos, pos + len(sentence)))
        pos += len(sentence) + 1
    got = set()
    for a, b in fn(TEXT):
        piece = TEXT[a:b]
        a += len(piece) - len(piece.lstrip())
        b -= len(piece) - len(piece.rstrip())
        got.add((a, b))
    return len(want & got), len(want)


def speed(fn: SpanFn, turns: list[str], repeats: int) -> tuple[float, int]:
    """Sentences per second over the corpus turns (one call per turn, like an import)."""
    seconds, count = best_of(repeats, lambda: sum(len(fn(t)) for t in turns))
    return count / seconds, count


def corpus_turns(quick: bool) -> tuple[list[str], list[list[str]]]:
    corpus = corpus_module()
    docs = corpus.make_corpus(n_docs=5 if quick else 20)
    sentences = [ss for d in docs for _, ss in d["turns"]]
    return [" ".join(ss) for ss in sentences], sentences


def compare(quick: bool = False) -> Section:
    turns, truth = corpus_turns(quick)
    rows = []
    notes = []
    for label, version, make in CONTENDERS:
        try:
            fn = make()
        except ImportError as exc:
            rows.append([label, version, None, None, None, None, None, None, f"not installed ({exc.name})"])
            continue
        per_s, _ = speed(fn, turns, 1 if quick else 3)
        exact = sum(_trimmed(t, fn(t)) == ss for t, ss in zip(turns, truth, strict=True))
        plain_ok, plain_n, all_ok, all_n, failed = quality(fn)
        golden_ok, golden_n, golden_missed = golden_rules(fn)
        ospl_ok, ospl_n = syntok_ospl(fn)
        rows.append([
            label, version, f"{golden_ok}/{golden_n}", f"{ospl_ok}/{ospl_n}", round(per_s), f"{exact}/{len(turns)}",
            f"{plain_ok}/{plain_n}", f"{all_ok}/{all_n}", "",
        ])
        if golden_missed:
            notes.append(f"- {label} misses (Golden Rules): {', '.join(map(str, golden_missed))}")
        if failed:
            notes.append(f"- {label} misses (plain): {', '.join(failed)}")
    return Section(
        title="Sentence segmenters: external sets (Golden Rules, syntok), speed on the peer corpus, our LLM-answer set",
        columns=[
            "segmenter", "version", "Golden Rules (pysbd's copy)", "syntok OSPL sentences", "sentences/s (1 core)",
            "corpus turns exact", "ours: plain", "ours: all", "note",
        ],
        rows=rows,
        notes=(
            "External: pragmatic_segmenter's English Golden Rules as shipped in the pysbd 0.3.4 wheel "
            "(`benchmarks/english_golden_rules.py`), a case counts if every sentence is right; syntok 1.4.4's "
            "`segmenter_test.OSPL`, a sentence counts if one segment has exactly its offsets. "
            "Speed: one call per turn over the peer corpus (800 turns, 7,891 sentences; best of 3). "
            "Ours: `interviews/tests/segmentation_cases.py`, a case counts only if every segment is right; "
            "“plain” = one paragraph of prose, “all” includes Markdown blocks. NLTK's pretrained punkt needs a "
            "download from NLTK's data hub, which this project does not do; Punkt is shown untrained and trained "
            "locally on the docstrings of Python's standard library.\n\n" + "\n".join(notes)
        ),
    )


if __name__ == "__main__":
    print(compare(quick="--quick" in sys.argv).markdown())
