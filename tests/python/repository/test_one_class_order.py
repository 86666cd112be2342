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
