"""Seed 004's instance in the lab (the ``conjunction`` flow type) and its metrics, on real
kernel MPTCP through Rattan (docs/mptcp.md).

Two runs, each a bundle as a campaign writes it:

- ``outage``: two carriers (20 Mbit/s / 10 ms and 10 Mbit/s / 30 ms, labtools), path 1 down
  from 15 s to 33 s (both directions, 1 bps), path 2 up throughout, 50 s;
- ``backup``: the same carriers without outage, 46 s; 15 s into the workload the phone's
  endpoint of path 2 is switched to ``backup`` (``ip mptcp endpoint change``: MP_PRIO), so
  the server's scheduler stops sending on that subflow while the single-path flow on path 2
  goes on — a subflow degradation in S4's sense, made on purpose.

Also: the kernel's MPTcpExt counters against the captures, ``--baseline`` pairing, the same
metrics from a results directory and in the HTML report, a cut capture, and a campaign whose
``[mptcp]`` table makes path 2's endpoint a backup one (12 s).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
import time

import polars as pl
import pytest

from hsrtcp.lab import bundle, emulate
from hsrtcp.mptcp import instance_metrics
from hsrtcp.mptcp.degradation import DegradationRule, detect, first_fall
from hsrtcp.testing import pcapio

from labtools import send_buffer_stall, two_path_config, two_path_outage_config

pytestmark = pytest.mark.netns

OUTAGE_START, OUTAGE_S, OUTAGE_RUN_S = 15, 18, 50
# 46 s: A25's (iii) wants 20 s after the onset and the drain after the flip may take 6 s (onset
# 21 s); a CI run of 40 s found no degradation (its rates were not printed then; they are now)
FLIP_AT, BACKUP_RUN_S = 15.0, 46


def _bundle(d, cfg, duration_s, run_id, during=None):
    comp = emulate.compile_source(cfg, d / "scenario")
    flow = {"type": "conjunction", "duration_s": duration_s, "cc": "reno"}
    run = d / "run"
    t = threading.Thread(target=during, args=(run,), daemon=True) if during else None
    if t:
        t.start()
    out = emulate.run(comp, run, {"kind": "measure", "flow": flow}, mptcp=True)
    assert out.ok, out.errors
    manifest = bundle.finalize(run, out, comp, {"run_id": run_id, "cc": "reno", "flow": flow, "mptcp": True})
    assert manifest["status"] == "ok"
    assert bundle.check(run) == []
    return run


@pytest.fixture(scope="module")
def outage(tmp_path_factory):
    d = tmp_path_factory.mktemp("mptcp-outage")
    cfg = two_path_outage_config(d, outage_start_s=OUTAGE_START, outage_s=OUTAGE_S, total_s=OUTAGE_RUN_S)
    return _bundle(d, cfg, OUTAGE_RUN_S, "outage")


@pytest.fixture(scope="module")
def backup(tmp_path_factory):
    d = tmp_path_factory.mktemp("mptcp-backup")
    flipped = {}

    def flip(run):
        while not (run / "workload.start").exists():
            time.sleep(0.02)
        start = float((run / "workload.start").read_text())
        rid = (run / "rattan_id").read_text().strip()
        time.sleep(max(0.0, start + FLIP_AT - time.time()))
        res = subprocess.run(["ip", "netns", "exec", f"ns-left-{rid}", "ip", "mptcp", "endpoint", "change",
                              "10.1.2.1", "backup"], capture_output=True, text=True)
        flipped.update(at=time.time() - start, rc=res.returncode, err=res.stderr)

    run = _bundle(d, two_path_config(d), BACKUP_RUN_S, "backup", during=flip)
    assert flipped.get("rc") == 0, flipped
    assert abs(flipped["at"] - FLIP_AT) < 0.5, flipped
    return run


def _rates(frames, role, path):
    r = frames["rates"].filter((pl.col("role") == role) & (pl.col("path") == path)).sort("t")
    return r["rate_bps"].to_list()


def test_conjunction_runs_one_mptcp_and_one_bound_single_path_flow_per_path(outage):
    client = json.loads((outage / "client.json").read_text())
    assert [r["label"] for r in client] == ["conjunction-mptcp", "conjunction-sp-p1", "conjunction-sp-p2"]
    assert all(r["error"] is None for r in client), client
    assert client[0]["mptcp"] is True and client[1]["mptcp"] is False
    assert [r["local"].split(":")[0] for r in client[1:]] == ["10.1.1.1", "10.1.2.1"]
    # all three started together (seed 004: instances start at the same instant)
    starts = [r["t_start"] for r in client]
    assert max(starts) - min(starts) < 0.5
    frames = instance_metrics(outage)
    paths = frames["paths"].sort("path")
    assert paths["path"].to_list() == [1, 2]
    assert paths["single_path_flow_id"].null_count() == 0
    inst = frames["instances"].row(0, named=True)
    assert inst["carriers"] == 2 and inst["subflows"] == 2 and inst["duration_s"] == OUTAGE_RUN_S
    # M29/M30 recomputed from the per-path rates they are made of
    rp, r = paths["rate_subflow_bps"].to_list(), paths["rate_single_path_bps"].to_list()
    assert inst["u_c"] == pytest.approx(sum(rp) / max(r))
    assert inst["u_t"] == pytest.approx(sum(rp) / sum(r))
    # R is what the client application read on that flow (its own byte count)
    assert r[0] * OUTAGE_RUN_S / 8 == pytest.approx(client[1]["bytes"], rel=0.02)
    assert r[1] * OUTAGE_RUN_S / 8 == pytest.approx(client[2]["bytes"], rel=0.02)
    # R'_n is subflow-level: data the scheduler reinjected on subflow 2 during the outage and
    # that subflow 1 also delivered afterwards counts on both, so Σ R' is at least what the
    # application read from the MPTCP socket, and more only by such duplicates, which the
    # client's kernel counted (MPTcpExtDuplicateData, one per segment, each at most an MSS:
    # 1448 bytes here). The excess per counted duplicate was 1412-1417 bytes in five runs,
    # whose excess ranged from 9 to 23 % of the application's bytes (a fixed 15 % bound failed
    # a CI run: 7,040 duplicates, 23 %).
    mptcp_bytes = sum(rp) * OUTAGE_RUN_S / 8
    app, dup = client[0]["bytes"], inst["kernel_duplicate_data"]
    assert app * 0.99 <= mptcp_bytes <= app * 1.01 + dup * 1448, (mptcp_bytes, app, dup)
    if mptcp_bytes > app * 1.01:
        assert dup > 0


def test_outage_on_one_carrier_falls_there_at_the_outage_and_not_on_the_other(outage):
    frames = instance_metrics(outage)
    sub1, sp1 = _rates(frames, "subflow", 1), _rates(frames, "single_path", 1)
    sub2, sp2 = _rates(frames, "subflow", 2), _rates(frames, "single_path", 2)
    quiet = range(OUTAGE_START + 1, OUTAGE_START + OUTAGE_S - 1)
    # ground truth: carrier 1 carried nothing during its outage, carrier 2 went on
    assert all(sub1[t] == 0 and sp1[t] == 0 for t in quiet)
    assert all(sp2[t] > 1e6 for t in quiet) and sum(sub2[t] for t in quiet) > 0
    paths = {r["path"]: r for r in frames["paths"].iter_rows(named=True)}
    # A25 (i) asks that the subflow was doing well before it fell (mean r' >= before x mean r);
    # how much of carrier 1 the subflow won from the single-path flow beside it is the
    # kernel's race (one CI run: under half), so the fall is checked with ``before`` set
    # below the share this run measured, and the default rule must agree with that share
    w = DegradationRule().window_s
    share = sum(sub1[OUTAGE_START - w:OUTAGE_START]) / sum(sp1[OUTAGE_START - w:OUTAGE_START])
    assert share > 0.05, share
    lenient_rule = DegradationRule(before=share * 0.9)
    lenient = {r["path"]: r for r in instance_metrics(outage, rule=lenient_rule)["paths"].iter_rows(named=True)}
    assert lenient[1]["fall_onset_s"] is not None
    # the race also gives the subflow sudden halvings before the outage (a CI run: one at
    # 10 s, which the lenient rule takes as the first fall); the outage must be a fall of its
    # own: the first one from a second before it on
    k = OUTAGE_START - 1 - w
    at_outage = first_fall(sub1[k:], sp1[k:], lenient_rule)
    assert at_outage is not None and abs(at_outage + k - OUTAGE_START) <= 1, (at_outage, lenient[1])
    assert lenient[1]["fall_onset_s"] <= at_outage + k
    if share >= DegradationRule().before:
        assert first_fall(sub1[k:], sp1[k:]) == at_outage
    fall2 = paths[2]["fall_onset_s"]
    # carrier 1's outage does not show on carrier 2 when it starts; later halvings of the
    # subflow on carrier 2 are the kernel's race with the single-path flow there (a CI run:
    # one at 18 s, 3 s into the outage, with carrier 2's single path > 1 Mbit/s throughout)
    assert fall2 is None or not (OUTAGE_START - 1 <= fall2 <= OUTAGE_START + 1), fall2
    assert paths[2]["degraded"] is False
    back = next(t for t in range(OUTAGE_START + OUTAGE_S - 2, len(sub1)) if sub1[t] > 1e6)
    back_sp = next(t for t in range(OUTAGE_START + OUTAGE_S - 2, len(sp1)) if sp1[t] > 1e6)
    assert abs(back - (OUTAGE_START + OUTAGE_S)) <= 3 and abs(back - back_sp) <= 2
    # A25 (iii) compares with single-path TCP on the same carrier, which lost the same 18 s:
    # the kernel's subflow came back with it, so the outage is no subflow degradation. The
    # kernel can starve that subflow a few seconds later, though (a loop run, 1 in 14: path 1
    # at 0.3-1.0 Mbit/s from 39 s to the end, its single-path flow at 18 Mbit/s). In the
    # outage the scheduler queued everything on path 2's subflow (3-3.5 MB not sent: its send
    # buffer), which drains at that subflow's rate (1.4-3.8 Mbit/s in our runs: its race with
    # the single-path flow on path 2); the data ACK waits for it, and once path 1's subflow
    # is a connection send buffer ahead, it has nothing to send (TCP_INFO: sndbuf-limited).
    # No namespace knob removes it: subflows ignore tcp_notsent_lowat (at 128 KB, 3.0 MB
    # still queued on path 2, path 1 stalled 2 s at 39 s), and tcp_wmem sizes that queue and
    # the connection's buffer alike (a 16-MB maximum: 2.9 MB queued, 4 s stalled at 42 s;
    # both runs unflagged, their stalls shorter). The starvation is a real degradation that A25 can only
    # date at the outage (the tail after it is shorter than min_after_s), so a flag on path 1
    # is taken only with the server kernel's witness of it, and only if the subflow kept up
    # with the single-path flow from the outage until the stall.
    if paths[1]["degraded"]:
        t0 = frames["instances"]["t0"][0]
        stall = send_buffer_stall(pl.read_parquet(outage / "tcpinfo.parquet"), t0, back)
        assert stall is not None, ("path 1 degraded without a send-buffer stall after its return", paths[1])
        kept_up = sum(sub1[OUTAGE_START:stall]) / sum(sp1[OUTAGE_START:stall])
        assert kept_up > DegradationRule().after, (stall, kept_up, paths[1])


def test_one_connection_across_the_phones_interface_captures_and_the_server(outage):
    """Subflows grouped by token across captures: the phone captures each carrier on its own
    interface (phone_p1, phone_p2) and sees one subflow there; the server sees both. All three
    name the same token; the matched rows join each phone subflow to the server's, and carry
    the server's subflow index (the capture that sees every subflow)."""
    import hsrtcp

    ds = hsrtcp.analyze([outage])
    conns = ds.extra["mptcp"]
    by_capture = {c.rsplit("/", 1)[-1]: r for c, r in zip(conns["capture"], conns.iter_rows(named=True))}
    assert set(by_capture) == {"phone_p1.pcap", "phone_p2.pcap", "server.pcap"}
    assert len(set(conns["token"])) == 1
    assert by_capture["server.pcap"]["subflows"] == 2
    assert by_capture["phone_p1.pcap"]["subflows"] == by_capture["phone_p2.pcap"]["subflows"] == 1
    # the client's request rides on the MP_CAPABLE of its first data segment (RFC 8684 §3.1:
    # the data-level length gives the mapping); no connection fell back to TCP
    client = json.loads((outage / "client.json").read_text())
    assert not any(conns["fallback"]), conns.select("capture", "fallback")
    flows = ds.flows
    mp = flows.filter(pl.col("mptcp_token").is_not_null())
    for cap, row in by_capture.items():
        sub = mp.filter(pl.col("capture").str.ends_with(cap) & (pl.col("vantage") != "matched"))
        assert row["data_bytes_up"] == sum(sub["c2s_payload_bytes"]), (cap, row["data_bytes_up"])
    # the request went out on the initial subflow (carrier 1), seen there and at the server
    assert by_capture["server.pcap"]["data_bytes_up"] == by_capture["phone_p1.pcap"]["data_bytes_up"] > 0
    # the server sent, at data level, what the phone's application read in the data phase
    # plus the one JSON answer line before it (lab/measure.py's control protocol)
    assert 0 < by_capture["server.pcap"]["data_bytes_down"] - client[0]["bytes"] < 512
    matched = mp.filter(pl.col("vantage") == "matched").sort("mptcp_subflow")
    assert matched["mptcp_subflow"].to_list() == [0, 1]
    server = flows.filter(pl.col("vantage") == "server").select("flow_id", "mptcp_subflow", "client_addr")
    phone = flows.filter(pl.col("vantage") == "client").select("flow_id", pl.col("capture").alias("phone_capture"))
    j = (matched.select("client_flow_id", "server_flow_id", "mptcp_subflow")
         .join(server.rename({"flow_id": "server_flow_id", "mptcp_subflow": "server_subflow"}), on="server_flow_id")
         .join(phone.rename({"flow_id": "client_flow_id"}), on="client_flow_id"))
    assert j["mptcp_subflow"].to_list() == j["server_subflow"].to_list()
    # subflow 0 (MP_CAPABLE) is carrier 1's interface, subflow 1 (MP_JOIN) carrier 2's
    assert [c.rsplit("/", 1)[-1] for c in j.sort("mptcp_subflow")["phone_capture"]] == ["phone_p1.pcap", "phone_p2.pcap"]
    assert j.sort("mptcp_subflow")["client_addr"].to_list() == ["10.1.1.1", "10.1.2.1"]


def test_backup_switch_is_a_degradation_of_that_subflow_only(backup):
    # A25's (i) asks the subflow to have carried ≥ 0.5 × the single-path rate before; on the
    # 30-ms path the subflow got 0.27–0.6 of it while competing in our runs (the kernel's race:
    # a CI run had 0.296 against a fixed 0.3). What this test checks is where the onset goes, so
    # (i) is set to half the lowest share this run had over the windows before every candidate
    # onset (flip to flip + 6 s): (i) holds at all of them, and (ii), (ii') and (iii) decide. A
    # share taken over the 10 s before the flip alone was not enough: a CI run's window ending
    # at 18 s held a send burst of the single-path flow and missed (i) there, the onset went to 19.
    first = instance_metrics(backup)
    w = DegradationRule().window_s
    sub, single = _rates(first, "subflow", 2), _rates(first, "single_path", 2)
    at = int(FLIP_AT)
    # Candidate onsets run while the subflow drains: from the flip to its first idle second
    # (at most flip + 6 s). Windows ending later hold idle seconds after the fall itself: a
    # loop run whose subflow drained within a second had a share of 0.066 over flip + 6 s and
    # 0.17 over its drain.
    idle = next((t for t in range(at, at + 7) if sub[t] == 0), at + 6)
    share = min(sum(sub[t - w:t]) / sum(single[t - w:t]) for t in range(at, idle + 1))
    assert share > 0.1, share
    rule = DegradationRule(before=min(0.3, share / 2))
    frames = instance_metrics(backup, rule=rule)
    paths = {r["path"]: r for r in frames["paths"].iter_rows(named=True)}
    sub2, single2 = _rates(frames, "subflow", 2), _rates(frames, "single_path", 2)
    assert paths[2]["degraded"] is True, (share, first_fall(sub2, single2, rule), [round(x / 1e6, 2) for x in sub2],
                                          [round(x / 1e6, 2) for x in single2])
    # What the switch can cause starts at the flip. A subflow may also collapse on its own
    # before it: a loop run at load 8 had path 1's subflow fall from 8.05 to 0.43 Mbit/s at
    # 5 s (a loss burst of the two flows' slow starts in the deep queue) and climb back only to
    # 4.45 by 46 s beside a 15-19 Mbit/s single-path flow; with (i) lowered to this run's path-2
    # share, that is a degradation at 10 s, the first the instance table reports. The switch's
    # onsets are judged on the same rate series from the flip on: `since_flip` is the rule
    # applied with the flip as the first candidate second.
    def since_flip(path):
        k = at - w
        d = detect(_rates(frames, "subflow", path)[k:], _rates(frames, "single_path", path)[k:], rule)
        return None if d is None else dataclasses.replace(d, onset_s=k + d.onset_s)

    if paths[2]["degradation_onset_s"] < at:
        d = since_flip(2)
        assert d is not None, ("the switch's fall not found after an earlier one", paths[2])
        paths[2].update(degradation_onset_s=d.onset_s, degradation_after_ratio=d.after_ratio)
    # The endpoint became backup at 15 s. What the server had already given the subflow (its
    # window, much of it in the path's deep queue, plus its unsent queue) still drains at the
    # subflow's rate, for 2–4 s in our runs; the onset is where that ends. Witness, from the
    # server capture through an independent reader: the time the server saw the phone
    # acknowledge 95 % of the data the subflow sent after the flip — r' is M5, the bytes the
    # client's ACKs newly cover as the server sees them, so the send times are a queue early
    # (a CI run and a local one: sends done at 17.3 and 18.2 s, r' falling at 19 and 20 s).
    # Not the last ACK: a lone segment after the drain (a CI run had one at 17.9 s, the drain
    # ending in second 16) is not a rate. A one-second idle of the subflow before the flip is
    # not the onset either: the rule's (ii') wants the fall to hold (a CI run put it at 12 s
    # without it).
    onset = paths[2]["degradation_onset_s"]
    assert FLIP_AT <= onset <= FLIP_AT + 6, (
        f"onset {onset} s; path 2: {paths[2]}; share {share:.3f}; Mbit/s per second, subflow "
        f"{[round(x / 1e6, 2) for x in sub2]}, single path {[round(x / 1e6, 2) for x in single2]}; "
        f"path 1 subflow {[round(x / 1e6, 2) for x in _rates(frames, 'subflow', 1)]}")
    import hsrtcp

    flows = hsrtcp.analyze([backup / "capture" / "server.pcap"], vantage="server").flows
    port = flows.filter(pl.col("flow_id") == paths[2]["subflow_flow_id"])["client_port"][0]
    t0 = frames["instances"]["t0"][0]
    sub_pkts = [p for p in pcapio.read_tcp(backup / "capture" / "server.pcap")
                if (p.dst, p.dport) == ("10.1.2.1", port) or (p.src, p.sport) == ("10.1.2.1", port)]
    acks = [(p.ts - t0, p.ack) for p in sub_pkts if p.src == "10.1.2.1"]
    # What the subflow still had to deliver at the flip: everything beyond the phone's last ACK
    # before it, sent before or after (sequence offsets from that ACK, mod 2^32). A loop run's
    # subflow, at 1.3 Mbit/s beside its 8-Mbit/s single-path flow, sent nothing after the flip.
    base = [a for t, a in acks if t < FLIP_AT][-1]
    ends = [(p.seq + p.payload_len - base) % 2**32 for p in sub_pkts if p.dst == "10.1.2.1" and p.payload_len]
    end = max([e for e in ends if 0 < e < 2**31], default=0)
    drained = min((t for t, a in acks if t >= FLIP_AT and 0.95 * end <= (a - base) % 2**32 < 2**31), default=None)
    assert drained is not None, (end, acks[-1:])
    assert abs(onset - drained) <= 1.5, (onset, drained, end)
    assert paths[2]["degradation_after_ratio"] < 0.05
    assert since_flip(1) is None, (paths[1], [round(x / 1e6, 2) for x in _rates(frames, "subflow", 1)])
    sub2 = _rates(frames, "subflow", 2)
    assert sum(sub2[onset + 1:]) < 0.01 * sum(sub2[:onset])


def _kernel(run, side):
    return json.loads((run / "kernel" / f"nstat-{side}.json").read_text())


@pytest.mark.parametrize("which", ["outage", "backup"])
def test_kernel_counters_agree_with_the_captures(which, request):
    run = request.getfixturevalue(which)
    frames = instance_metrics(run)
    inst = frames["instances"].row(0, named=True)
    server, client = _kernel(run, "server"), _kernel(run, "client")
    joins = inst["subflows"] - 1  # subflows seen in the server capture, less the MP_CAPABLE one
    assert server["MPTcpExtMPCapableSYNRX"] == 1 == inst["kernel_mp_capable_syn_rx"]
    assert server["MPTcpExtMPJoinSynRx"] == joins == client["MPTcpExtMPJoinSynTx"]
    assert server["MPTcpExtMPJoinAckRx"] == joins
    import hsrtcp

    ds = hsrtcp.analyze([run / "capture" / "server.pcap"], vantage="server")
    frames_core = getattr(ds, "mptcp", None)
    if frames_core is None:
        frames_core = ds.extra.get("mptcp") if getattr(ds, "extra", None) else None
    if frames_core is None or "reinjections" not in frames_core.columns:
        pytest.skip("the core's mptcp table (reinjections, subflows; wt-mptcp-core) is not in this build")
    mptcp = frames_core.row(0, named=True)
    assert mptcp["subflows"] - 1 == server["MPTcpExtMPJoinAckRx"]
    # The server's MPTCPRetrans counts the data-level re-sends of its retransmit timer, on
    # another subflow (reinjection) or the same one: any of them must show in the capture.
    # Data re-queued when a subflow turns stale (SubflowStale, after its RTOs in an outage) is
    # sent again through the ordinary push path, which that counter does not count: a re-send
    # in the capture needs one of the two.
    resent = (mptcp["reinjections"] or 0) + (mptcp["data_retransmissions"] or 0)
    retrans, stale = server["MPTcpExtMPTCPRetrans"], server.get("MPTcpExtSubflowStale", 0)
    if retrans > 0:
        assert resent > 0, (mptcp, retrans)
    if resent > 0:
        assert retrans > 0 or stale > 0, (mptcp, retrans, stale)


def test_results_directory_gives_the_same_metrics_and_the_report_shows_them(outage, tmp_path):
    import hsrtcp
    from hsrtcp.mptcp import write
    from hsrtcp.report.build import build_report

    res = tmp_path / "res"
    hsrtcp.analyze([outage]).write(res)  # the bundle as `hsrtcp analyze BUNDLE -o res` reads it
    from_bundle = instance_metrics(outage)
    from_results = instance_metrics(res)
    assert from_results["instances"].drop("source").equals(from_bundle["instances"].drop("source"))
    ids = ["subflow_flow_id", "single_path_flow_id"]  # numbered per analysis (pairs shift them)
    assert from_results["paths"].drop(ids).equals(from_bundle["paths"].drop(ids))
    write(from_results, res)
    assert pl.read_parquet_schema(res / "mptcp_instances.parquet")["u_c"] == pl.Float64
    build_report(res, None, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "Seed 004 instance metrics" in page and "Per carrier (mptcp_paths.parquet)" in page
    u_c = from_bundle["instances"]["u_c"][0]
    assert f"{u_c:.2f}" in page


def test_baseline_runs_give_r_n(outage, backup):
    from hsrtcp.errors import InputError

    own = instance_metrics(outage)["paths"].sort("path")
    paired = instance_metrics(backup, baseline=outage)
    assert paired["instances"]["baseline"][0] == "outage"
    assert paired["paths"].sort("path")["rate_single_path_bps"].to_list() == own["rate_single_path_bps"].to_list()
    # the baseline's single-path seconds are in the rates table too, on the baseline's clock
    # and over its own duration
    sp = paired["rates"].filter(pl.col("role") == "single_path")
    assert sp.height == 2 * OUTAGE_RUN_S
    with pytest.raises(InputError, match="pairs instances by order"):
        instance_metrics([outage, backup], baseline=outage)


def test_campaign_backup_endpoint_keeps_its_subflow_idle(tmp_path):
    """A campaign's [mptcp] knobs reach the kernel: path 2's endpoint is ``backup`` from the
    start, so the server's scheduler leaves that subflow idle while path 1 works; the server
    kernel counted a backup join (MPJoinSynBackupRx) and the bundle records the endpoint."""
    from hsrtcp.lab import campaign

    cfg = two_path_config(tmp_path)
    (tmp_path / "c.toml").write_text(
        f'[campaign]\nname = "backup"\nscenarios = ["{cfg}"]\nccs = ["reno"]\n'
        '[mptcp]\nendpoint_flags = ["subflow", "backup"]\nsubflows = 2\nadd_addr_accepted = 0\n'
        '[[flows]]\ntype = "conjunction"\nduration_s = 12\n')
    (res,) = campaign.run(campaign.load(tmp_path / "c.toml"), tmp_path / "runs", progress=False)
    assert res["status"] == "ok", res
    run = tmp_path / "runs" / res["run_id"]
    shown = (run / "kernel" / "mptcp-client.txt").read_text()
    assert "10.1.2.1" in shown and "backup" in shown and "subflows 2" in shown
    assert _kernel(run, "server")["MPTcpExtMPJoinSynBackupRx"] == 1
    paths = {r["path"]: r for r in instance_metrics(run)["paths"].iter_rows(named=True)}
    assert paths[1]["rate_subflow_bps"] > 3e6
    assert paths[2]["rate_subflow_bps"] < 0.02 * paths[1]["rate_subflow_bps"], paths[2]
    assert paths[2]["rate_single_path_bps"] > 3e6  # the carrier itself was fine


def test_a_cut_capture_keeps_the_metrics_of_what_was_read(outage, tmp_path, capsys):
    import shutil

    from hsrtcp.cli import main

    cut = tmp_path / "cut"
    shutil.copytree(outage, cut)
    pcap = cut / "capture" / "server.pcap"
    # Cut inside the record that follows 60 % of the file: a fixed byte count lands on a record
    # boundary about once in a hundred lab runs (a CI run had one), and a clean cut is no error.
    data = pcap.read_bytes()
    rec = next(r for r in pcapio.read_records(pcap) if r.offset > 0.6 * len(data))
    pcap.write_bytes(data[: rec.offset + 16 + len(rec.data) // 2])
    assert main(["mptcp", str(cut), "-o", str(tmp_path / "m")]) == 3
    err = capsys.readouterr().err
    assert "server.pcap" in err and "error" in err
    inst = pl.read_parquet(tmp_path / "m" / "mptcp_instances.parquet").row(0, named=True)
    assert inst["capture_error"] and inst["u_c"] is not None
    whole = instance_metrics(outage)["instances"].row(0, named=True)
    assert inst["rate_mptcp_bps"] < whole["rate_mptcp_bps"]
