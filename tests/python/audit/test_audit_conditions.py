"""The audit's path conditions (hsrtcp.audit.conditions): base RTT, standing queue and the
dropped-outage share measured from a run's own truth, and the confusion rows per band.

Witnesses: planted capture pairs whose every delay is constructed (audit_planted), and the
schedule of the committed Rattan run tests/data/lab_truth/run counted by hand.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import polars as pl

from hsrtcp.audit import audit
from hsrtcp.audit.conditions import measure
from hsrtcp.audit.docs import render
from hsrtcp.testing import truth as _truth

HERE = Path(__file__).resolve().parent
RUN = HERE.parents[1] / "data" / "lab_truth" / "run"
sys.path.insert(0, str(HERE))
from audit_planted import five_timeouts  # noqa: E402
from test_audit import PLANTED  # noqa: E402


def _rows(a, breakdown: str) -> dict:
    c = a.confusion().filter(pl.col("breakdown") == breakdown)
    return {(r["level"], r["detector"]): (r["tp"], r["fp"], r["fn"], r["tn"], r["out_of_reach"])
            for r in c.iter_rows(named=True)}


def test_planted_delays_give_the_hand_counted_conditions_and_rows(tmp_path):
    """Two planted pairs, one-way delay 20 ms both ways. "queued": every data segment but the
    first waits 50 ms more (SACK and timestamps on); "plain": no queue, no SACK, no
    timestamps. By hand: base RTT 20 + 20 = 40 ms in both; median data delay 70 ms in
    "queued" (all arrived segments but one) so its queue is 70 − 20 = 50 ms, 0 in "plain";
    no events.csv, so no outage count."""
    a = audit([five_timeouts(tmp_path, name="queued", queue_s=0.05),
               five_timeouts(tmp_path, name="plain", sack=False, ts=False)])
    c = {r["run"]: r for r in a.connections.iter_rows(named=True)}
    assert round(c["queued"]["truth_base_rtt_ms"], 1) == round(c["plain"]["truth_base_rtt_ms"], 1) == 40.0
    assert round(c["queued"]["truth_queue_ms"], 1) == 50.0
    assert round(c["plain"]["truth_queue_ms"], 1) == 0.0
    assert (c["queued"]["queue_band"], c["plain"]["queue_band"]) == ("30-100 ms", "<5 ms")
    assert c["queued"]["outages"] is None and c["queued"]["outage_band"] is None
    q = _rows(a, "queue_band")
    # the queue moves no fate: each band's row is the planted matrix of its pair (test_audit)
    for det, (tp, fp, fn, tn) in PLANTED.items():
        assert q[("30-100 ms", det)][:4] == (tp, fp, fn, tn)
    # without SACK and timestamps the server's methods see nothing: 3 spurious out of reach
    assert q[("<5 ms", "M12 dsack")] == (0, 0, 0, 0, 3)
    assert q[("<5 ms", "M12 two_vantage")] == (3, 0, 0, 2, 0)
    assert q[("30-100 ms", "M12 dsack")] == (2, 0, 0, 2, 1)
    # one base-RTT band holds both pairs: its rows are the sums
    r = _rows(a, "base_rtt_band")
    assert {lvl for lvl, _ in r} == {"30-100 ms"}
    assert r[("30-100 ms", "M12 two_vantage")] == (6, 0, 0, 4, 0)


def test_outage_share_counts_the_scheduled_outages_in_the_data_span(tmp_path):
    """tests/data/lab_truth/run/events.csv: outages at 2.500-2.898 s (held), 5.000-5.344 s
    (dropped) and 7.500-7.761 s (held), all inside the download: 1 dropped of 3."""
    t = _truth.compute(RUN / "capture" / "server.pcap", RUN / "capture" / "phone_p1.pcap")
    m = measure(t, 0.0, RUN)
    assert (m["outages"], m["dropped_outages"], m["outage_band"]) == (3, 1, "some dropped")
    assert m["dropped_outage_share"] == round(1 / 3, 4)
    # planted: the two held outages made dropped -> 3 of 3; the dropped one moved past the data -> 0 of 2
    b = tmp_path / "run"
    shutil.copytree(RUN, b)
    ev = (b / "events.csv").read_text()
    (b / "events.csv").write_text(ev.replace(",held,", ",dropped,"))
    assert measure(t, 0.0, b)["outage_band"] == "most dropped"
    (b / "events.csv").write_text(ev.replace("outage,5.000,5.344,1,M,1,,,,,dropped",
                                             "outage,500.000,500.344,1,M,1,,,,,dropped"))
    m = measure(t, 0.0, b)
    assert (m["outages"], m["dropped_outages"], m["outage_band"]) == (2, 0, "none dropped")


def test_pooled_region_rows_are_the_summaries_rows():
    """docs/accuracy.md's pooled condition tables: the fixtures are the only runs under 10 ms of
    base RTT, so that row equals their 'all' row; at 10-30 ms the v2 runs (all of them) and v5's
    and v6's runs of that band meet, so that row is the sum of the three."""
    def m10(region, band=None):
        head = "| M10 timeout | server |" + (f" {band} |" if band else "")
        row = next(x for x in render(region).splitlines() if x.startswith(head))
        return [int(x) for x in row.split(" | ")[(3 if band else 2):(8 if band else 7)]]

    assert m10("pooled.base_rtt", "<10 ms") == m10("fixtures.all")
    assert m10("pooled.base_rtt", "10-30 ms") == [a + b + c for a, b, c in zip(
        m10("v2.all"), m10("v5.base_rtt", "10-30 ms"), m10("v6.base_rtt", "10-30 ms"))]


def test_rtt_above_min_stands_in_for_the_planted_queue(tmp_path):
    """connections.csv carries the analyzer's rtt_median - rtt_min per row, the stand-in by
    which caveats.csv bands a flow: on the planted pairs (above) the server's RTT samples are
    40 ms for the first segment and 40 + 50 ms for the others, so 50 ms above the minimum in
    "queued" and 0 in "plain", the truth's queue in both; the phone row has no RTT sample."""
    a = audit([five_timeouts(tmp_path, name="queued", queue_s=0.05),
               five_timeouts(tmp_path, name="plain", sack=False, ts=False)])
    c = {r["run"]: r for r in a.connections.iter_rows(named=True)}
    for run, queue in (("queued", 50.0), ("plain", 0.0)):
        assert round(c[run]["rtt_above_min_ms_server"], 1) == round(c[run]["truth_queue_ms"], 1) == queue
        assert round(c[run]["rtt_above_min_ms_matched"], 1) == queue
        assert c[run]["rtt_above_min_ms_phone"] is None


def test_standin_table_marks_a_band_the_truth_does_not_share():
    """docs/accuracy.md's stand-in table, from planted connection rows: the band of each row's
    rtt_median - rtt_min beside the truth's, a differing one in bold, and the count per row."""
    from hsrtcp.audit.docs import standin

    conn = pl.DataFrame({"run": ["a", "b", "c"], "connection": ["x", "x", "x"],
                         "truth_queue_ms": [150.0, 40.0, None],
                         "rtt_above_min_ms_server": [160.0, 120.0, 3.0],
                         "rtt_above_min_ms_phone": [99.0, None, 3.0],
                         "rtt_above_min_ms_matched": [155.0, 35.0, 3.0]})
    lines = standin(conn).splitlines()
    assert lines[2] == "| a | 150.0 (>=100 ms) | 160.0 (>=100 ms) | 99.0 (**30-100 ms**) | 155.0 (>=100 ms) |"
    assert lines[3] == "| b | 40.0 (30-100 ms) | 120.0 (**>=100 ms**) | – | 35.0 (30-100 ms) |"
    assert lines[4] == "| c | – (n/a) | 3.0 | 3.0 | 3.0 |"
    assert lines[5] == "| in the truth's band | | 1 of 2 | 0 of 1 | 2 of 2 |"
