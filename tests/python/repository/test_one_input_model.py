"""One input model (issue 37): ``hsrtcp.inputs.Input`` is the only ``class Input`` of the
package. There were two, the corpus run's (scale) and the context's (context.enrich), with
different field names for the same things (``source`` a field in one, a property in the
other; ``input_id`` an int in one, ``id`` a string in the other)."""

from __future__ import annotations

import ast
from pathlib import Path

from hsrtcp.context.enrich import describe_inputs
from hsrtcp.inputs import Input
from hsrtcp.scale.discover import discover

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
DATA = ROOT / "tests" / "data"


def input_classes(package: Path) -> list[str]:
    """``file:line`` of every class named Input under ``package``."""
    return [f"{p.relative_to(package).as_posix()}:{n.lineno}"
            for p in sorted(package.rglob("*.py"))
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p)))
            if isinstance(n, ast.ClassDef) and n.name == "Input"]


def test_there_is_one_input_class():
    assert [c.rpartition(":")[0] for c in input_classes(PACKAGE)] == ["inputs.py"]


def test_a_second_input_class_is_found(tmp_path):
    (tmp_path / "a.py").write_text("class Input:\n    pass\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c.py").write_text("def f():\n    class Input:\n        pass\n")
    assert input_classes(tmp_path) == ["a.py:1", "b/c.py:2"]


def test_the_corpus_and_the_context_make_the_same_inputs(tmp_path):
    """A capture discovered in a corpus and the same capture described for its context are
    one kind of object, named alike."""
    cap = DATA / "multi_concurrent.server.pcap"
    (tmp_path / "a.pcap").write_bytes(cap.read_bytes())
    [corpus] = discover(str(tmp_path))
    [ctx] = describe_inputs([str(tmp_path / "a.pcap")])
    assert type(corpus) is type(ctx) is Input
    assert (corpus.kind, corpus.files, corpus.source) == (ctx.kind, ctx.files, ctx.source) \
        == ("capture", [str(tmp_path / "a.pcap")], str(tmp_path / "a.pcap"))
    assert (ctx.number, ctx.captures, ctx.labels) == (0, {str(tmp_path / "a.pcap"): None},
                                                      {"capture": str(tmp_path / "a.pcap")})
    [c2, pair] = describe_inputs([str(cap)], [str(tmp_path / "a.pcap")], [str(cap)])
    assert (c2.number, pair.number, pair.kind, pair.source) == (
        0, 1, "pair", f"{tmp_path / 'a.pcap'} + {cap}")
