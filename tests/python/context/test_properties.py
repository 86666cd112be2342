"""Property tests (hypothesis) for radio logs.

- A random valid log (one to three carriers, random cell sequences at random increasing
  times, random RAT switches) parses, and its handoffs are exactly the cell changes the
  generator made, with intra/inter-system from the RAT.
- A random corruption of one line of a valid log gives a :class:`RadioLogError` that names
  the file and that line, never another exception; random junk inserted anywhere gives
  either a valid log or such an error.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.context.schema import RadioLogError

from .logs import HEADER, lab_log

CELLS = [("LTE", 1, 100), ("LTE", 1, 101), ("LTE", 2, 102), ("EDGE", 9, 900), ("EDGE", 9, 901)]


@st.composite
def radio_logs(draw):
    """(rows, expected handoffs): rows in (ts, carrier) order as the lab writes them."""
    carriers = ["M", "U", "T"][:draw(st.integers(1, 3))]
    rows, expected = [], []
    for c in carriers:
        n = draw(st.integers(1, 30))
        steps = draw(st.lists(st.integers(1, 4000), min_size=n, max_size=n))  # ms
        cells = draw(st.lists(st.sampled_from(CELLS), min_size=n, max_size=n))
        t = 0
        for i, (dt, cell) in enumerate(zip(steps, cells)):
            t += dt
            rows.append((t / 1000.0, c, *cell))
            if i and cell != cells[i - 1]:
                old = cells[i - 1]
                expected.append((c, t / 1000.0, old[2], cell[2], "inter" if old[0] != cell[0] else "intra"))
    order = {c: i for i, c in enumerate(carriers)}
    rows.sort(key=lambda r: (r[0], order[r[1]]))
    return rows, sorted(expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(radio_logs())
def test_random_valid_logs_give_exactly_their_cell_changes(log):
    rows, expected = log
    with tempfile.TemporaryDirectory() as d:
        lg = read_radio(lab_log(Path(d) / "radio.csv", rows))
    assert len(lg.frame) == len(rows)
    h = handoffs(lg.frame)
    got = sorted(h.select("carrier", "ts", "old_cid", "new_cid", "system").rows())
    assert got == expected
    # M23: each interval is the time since the carrier's previous handoff
    for (c,), g in h.group_by(["carrier"]):
        ts = g.sort("ts")["ts"].to_list()
        assert g.sort("ts")["interval_s"].to_list() == [None] + [b - a for a, b in zip(ts, ts[1:])]


#: corruptions that set one field of the line: kind -> (field index, value)
_FIELD = {"text_time": (0, "twelve"), "text_speed": (3, "fast"), "nan": (8, "nan"), "range": (8, "5"),
          "lat": (1, "123.0"), "float_cid": (7, "1.5")}


def _corrupt(kind: str, lines: list[str], k: int) -> tuple[list[str], int]:
    """Corrupt data line ``k`` (index into ``lines``, 1 = first data line); returns the new
    lines and the 1-based file line the error must name."""
    out = list(lines)
    f = out[k].split(",")
    if kind in _FIELD:
        field, value = _FIELD[kind]
        f[field] = value
    elif kind == "drop_field":
        f = f[:-1]
    elif kind == "extra_field":
        f = f + ["1"]
    elif kind == "empty_time":
        f[0] = ""
    elif kind == "duplicate":
        out.insert(k + 1, out[k])
        return out, k + 2
    elif kind == "backwards":
        prev = float(out[k - 1].split(",")[0]) if k > 1 else 1.0
        f[0] = f"{prev - 0.5:.3f}"
        if k == 1:  # no previous row: make the next one go backwards instead
            nxt = out[k + 1].split(",")
            nxt[0] = f"{float(f[0]) - 0.25:.3f}"
            out[k + 1] = ",".join(nxt)
            out[k] = ",".join(f)
            return out, k + 2
    elif kind == "binary":
        out[k] = "\udcff\udcfe" + out[k]  # bytes ff fe: not UTF-8
        return out, k + 1
    out[k] = ",".join(f)
    return out, k + 1


KINDS = ["text_time", "text_speed", "nan", "range", "lat", "float_cid", "drop_field", "extra_field",
         "empty_time", "duplicate", "backwards", "binary"]


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 25), st.sampled_from(KINDS), st.data())
def test_random_corruption_names_file_and_line(n, kind, data):
    rows = [(float(i), "M", "LTE", 1, 100 + i // 5) for i in range(n)]
    k = data.draw(st.integers(1, n - 1))
    with tempfile.TemporaryDirectory() as d:
        p = lab_log(Path(d) / "radio.csv", rows)
        lines, line = _corrupt(kind, p.read_text().splitlines(), k)
        p.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n")
        try:
            read_radio(p)
        except RadioLogError as exc:
            assert str(exc).startswith(f"{p}:{line}: "), (kind, str(exc))
        else:
            raise AssertionError(f"{kind} at line {line} was accepted")


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10), st.text(min_size=1, max_size=40), st.data())
def test_random_junk_is_a_log_or_a_clear_error(n, junk, data):
    rows = [(float(i), "M", "LTE", 1, 100) for i in range(n)]
    k = data.draw(st.integers(0, n + 1))
    with tempfile.TemporaryDirectory() as d:
        p = lab_log(Path(d) / "radio.csv", rows)
        lines = p.read_text().splitlines()
        lines.insert(k, junk)
        p.write_text("\n".join(lines) + "\n", errors="surrogateescape")
        for fmt in ("auto", "lab", "csv"):
            try:
                lg = read_radio(p, fmt)
            except RadioLogError as exc:
                assert str(exc).startswith(str(p)), str(exc)
            else:
                assert isinstance(lg.frame, pl.DataFrame)
