"""No function of the core's flow/ and matcher/ over LIMIT lines without a written reason (issue 37).

A function's length is counted from the line of its ``fn`` to the line of its closing brace
(signature, doc-less body, blank lines and comments inside included: what a reader has to
hold). Functions nested in others count on their own too. The Rust sources are read with a
small scanner that skips comments, strings and character literals, so a brace inside them
does not count.

ALLOWED lists the functions that may stay longer, each with why; it may only shrink: an
entry that is no longer over the limit (or gone) fails too, so that it is removed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "crates" / "hsrtcp-core" / "src"
DIRS = ("flow", "matcher")
LIMIT = 80

# "file relative to src/::function name" -> why it stays longer than LIMIT.
ALLOWED: dict[str, str] = {}

_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def _code_only(src: str) -> str:
    """``src`` with comments, string and character literals blanked (newlines kept, so line
    numbers stay), lifetimes left alone."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            # Rust block comments nest.
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(src, i)) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + m.group(1)
            j = src.find(end, m.end())
            j = n if j < 0 else j + len(end)
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            if src.startswith("\\", i + 1):
                j = src.find("'", i + 3)
                blank(i, j + 1)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1  # a lifetime or loop label
        else:
            i += 1
    return "".join(out)


def function_lengths(src: str) -> list[tuple[str, int, int]]:
    """``(name, first line, length in lines)`` of every function with a body in ``src``."""
    code = _code_only(src)
    line_at = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_at[k] = line
        if ch == "\n":
            line += 1
    line_at[len(code)] = line
    found = []
    for m in _FN.finditer(code):
        # The body starts at the first '{' outside the signature's brackets; a ';' first
        # is a declaration without a body (trait items, extern blocks).
        depth, j = 0, m.end()
        while j < len(code):
            ch = code[j]
            if ch in "([<" and not (ch == "<" and code[j - 1] == "-"):
                depth += 1
            elif ch in ")]>" and not (ch == ">" and code[j - 1] in "-="):
                depth -= 1
            elif depth <= 0 and ch in "{;":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        braces, k = 0, j
        while k < len(code):
            if code[k] == "{":
                braces += 1
            elif code[k] == "}":
                braces -= 1
                if braces == 0:
                    break
            k += 1
        first = line_at[m.start()]
        found.append((m.group(1), first, line_at[k] - first + 1))
    return found


def long_functions(limit: int = LIMIT) -> dict[str, int]:
    """``{"flow/x.rs::name": lines}`` of the functions of flow/ and matcher/ over ``limit``
    (a name defined twice in one file keeps its longest)."""
    out: dict[str, int] = {}
    for d in DIRS:
        for path in sorted((CORE / d).rglob("*.rs")):
            rel = path.relative_to(CORE).as_posix()
            for name, _, length in function_lengths(path.read_text(encoding="utf-8")):
                key = f"{rel}::{name}"
                if length > limit and length > out.get(key, 0):
                    out[key] = length
    return out


SAMPLE = '''
/// fn not_a_function() { in a doc comment }
fn short<'a>(x: &'a str) -> impl Fn(u8) -> u8 {
    let _ = ('{', '\\'', "}}}", r#"{"#, b'{');
    /* { nested /* { */ } */
    |b| b
}

trait T {
    fn declared(&self) -> Result<Vec<u8>, ()>;
}

fn long() -> Option<u8> where u8: Copy {
    if true {
        return None;
    }
    Some(1)
}
'''


def test_the_scanner_counts_lines_from_fn_to_the_closing_brace():
    got = function_lengths(SAMPLE)
    assert got == [("short", 3, 5), ("long", 13, 6)], got


def test_the_scanner_fails_on_a_function_over_the_limit():
    body = "\n".join(f"    let _x{i} = {i};" for i in range(LIMIT - 1))
    assert function_lengths(f"fn f() {{\n{body}\n}}\n") == [("f", 1, LIMIT + 1)]


def test_the_directories_hold_rust_sources():
    for d in DIRS:
        assert any((CORE / d).rglob("*.rs")), d


def test_no_long_function_in_flow_or_matcher_without_a_reason():
    long = long_functions()
    unexplained = {k: v for k, v in long.items() if k not in ALLOWED}
    assert not unexplained, f"over {LIMIT} lines, split them or say why in ALLOWED: {unexplained}"


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_every_allowed_long_function_is_still_long(key):
    assert key in long_functions(), f"{key} is no longer over {LIMIT} lines: remove it from ALLOWED"


if __name__ == "__main__":  # the list, longest first
    for k, v in sorted(long_functions(0).items(), key=lambda kv: -kv[1]):
        if v > 40:
            print(f"{v:5d}  {k}")
