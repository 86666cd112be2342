"""One order of the flow classes (issue 37): ``hsrtcp.schemas.CLASS_ORDER`` (and the flow
classes themselves, ``FLOW_CLASSES``) are written once; the study, the report, the plots and
the figures import them. A second copy of the order in the package is what let them drift:
this finds any tuple or list literal naming seven or more of the classes (a short selection,
such as seed 000's three classes, is a choice of its own and stays)."""

from __future__ import annotations

import ast
from pathlib import Path

from hsrtcp.schemas import CLASS_ORDER, FLOW_CLASSES, class_rank

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
HOME = PACKAGE / "schemas.py"


def class_lists(files) -> list[str]:
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in CLASS_ORDER]
                if len(set(names)) >= 7:
                    found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_class_order_is_written_once():
    files = [p for p in sorted(PACKAGE.rglob("*.py")) if p != HOME]
    assert class_lists(files) == []
    assert class_lists([HOME]) != []  # (the one copy is found: the search works)


def test_the_order_holds_the_flow_classes_with_the_seed_group_before_its_parts():
    assert [c for c in CLASS_ORDER if c in FLOW_CLASSES] == list(FLOW_CLASSES)
    assert class_rank("high_1_16") < class_rank("high_1_8") < class_rank("high_9_16") < class_rank("high_17+")
    assert class_rank("all") == len(CLASS_ORDER) - 1 < class_rank("a label") == class_rank(None)


def seed_class_maps(files) -> list[str]:
    """Dict literals that map "high_1_16" to its parts: the seed's class grouping."""
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "high_1_16" and isinstance(v, (ast.Tuple, ast.List))
                    and {getattr(e, "value", None) for e in v.elts} == {"high_1_8", "high_9_16"}
                    for k, v in zip(node.keys, node.values)):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_seed_classes_are_written_once():
    """``SEED_CLASSES`` (seed 000's classes and the flow classes each gathers) lives in
    schemas.py; docsgen and models.on_data each had their own copy."""
    from hsrtcp.schemas import SEED_CLASSES

    files = [p for p in sorted(PACKAGE.rglob("*.py")) if p != HOME]
    assert seed_class_maps(files) == []
    assert seed_class_maps([HOME]) != []
    assert list(SEED_CLASSES) == sorted(SEED_CLASSES, key=class_rank)
    assert {c for parts in SEED_CLASSES.values() for c in parts} <= set(FLOW_CLASSES)
