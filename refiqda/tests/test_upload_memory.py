"""A .qdpx is refused by its project file's size and element count, and its documents' total, before the memory
an lxml tree (or the texts) would take is spent."""

from __future__ import annotations

import io
import zipfile

import pytest

import refiqda
from refiqda import UnsafeInputError
from tests import memory
from tests.memory import MB

from .helpers import QDPX_SAMPLES, one_source_project

HEAD = b'<?xml version="1.0" encoding="utf-8"?><Project xmlns="urn:QDA-XML:project:1.0" name="x"><Description>'
TAIL = b"</Description></Project>"


def qdpx(block: bytes, times: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf, \
            zf.open("project.qde", "w", force_zip64=True) as fh:
        fh.write(HEAD)
        for _ in range(times):
            fh.write(block)
        fh.write(TAIL)
    return out.getvalue()


VARIED = b"".join(b"<a/>" if n * 7919 % 101 & 1 else b"<b/>" for n in range(1 << 16))  # 256 KB, 65,536 elements


def refused_within(data: bytes, budget: int, **limits) -> str:
    read = lambda: refiqda.read_project(data, name="bomb.qdpx", limits=refiqda.Limits(**limits))  # noqa: E731
    return str(memory.refused_within(UnsafeInputError, read, budget))


def test_a_project_file_larger_than_allowed_is_refused_unread():
    data = qdpx(VARIED, 12)  # 3 MB
    assert refused_within(data, 2 * MB, max_qde_bytes=MB) == (
        "bomb.qdpx: the project file 'project.qde' unpacks to 3 MB, more than the 1 MB that can be imported")


def test_a_project_file_of_millions_of_tiny_elements_is_refused_before_the_tree_is_built():
    # 5 MB, 1.3 million elements: the tree would take ~170 MB (620,000 codes, 2.48 million nodes, took 1 GB).
    data = qdpx(VARIED, 20)
    message = refused_within(data, 15 * MB)
    assert message.startswith("bomb.qdpx: project.qde: the file holds about 1,310,7")
    assert "XML elements and attributes, more than the 1,000,000 that can be read at once" in message


def test_the_element_cap_is_a_limit_a_caller_may_raise_for_projects_and_codebooks():
    data = qdpx(VARIED, 20)  # 1.3 million elements: over the default
    assert refiqda.read_project(data, name="big.qdpx", limits=refiqda.Limits(max_nodes=1_400_000)).name == "x"
    with pytest.raises(UnsafeInputError, match="more than the 1,000,000 that can be read"):
        refiqda.read_codebook(data, name="big.qdpx")
    assert refiqda.read_codebook(data, name="big.qdpx", limits=refiqda.Limits(max_nodes=1_400_000)).codes == []


def test_a_project_of_more_codes_than_allowed_is_refused_before_the_tree_is_built():
    data = qdpx(b'</Description><CodeBook><Codes>' + b'<Code guid="x" name="c"/>' * 1001 + b"</Codes></CodeBook>"
                b"<Description>", 1)
    assert refused_within(data, 2 * MB, max_codes=1000) == (
        "bomb.qdpx: project.qde: the project holds 1,001 codes, more than the 1,000 one import may bring in")


def test_documents_beyond_the_total_a_project_may_hold_are_refused():
    data = one_source_project("word " * 100_000, [])  # one 500 KB document
    assert "its documents unpack to more than 0 MB in all" in refused_within(data, 5 * MB, max_sources_bytes=100_000)


@pytest.mark.parametrize("path", QDPX_SAMPLES, ids=lambda p: p.name)
def test_real_projects_still_read(path):
    assert refiqda.read_project(path).codes
