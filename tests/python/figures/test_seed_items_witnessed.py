"""Items of issue 33 made from the committed RESULTS (docs/seeds.md), each checked against a
computation that does not go through the gallery: tshark on the same captures, the bundle's
radio.csv read with the csv module, the flows table."""

from __future__ import annotations

import csv
import math
import statistics
import subprocess
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.testing import peers

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
U64 = {"flow_id": pl.UInt64}
needs_tshark = pytest.mark.skipif(not peers.have("tshark"), reason="tshark not installed")


def _csv(out: Path, item: str) -> pl.DataFrame:
    return pl.read_csv(out / f"{item}.csv", schema_overrides=U64, infer_schema_length=None)


def _tshark(pcap: Path, display: str, *fields: str) -> list[list[str]]:
    args = ["tshark", "-r", str(pcap), "-Y", display, "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def _server_port(pcap: Path) -> str:
    return _tshark(pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 0", "tcp.dstport")[0][0]


def _pure_acks(pcap: Path, port: str) -> int:
    return len(_tshark(pcap, f"tcp.dstport == {port} && tcp.len == 0 && tcp.flags.syn == 0 && "
                             f"tcp.flags.fin == 0 && tcp.flags.reset == 0", "frame.number"))


@needs_tshark
def test_ack_loss_against_timeouts_counts_the_lost_acks(committed):
    """seed001-fig-04: p_a of each pair is the share of the phone's pure ACKs that never reached
    the server's capture (tshark counts both sides); the timeout axis is the flows table's."""
    out, res = committed
    got = _csv(out, "seed001-fig-04")
    assert (out / "seed001-fig-04.pdf").stat().st_size > 1000
    assert set(got["result"]) == {str(res[n]) for n in ("lab_truth_run", "lab_static_run", "ack_blackout",
                                                        "data_blackout")}
    for name in ("ack_blackout", "data_blackout"):
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        port = _server_port(client)
        sent, arrived = _pure_acks(client, port), _pure_acks(server, port)
        row = got.filter(pl.col("result") == str(res[name])).row(0, named=True)
        assert row["p_a"] == pytest.approx((sent - arrived) / sent, abs=1e-12), name
        m = pl.read_parquet(res[name] / "flows.parquet").filter(pl.col("vantage") == "matched").row(0, named=True)
        assert row["timeout_rate"] == pytest.approx(m["timeout_sequences"] / m["data_packets_sent"]), name
    # the scenarios: ACKs blacked out (22 of 443 lost), data blacked out (no ACK lost); one timeout each
    by = {r["result"]: r for r in got.iter_rows(named=True)}
    assert by[str(res["ack_blackout"])]["p_a"] > 0 and by[str(res["ack_blackout"])]["timeout_sequences"] == 1
    assert by[str(res["data_blackout"])]["p_a"] == 0 and by[str(res["data_blackout"])]["timeout_sequences"] == 1


def _haversine_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    (la1, lo1), (la2, lo2) = [(math.radians(x), math.radians(y)) for x, y in (a, b)]
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371.0088 * math.asin(math.sqrt(h))


def test_trace_on_a_map_is_the_bundles_radio_log(committed):
    """seed003-fig-01 (and seed004-fig-02): the positions are radio.csv's rows; the length
    along them over the log's span is the scenario's 300 km/h."""
    out, _ = committed
    got = _csv(out, "seed003-fig-01")
    assert (out / "seed003-fig-01.pdf").stat().st_size > 1000
    with open(DATA / "lab_truth" / "run" / "radio.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert got["lat"].to_list() == pytest.approx([float(r["lat"]) for r in rows], abs=1e-9)
    assert got["lon"].to_list() == pytest.approx([float(r["lon"]) for r in rows], abs=1e-9)
    pts = [(float(r["lat"]), float(r["lon"])) for r in rows]
    km = sum(_haversine_km(a, b) for a, b in zip(pts, pts[1:]))
    span = float(rows[-1]["ts"]) - float(rows[0]["ts"])
    assert {float(r["speed_kmh"]) for r in rows} == {300.0}
    assert 3600 * km / span == pytest.approx(300.0, rel=0.01)
    text = (out / "seeds.md").read_text(encoding="utf-8")
    assert f"{km:.3f} km along the samples (300 km/h mean)" in text
    assert "seed004-fig-02: measurement set-up and HSR footprints (P)" in text


@needs_tshark
def test_mptcp_example_subflows_agree_with_tshark(committed):
    """seed004-fig-03: the connection with a reinjection (tests/data/mptcp/reinject) — each
    subflow's last value is tshark's highest relative sequence byte sent down on that stream."""
    out, _ = committed
    got = _csv(out, "seed004-fig-03")
    assert (out / "seed004-fig-03.pdf").stat().st_size > 1000
    pcap = DATA / "mptcp" / "reinject.client.pcap"
    top: dict[str, int] = {}
    for dst, seq, ln in _tshark(pcap, "tcp.srcport == 5201 && tcp.len > 0", "ip.dst", "tcp.seq", "tcp.len"):
        top[dst] = max(top.get(dst, 0), int(seq) + int(ln) - 1)
    assert len(top) == 2
    last = got.group_by("group").agg(pl.col("value").max())
    mine = dict(zip(last["group"].to_list(), last["value"].to_list()))
    for dst, v in top.items():
        (g,) = [k for k in mine if k.endswith(f"({dst})")]
        assert mine[g] == v, dst
    assert mine["all subflows"] == sum(top.values())
    # the sum never falls and is never below a subflow
    total = got.filter(pl.col("group") == "all subflows").sort("ts")["value"]
    assert (total.diff().drop_nulls() >= 0).all()


IRISH = DATA / "radio" / "irish-5g" / "B_2020.02.14_09.38.22.lines760-1100.csv"


def _gnettrack_shares(key: str = "NetworkMode") -> tuple[dict[str, float], float]:
    """Time per NetworkMode of the G-NetTrack excerpt, computed here from the CSV: rows
    sharing a second spread evenly over it in file order (docs/context.md), each row held
    until the next."""
    import datetime as dt
    from collections import Counter

    with open(IRISH, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    secs = [dt.datetime.strptime(r["Timestamp"], "%Y.%m.%d_%H.%M.%S").replace(tzinfo=dt.timezone.utc).timestamp()
            for r in rows]
    per_second = Counter(secs)
    seen: Counter = Counter()
    ts = []
    for s in secs:
        ts.append(s + seen[s] / per_second[s])
        seen[s] += 1
    held: Counter = Counter()
    for i in range(len(rows) - 1):
        held[rows[i][key]] += ts[i + 1] - ts[i]
    total = sum(held.values())
    return {mode: v / total for mode, v in held.items()}, total


def test_time_per_network_type_from_a_recorded_log(tmp_path):
    """seed000-table-VI from a RESULTS radio table (the Irish 5G G-NetTrack excerpt): the share
    of time per network type is the CSV's; table V names what it misses (no 3G-era log)."""
    from hsrtcp.cli import main

    res, out = tmp_path / "res", tmp_path / "g"
    # the log (2020-02-14 03:52:07 UTC on) put on the capture's clock, starting 100 s before its flow
    offset = 1795316137 - 1581673927 - 100
    assert main(["analyze", str(DATA / "small_50k.server.pcap"), "--radio", str(IRISH), "--radio-format",
                 "gnettrack", "--radio-offset", str(offset), "-o", str(res), "-q"]) == 0
    assert main(["figures", str(ROOT / "tests" / "data" / "study"), str(res), "-o", str(out), "-q"]) == 0
    got = pl.read_csv(out / "seed000-table-VI.csv")
    want, total = _gnettrack_shares()
    assert set(got["carrier"]) == {"B"}
    mine = dict(zip(got["generation"].to_list(), got["share"].to_list()))
    assert mine == pytest.approx({"4G": want["LTE"], "5G NSA": want["5G"]}, abs=1e-9)
    assert got["total_s"].to_list() == pytest.approx([total] * got.height, abs=1e-6)
    cov = (out / "coverage.md").read_text(encoding="utf-8")
    assert "no log of the 3G period (generations present: 4G, 5G NSA)" in cov
    # seed000-table-II: the train's time per speed band (G-NetTrack's Speed is km/h; seed 000's bands)
    by_speed, _ = _gnettrack_shares("Speed")
    band: dict[str, float] = {}
    for v, share in by_speed.items():
        kmh = float(v)
        name = "static" if kmh <= 5 else "0-150" if kmh < 150 else "150-280" if kmh < 280 else "280-310" if kmh <= 310 else ">310"
        band[name] = band.get(name, 0.0) + share * total
    md = (out / "seed000-table-II.md").read_text(encoding="utf-8")
    for name, secs in band.items():
        assert f"| {name} | {secs:.4g} | 1 |" in md, (name, secs)


@needs_tshark
def test_rtt_over_time_with_handoffs_is_the_lab_runs(committed):
    """seed003-fig-09 with RESULTS: the lab run's three scripted handoffs (events.csv: 2.5 s
    apart) marked on the sender's RTT samples, whose median is tshark's ack_rtt median."""
    out, res = committed
    got = _csv(out, "seed003-fig-09")
    assert set(got["result"]) == {str(res["lab_truth_run"])}
    run = DATA / "lab_truth" / "run"
    with open(run / "events.csv", newline="", encoding="utf-8") as fh:
        truth = [float(r["t_start"]) for r in csv.DictReader(fh) if r["kind"] == "handoff"]
    text = (out / "seeds.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if "RTT samples, median" in ln)
    marks = [float(x) for x in line.split("handoffs at ")[1].split(" s of")[0].split(", ")]
    assert len(marks) == len(truth) == 3
    assert [b - a for a, b in zip(marks, marks[1:])] == pytest.approx([b - a for a, b in zip(truth, truth[1:])],
                                                                     abs=1e-3)
    acks = sorted(float(r[0]) for r in _tshark(run / "capture" / "server.pcap", "tcp.analysis.ack_rtt",
                                                "tcp.analysis.ack_rtt"))
    # Karn's rule leaves out ACKs of re-sent data, which tshark keeps
    assert 0.8 * len(acks) <= got.height <= len(acks)
    assert got["rtt_s"].median() == pytest.approx(statistics.median(acks), abs=0.005)


def test_two_carriers_over_a_trip(tmp_path):
    """seed004-fig-01 from a two-carrier radio log (lab format): each sample drawn, the LTE
    coverage of each carrier and of either computed here from the rows (held until the
    carrier's next sample), the handoffs the cell changes of each carrier."""
    from hsrtcp.cli import main

    rows = []  # M: LTE cells 1 then 2 (at 4 s), EDGE from 12 s; U: EDGE, LTE from 5 s
    for t in range(21):
        rows.append((t, "M", "LTE" if t < 12 else "EDGE", 1, (1 if t < 4 else 2) if t < 12 else 900, -80 - t))
        rows.append((t, "U", "LTE" if t >= 5 else "EDGE", 2, 200 if t >= 5 else 800, -95 + t))
    log = tmp_path / "radio.csv"
    with open(log, "w", encoding="utf-8") as fh:
        fh.write("ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n")
        for t, c, rat, lac, cid, rsrp in rows:
            lte = rat == "LTE"
            fh.write(f"{t:.3f},39.8652,116.3786,300,{c},{rat},{lac},{cid},{rsrp if lte else ''},{-10 if lte else ''}\n")
    res, out = tmp_path / "res", tmp_path / "g"
    # the log's 0 s put 5 s before the capture's flow (1795316137.6 s)
    assert main(["analyze", str(DATA / "small_50k.server.pcap"), "--radio", str(log), "--radio-format", "lab",
                 "--radio-offset", str(1795316137 - 5), "-o", str(res), "-q"]) == 0
    assert main(["figures", str(ROOT / "tests" / "data" / "study"), str(res), "-o", str(out), "-q"]) == 0
    got = pl.read_csv(out / "seed004-fig-01.csv")
    assert (out / "seed004-fig-01.pdf").stat().st_size > 1000
    assert sorted(zip(got["carrier"], got["t_rel"], got["rat"])) == sorted((c, float(t), rat) for t, c, rat, *_ in rows)
    span = 20.0
    lte = {c: sum(1.0 for t, cc, rat, *_ in rows if cc == c and rat == "LTE" and t < span) for c in ("M", "U")}
    either = sum(1.0 for t in range(20) if any(cc != "" and rat == "LTE" for tt, cc, rat, *_ in rows if tt == t))
    text = (out / "seeds.md").read_text(encoding="utf-8")
    assert f"LTE coverage, carrier M: {100 * lte['M'] / span:.4g} % of {span:.1f} s" in text
    assert f"LTE coverage, carrier U: {100 * lte['U'] / span:.4g} % of {span:.1f} s" in text
    assert f"LTE coverage, either carrier: {100 * either / span:.4g} % of {span:.1f} s" in text
    # M: 1 -> 2 at 4 s, 2 -> 900 (EDGE) at 12 s; U: 800 (EDGE) -> 200 at 5 s
    assert "carrier M: 2 handoffs" in text and "carrier U: 1 handoffs" in text


def test_mptcp_example_lines_are_the_csv(committed):
    """The drawn step lines of seed004-fig-03 hold exactly the CSV's values, line by line."""
    from hsrtcp.figures import build

    out, res = committed
    g = build(ROOT / "tests" / "data" / "study", [res["mptcp"]], only=["seed004-fig-03"])
    fig = g.outcomes[0].made.figure
    data = _csv(out, "seed004-fig-03")
    labels = {ln.get_label(): ln for ln in fig.axes[0].lines}
    scale = 1e3 if "kB" in fig.axes[0].get_ylabel() else 1e6 if "MB" in fig.axes[0].get_ylabel() else 1.0
    for name in data["group"].unique():
        part = data.filter(pl.col("group") == name).sort("t_rel")
        assert list(labels[name].get_ydata() * scale) == pytest.approx(part["value"].to_list())
