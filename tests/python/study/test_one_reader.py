"""The study reads its results directories through the one results reader
(:class:`hsrtcp.results.Corpus` over any directories, rows tagged ``result``): the rows
stacked in the order given, a corpus as its partitions, and the reader's refusals, with the
damaged file named even when several directories are read at once."""

from __future__ import annotations

import re

import polars as pl
import pytest

from hsrtcp.errors import InputError
from hsrtcp.results import Corpus
from hsrtcp.study import load

from . import handmade as hm


def _dirs(tmp_path):
    a = hm.write(tmp_path / "a", flows=hm.flows([{"flow_id": i} for i in (1, 2)]))
    corpus = tmp_path / "corpus"
    hm.write(corpus / "input=x", flows=hm.flows([{"flow_id": 1}]))
    hm.write(corpus / "input=y", flows=hm.flows([{"flow_id": 7}, {"flow_id": 8}, {"flow_id": 9}]))
    return a, corpus


def test_rows_tagged_with_their_directory_in_the_order_given(tmp_path):
    a, corpus = _dirs(tmp_path)
    res = load.read([corpus, a])
    parts = [str(corpus / "input=x"), str(corpus / "input=y"), str(a)]
    assert res.dirs == parts == list(res.stack.parts)
    assert res.flows.select("result", "flow_id").rows() == [
        (parts[0], 1), (parts[1], 7), (parts[1], 8), (parts[1], 9), (parts[2], 1), (parts[2], 2)]
    assert res.flows.columns[-1] == "result"


def test_refusals(tmp_path):
    a, corpus = _dirs(tmp_path)
    with pytest.raises(InputError, match="no results directory given"):
        load.read([])
    with pytest.raises(InputError, match=re.escape(f"results directory given twice: {corpus / 'input=x'}")):
        load.read([corpus, corpus / "input=x"])
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'nowhere'}: no such results directory")):
        load.read([a, tmp_path / "nowhere"])


def test_a_damaged_page_names_its_directory_file(tmp_path):
    """Behind an intact footer (the schema checks pass), a data page that does not decode:
    the directories are read at once, and the error still names the one file."""
    a = hm.write(tmp_path / "a", flows=hm.flows([{"flow_id": i} for i in range(3)]))
    b = hm.write(tmp_path / "b", flows=hm.flows([{"flow_id": i} for i in range(500)]))
    f = b / "flows.parquet"
    data = bytearray(f.read_bytes())
    for i in range(200, 600):  # the first column chunk's compressed bytes; the footer is at the end
        data[i] ^= 0x5A
    f.write_bytes(bytes(data))
    with pytest.raises(InputError, match="^" + re.escape(f"{f}: cannot read: ")):
        load.read([a, b])
    stack = Corpus(parts=[a], tag="result")
    assert stack.read("flows", ["flow_id"])["result"].to_list() == [str(a)] * 3
    assert stack.read("flows", ["flow_id"], flow_id=2).rows() == [(2, str(a))]
    assert stack.scan("series").collect().schema["result"] == pl.String


def test_a_plain_results_directory_as_a_corpus_keeps_its_name(tmp_path):
    """``Corpus(path)`` of a directory with no ``input=`` partitions: one part, tagged with the
    directory's own name (it used to lose its first six letters to the ``input=`` prefix)."""
    a, corpus = _dirs(tmp_path)
    assert list(Corpus(a).parts) == ["a"]
    assert Corpus(a).read("flows", ["flow_id"])["input"].to_list() == ["a", "a"]
    assert list(Corpus(corpus).parts) == ["x", "y"]
    assert list(Corpus(f"{corpus}/").parts) == ["x", "y"]


def test_a_table_no_part_holds_is_refused_with_the_file(tmp_path):
    """Reading a table no part has: the reader's own refusal naming the first part's file, not
    polars' 'cannot concat empty list'."""
    a, corpus = _dirs(tmp_path)
    missing = corpus / "input=x" / "rtt.parquet"
    for stack in (Corpus(corpus), Corpus(parts=[corpus, a], tag="result")):
        with pytest.raises(InputError, match="^" + re.escape(f"{missing}: missing table 'rtt'")):
            stack.read("rtt")
        with pytest.raises(InputError, match="^" + re.escape(f"{missing}: missing table 'rtt'")):
            stack.scan("rtt")
