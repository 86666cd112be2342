"""Handoffs and coverage fed block by block (hsrtcp.context.stream, issue 32) equal the
whole-frame tables bit for bit, with blocks as small as 7 rows (every block end falls
inside a cell, a piece, a gap or a ping-pong), on the committed radio fixtures (lab
radio.csv, a G-NetTrack log, GSMTAP captures) and hand-made multi-carrier logs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.context.stream import CoverageScan, HandoffScan, Unordered

from .logs import lab_log, one_hz

DATA = Path(__file__).resolve().parents[2] / "data"

FIXTURES = [
    (DATA / "lab_truth/run/radio.csv", "lab"),
    (DATA / "lab_truth/run/scenario/radio.csv", "lab"),
    (DATA / "radio/irish-5g/B_2020.02.14_09.38.22.lines760-1100.csv", "gnettrack"),
    (DATA / "radio/hsr_trip.gsmtap.pcap", "gsmtap"),
    (DATA / "radio/sa_trip.gsmtap.pcap", "gsmtap"),
]


def _blocks(df: pl.DataFrame, n: int):
    return [df.slice(i, n) for i in range(0, len(df), n)]


def _streamed(df: pl.DataFrame, n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    ho, cov = HandoffScan(), CoverageScan()
    for b in _blocks(df, n):
        ho.add(b)
        cov.add(b)
    return ho.result(), cov.result()


def _check(df: pl.DataFrame, sizes=(1, 7, 64, 10**9)) -> None:
    whole_h, whole_c = handoffs(df), coverage(df)
    for n in sizes:
        h, c = _streamed(df, n)
        assert_frame_equal(h, whole_h, check_exact=True)
        assert_frame_equal(c, whole_c, check_exact=True)


@pytest.mark.parametrize("path,fmt", FIXTURES, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_fixture_blocks_equal_whole(path, fmt):
    df = read_radio(path, fmt).frame.with_columns(pl.lit(None, pl.String).alias("run_id"))
    assert len(df) > 7
    _check(df)


def _two_carriers(tmp_path: Path) -> pl.DataFrame:
    # M: a ping-pong A -> B -> A and a 12-s hole; U: on EDGE a while; rows interleaved by time
    m = one_hz([(0.0, "LTE", 1, 10), (20.5, "LTE", 1, 11), (23.0, "LTE", 1, 10), (50.0, "LTE", 2, 20)],
               90, "M", skip=(60, 72))
    u = one_hz([(0.0, "LTE", 5, 50), (30.0, "EDGE", 6, 60), (45.0, "LTE", 5, 51)], 88, "U")
    rows = sorted(m + u, key=lambda r: (r[0], r[1]))
    return read_radio(lab_log(tmp_path / "r.csv", rows), "lab").frame


def test_multi_carrier_runs_blocks_equal_whole(tmp_path):
    one = _two_carriers(tmp_path)
    h = handoffs(one.with_columns(pl.lit(None, pl.String).alias("run_id")))
    assert h["ping_pong"].sum() == 1 and len(h) == 5  # the log holds what the test is about
    cov = coverage(one.with_columns(pl.lit(None, pl.String).alias("run_id")))
    total = dict(cov.select("carrier", "total_s").iter_rows())
    assert total["M"] == 78.0 and total["*"] == 90.0  # M's 12-s hole is not its time; U covers it
    # two runs one after the other (a second bundle's log), and one run alone
    two = pl.concat([one.with_columns(pl.lit("r1").alias("run_id")),
                     one.with_columns(pl.lit("r2").alias("run_id"), pl.col("ts") + 1000)])
    _check(two, sizes=(1, 2, 7, 13, 10**9))


def test_handoffs_finished_per_block_and_joined_equal_whole(tmp_path, monkeypatch):
    # many handoffs on two carriers, ping-pongs among them: each block's handoffs are finished
    # against the carried last one and the pieces joined every 2 (the join of 64 at scale)
    monkeypatch.setattr(HandoffScan, "_JOIN", 2)
    m = one_hz([(0.0, "LTE", 1, 10)] + [(5.0 * k + 0.5, "LTE", 1, 10 + k % 3 + (k % 5 == 0)) for k in range(1, 40)],
               210, "M")
    u = one_hz([(0.0, "LTE", 5, 50)] + [(7.0 * k + 0.5, "EDGE" if k % 4 == 0 else "LTE", 5, 50 + k % 2)
                                        for k in range(1, 28)], 205, "U")
    df = read_radio(lab_log(tmp_path / "r.csv", sorted(m + u, key=lambda r: (r[0], r[1]))), "lab").frame
    df = df.with_columns(pl.lit(None, pl.String).alias("run_id"))
    whole = handoffs(df)
    assert len(whole) > 40 and whole["ping_pong"].sum() > 5  # the log holds what the test is about
    _check(df, sizes=(1, 3, 7, 10**9))


def test_coverage_of_a_log_not_in_time_order_is_refused(tmp_path):
    one = _two_carriers(tmp_path).with_columns(pl.lit(None, pl.String).alias("run_id"))
    by_carrier = one.sort("carrier", maintain_order=True)  # all of M, then all of U
    assert_frame_equal(_streamed(by_carrier, 10**9)[1], coverage(by_carrier), check_exact=True)
    with pytest.raises(Unordered):
        _streamed(by_carrier, 7)


# -- the analysis' whole path (compute_context) with 7-row blocks against the whole frame --

import hsrtcp  # noqa: E402
from hsrtcp.context import csvlog, stream  # noqa: E402
from hsrtcp.context.enrich import compute_context, describe_inputs  # noqa: E402

PHONE = Path(hsrtcp.__file__).resolve().parent / "examples" / "phone.pcap"
T0 = 1_700_000_000.0


@pytest.fixture(scope="module")
def example_flows():
    return hsrtcp.analyze([PHONE], vantage="client").flows


def _flows_dir(d: Path, flows: pl.DataFrame) -> Path:
    """The example's flows table, its row repeated 80 times with new ids and times spread over
    the logs below: flows of 0 s, 0.3 s, 3 s and 40 s, before, inside and after the log."""
    d.mkdir()
    row = flows.head(1)
    rows = []
    for k in range(80):
        a = T0 - 20 + k * 1.7 + (0.25 if k % 3 else 0.0)
        rows.append(row.with_columns(pl.lit(k + 1, row["flow_id"].dtype).alias("flow_id"),
                                     pl.lit(a).alias("first_ts"),
                                     pl.lit(a + (0.0, 0.3, 3.0, 40.0)[k % 4]).alias("last_ts")))
    pl.concat(rows).write_parquet(d / "flows.parquet")
    return d


def _log_rows():
    m = one_hz([(0.0, "LTE", 1, 10), (20.5, "LTE", 1, 11), (23.0, "LTE", 1, 10), (50.0, "LTE", 2, 20),
                (80.0, "EDGE", 3, 30), (84.0, "LTE", 2, 21)], 120, "M", skip=(60, 72),
               speed=lambda t: 3.0 if t < 10 else (100.0 if t < 30 else 300.0))
    u = one_hz([(0.0, "LTE", 5, 50), (30.0, "EDGE", 6, 60), (45.0, "LTE", 5, 51), (90.5, "LTE", 5, 52)],
               118, "U", speed=lambda t: 3.0 if t < 10 else (100.0 if t < 30 else 300.0))
    return [(T0 + r[0], *r[1:]) for r in m + u]


def _tables(out_dir: Path, radio: Path, streamed: bool, **kw):
    inputs = describe_inputs([PHONE])
    res = compute_context(out_dir, inputs, radio=str(radio), radio_out=str(out_dir / "radio.parquet")
                          if streamed else None, handoffs_out=str(out_dir / "handoffs.parquet"), **kw)
    tables = dict(res.tables)
    for name, path in res.files.items():  # (written block by block: radio, and handoffs from its spill files)
        tables[name] = pl.read_parquet(path)
    return tables, res.messages


def _tiny_blocks(monkeypatch):
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 300)
    real = stream._blocks

    def seven(*a):
        for b in real(*a):
            yield from (b.slice(i, 7) for i in range(0, len(b), 7))
    monkeypatch.setattr(stream, "_blocks", seven)


@pytest.mark.parametrize("order", ["time", "carrier", "gappy"])
def test_compute_context_blocks_equal_whole(tmp_path, monkeypatch, example_flows, order):
    """Lab-format log of two carriers (handoffs, a ping-pong, a 12-s hole, EDGE, speeds in
    three bands), in time order, carrier by carrier (then read back whole), and with a 6-s
    hole every 7 s (more than the 20 gap warnings named)."""
    d = _flows_dir(tmp_path / "out", example_flows)
    rows = sorted(_log_rows(), key=(lambda r: (r[1], r[0])) if order == "carrier" else (lambda r: (r[0], r[1])))
    if order == "gappy":
        rows = [r for r in rows if int(r[0] - T0) % 7 not in (1, 2, 3, 4, 5) or int(r[0] - T0) < 30]
    log = lab_log(tmp_path / "radio.csv", rows)
    whole, msg_w = _tables(d, log, False, carrier="U")
    _tiny_blocks(monkeypatch)
    blocks, msg_b = _tables(d, log, True, carrier="U")
    assert msg_b == msg_w
    for name, t in whole.items():
        assert_frame_equal(blocks[name], t, check_exact=True)
    # no temporary file left (the rows' parts, the handoffs' spill files)
    left = sorted(p.name for p in d.iterdir())
    assert left == ["flows.parquet", *(["handoffs.parquet"] if order != "carrier" else []), "radio.parquet"]
    if order == "gappy":
        assert msg_w[-1].endswith("more gaps > 5 s")
        return
    ctx = whole["context"]  # the log holds what the test is about
    assert {"static", "low", "high"} <= set(ctx["speed_class"]) and ctx["handoffs"].max() >= 2
    assert ctx["class_reason"].str.contains("cell log gap").any()
    assert ctx["class_reason"].eq_missing("no overlap").any()
    assert ctx["rat_change"].any()


def test_compute_context_generic_csv_and_offset_blocks_equal_whole(tmp_path, monkeypatch, example_flows):
    d = _flows_dir(tmp_path / "out", example_flows)
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    for r in sorted(_log_rows(), key=lambda r: (r[0], r[1])):
        lte = r[2] == "LTE"
        lines.append(f"{round((r[0] - 7.25) * 1000)},{r[1]},{r[2]},{r[3]},{r[4]},{r[5] / 3.6:.3f},"
                     f"{'-84' if lte else ''},{'-10' if lte else ''}")
    log = tmp_path / "trip.csv"
    log.write_text("\n".join(lines) + "\n")
    kw = dict(radio_map="time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:m/s,rsrp=RSRP,rsrq=RSRQ",
              radio_offset=7.25, carrier="M")
    whole, msg_w = _tables(d, log, False, **kw)
    _tiny_blocks(monkeypatch)
    blocks, msg_b = _tables(d, log, True, **kw)
    assert msg_b == msg_w
    for name, t in whole.items():
        assert_frame_equal(blocks[name], t, check_exact=True)
    assert whole["context"]["flow_class"].is_in(["high_1_8", "high_0"]).any()


@pytest.mark.parametrize("bad", ["backwards", "range", "both"])
def test_rejected_log_same_message_and_tables(tmp_path, monkeypatch, example_flows, bad):
    """The first error of the whole-frame check (a time going backwards before a value out of
    range, whichever comes first in the file) and the same tables (no radio rows)."""
    d = _flows_dir(tmp_path / "out", example_flows)
    rows = sorted(_log_rows(), key=lambda r: (r[0], r[1]))
    if bad in ("range", "both"):
        rows[5] = (*rows[5][:5], 300.0, -20.0)  # RSRP -20 dBm: out of range, early in the file
    if bad in ("backwards", "both"):
        rows[150] = (rows[150][0] - 30, *rows[150][1:])
    log = lab_log(tmp_path / "radio.csv", rows)
    whole, msg_w = _tables(d, log, False, carrier="U")
    _tiny_blocks(monkeypatch)
    blocks, msg_b = _tables(d, log, True, carrier="U")
    assert msg_b == msg_w and msg_w and ("goes backwards" in msg_w[0]) == (bad != "range")
    for name, t in whole.items():
        assert_frame_equal(blocks[name], t, check_exact=True)
    assert not list((tmp_path / "out").glob("radio.parquet.part*"))


GNETTRACK = DATA / "radio/irish-5g/B_2020.02.14_09.38.22.lines760-1100.csv"


def test_compute_context_gnettrack_blocks_equal_whole(tmp_path, monkeypatch, example_flows):
    """The committed G-NetTrack log (rows sharing a second, 5G NSA, cell changes) read block
    by block with blocks of a row or two: a second's rows wait for the next block."""
    from datetime import datetime, timezone

    from hsrtcp.context.gnettrack import iter_gnettrack, read_gnettrack

    first = datetime.strptime("2020.02.14_09.52.07", "%Y.%m.%d_%H.%M.%S").replace(tzinfo=timezone.utc)
    d = _flows_dir(tmp_path / "out", example_flows)
    kw = dict(radio_format="gnettrack", radio_offset=T0 - 30 - first.timestamp())
    whole, msg_w = _tables(d, GNETTRACK, False, **kw)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 300)
    assert_frame_equal(pl.concat(list(iter_gnettrack(GNETTRACK))), read_gnettrack(GNETTRACK), check_exact=True)
    calls = []
    monkeypatch.setattr(stream, "_blocks", lambda *a, real=stream._blocks: calls.append(a) or real(*a))
    blocks, msg_b = _tables(d, GNETTRACK, True, **kw)
    assert calls and msg_b == msg_w
    for name, t in whole.items():
        assert_frame_equal(blocks[name], t, check_exact=True)
    ctx = whole["context"]  # the log holds what the test is about
    assert ctx["handoffs"].max() >= 1 and (ctx["flow_class"] != "unknown").any()
    assert (whole["radio"]["ts"] % 1 != 0).any()  # seconds with several rows


def test_gnettrack_second_back_after_later_ones_is_read_whole(tmp_path, monkeypatch, example_flows):
    """Operator A's rows at :31 and :32, then B's at :31 and :33: second 31 comes back. Read
    whole, its two rows are spread over it (31.0, 31.5); block by block the scan gives up
    (WholeOnly) and the log is read whole: the same tables."""
    from datetime import datetime, timezone

    from hsrtcp.context.gnettrack import iter_gnettrack
    from hsrtcp.context.stream import WholeOnly

    head = "Timestamp,Longitude,Latitude,Speed,Operatorname,CellID,NetworkMode,RSRP,RSRQ"
    secs = [(30, "A", 7), (31, "A", 7), (32, "A", 8), (31, "B", 5), (33, "B", 5), (34, "B", 6)]
    secs += [(35 + i, op, 9 + i // 10) for i in range(60) for op in "AB"]
    rows = [f"2019.12.14_10.16.{s:02d},-8.4,51.9,50,{op},{cid},LTE,-90,-10" if s < 60 else
            f"2019.12.14_10.17.{s - 60:02d},-8.4,51.9,50,{op},{cid},LTE,-90,-10" for s, op, cid in secs]
    log = tmp_path / "g.csv"
    log.write_text("\n".join([head, *rows]) + "\n")
    first = datetime(2019, 12, 14, 10, 16, 30, tzinfo=timezone.utc).timestamp()
    d = _flows_dir(tmp_path / "out", example_flows)
    kw = dict(radio_format="gnettrack", radio_offset=T0 - 20 - first, carrier="A")
    whole, msg_w = _tables(d, log, False, **kw)
    b31 = whole["radio"].filter((pl.col("carrier") == "B") & (pl.col("line") == 5))["ts"][0]
    assert b31 - (T0 - 20) == 1.5  # (the log holds what the test is about)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 120)
    with pytest.raises(WholeOnly):
        list(iter_gnettrack(log))
    blocks, msg_b = _tables(d, log, True, **kw)
    assert msg_b == msg_w
    for name, t in whole.items():
        assert_frame_equal(blocks[name], t, check_exact=True)
    assert not list((tmp_path / "out").glob("radio.parquet.part*"))
