"""`hsrtcp study` end to end: results directories made by `hsrtcp analyze` from the
tests/data capture pairs (real kernel TCP, tests/data/README.md), each with a radio log
written here around the flow's real packet times so the context layer (hsrtcp.context)
classes it: data_blackout standing still (static), small_50k at 300 km/h in one cell
(high_0), drops_cubic at 300 km/h with one handoff (high_1_8); plus a directory analyzed
without a radio log. The study's numbers are checked against the flows rows they come from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"
CASES = {"data_blackout": (0.0, False, "static"), "small_50k": (300.0, False, "high_0"),
         "drops_cubic": (300.0, True, "high_1_8")}


def _radio_log(path: Path, start: float, end: float, speed: float, handoff: bool) -> Path:
    """Generic CSV every 2 ms (the fixtures' flows last tens of ms) from 1 s before the flow
    to 1 s after it; with ``handoff`` the serving cell changes 7 -> 8 in the middle of the flow."""
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    for ms in range(first, last, 2):
        cid = 8 if handoff and ms >= mid else 7
        lines.append(f"{ms},M,LTE,1,{cid},{speed},-80,-10")
    path.write_text("\n".join(lines) + "\n")
    return path


def _analyze(*args) -> None:
    try:
        code = main(["analyze", *map(str, args), "-q", "--no-plot"])
    except SystemExit as exc:  # the analyze command ends with SystemExit(code)
        code = exc.code
    assert code == 0


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("study_cli")
    out = {}
    for name, (speed, handoff, _cls) in CASES.items():
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        f = hsrtcp.analyze([client], vantage="client").flows
        log = _radio_log(base / f"{name}.csv", float(f["first_ts"].min()), float(f["last_ts"].max()), speed, handoff)
        out[name] = base / name
        _analyze("--client", client, "--server", server, "--radio", log, "--radio-map", RMAP,
                 "--label", f"case={name}", "-o", out[name])
    out["noradio"] = base / "noradio"
    _analyze("--client", DATA / "clean_200k.client.pcap", "--server", DATA / "clean_200k.server.pcap",
             "-o", out["noradio"])
    return out


def _matched(d: Path) -> dict:
    return pl.read_parquet(d / "flows.parquet").filter(pl.col("vantage") == "matched").row(0, named=True)


def test_cli_writes_the_tables_and_classes_each_run(results, tmp_path, capsys):
    dirs = [results[k] for k in ("data_blackout", "small_50k", "drops_cubic", "noradio")]
    code = main(["study", *map(str, dirs), "-o", str(tmp_path / "st"), "--min-flows", "1",
                 "--bootstrap", "200", "--by", "case"])
    assert code == 0
    text = capsys.readouterr().out
    assert "study: 4 flows from 4 results directories, by case" in text
    assert "no context.parquet" in text
    manifest = json.loads((tmp_path / "st" / "study.json").read_text())
    assert manifest["study_schema_version"] == 1 and manifest["by"] == ["case"]
    for name in hsrtcp.study.TABLE_NAMES:
        assert (tmp_path / "st" / f"{name}.parquet").is_file()
    flows = pl.read_parquet(tmp_path / "st" / "study_flows.parquet")
    got = {r["case"]: r["flow_class"] for r in flows.iter_rows(named=True)}
    assert got == {**{k: v[2] for k, v in CASES.items()}, None: "unknown"}
    # each connection counted once: its matched row
    assert set(flows["row_vantage"]) == {"matched"}

    dupack = pl.read_parquet(tmp_path / "st" / "dupack.parquet")
    for name, (_s, _h, cls) in CASES.items():
        cell = dupack.filter((pl.col("flow_class") == cls) & (pl.col("case") == name)).row(0, named=True)
        assert cell["n_flows"] == 1
        assert cell["value"] == pytest.approx(_matched(results[name])["dupack_rate"])
    union = dupack.filter((pl.col("flow_class") == "high_1_16") & (pl.col("case") == "drops_cubic")).row(0, named=True)
    assert union["value"] == pytest.approx(_matched(results["drops_cubic"])["dupack_rate"])


def test_numbers_equal_their_flows_rows(results):
    d = results["data_blackout"]
    s = hsrtcp.study(d, min_flows=1, bootstrap=0)
    m = _matched(d)

    def cell(table, metric, cls="static"):
        t = s.tables[table]
        return t.filter((pl.col("flow_class") == cls) & (pl.col("metric") == metric)).row(0, named=True)

    assert cell("spurious_rto", "spurious_rto_rate")["value"] == pytest.approx(m["spurious_rto_rate"])
    assert cell("handshake", "establishment_s")["value"] == pytest.approx(m["establishment_time_s"])
    assert cell("handshake", "closure_s")["value"] == pytest.approx(m["closure_s"])
    assert cell("timeout_recovery", "q")["value"] == pytest.approx(m["q"])
    # the blackout's recovered timeout sequence, from the server row's events
    ev = pl.read_parquet(d / "events.parquet").filter(
        (pl.col("flow_id") == m["server_flow_id"]) & (pl.col("kind") == "timeout_sequence")
        & (pl.col("class") == "recovered"))
    tr = cell("timeout_recovery", "timeout_recovery_s")
    assert tr["n"] == ev.height >= 1
    assert tr["value"] == pytest.approx(ev["duration_s"].mean())
    # throughput: the phone row's bytes per 1-s bin, pooled
    ser = pl.read_parquet(d / "series.parquet").filter(pl.col("flow_id") == m["client_flow_id"])
    bin_s = ser["bin_s"] if "bin_s" in ser.columns else pl.Series([1.0] * ser.height)
    rates = (ser["bytes"].cast(pl.Float64) * 8 / bin_s).to_list()
    assert cell("performance", "throughput_bps")["value"] == pytest.approx(sum(rates) / len(rates))
    # the 1-MB download was complete: not a failure (the engine says so, and no size is known)
    assert cell("failure", "failure_rate")["value"] == 0.0
    # M6 pooled over the connection's 1-s bins with a server transmission, against the truth
    # helper on both captures (an independent reader and matcher, hsrtcp.testing.truth)
    from hsrtcp.testing import truth

    tr = truth.compute(DATA / "data_blackout.server.pcap", DATA / "data_blackout.client.pcap")
    want = [r["loss_rate"] for c in tr.connections for r in c.series(1.0) if r["data_sent"]]
    loss = cell("performance", "loss_bin_rate")
    assert loss["n"] == len(want) > 0 and loss["n_flows"] == 1
    assert loss["value"] == pytest.approx(sum(want) / len(want))
    full = cell("performance", "loss_full_share")
    assert full["value"] == pytest.approx(sum(x >= 1.0 for x in want) / len(want))
    samples = s.tables["throughput_samples"].filter(pl.col("loss_rate").is_not_null())
    assert samples.height <= len(want)  # beside the phone's bins: those the phone row has


def test_handoffs_and_suspensions_from_the_context_layer(results):
    s = hsrtcp.study(results["drops_cubic"], min_flows=1, bootstrap=0)
    sus = s.suspensions.filter((pl.col("flow_class") == "high_1_8") & (pl.col("metric") == "suspension_s"))
    rows = pl.read_parquet(results["drops_cubic"] / "suspensions.parquet")
    assert rows.height == 1                             # one handoff inside the one (phone-side) flow
    # a suspension needs the engine's gap events; without them the context layer leaves it null
    assert sus["n"].to_list() == [rows["suspension_s"].drop_nulls().len()]
    if rows["suspension_s"].null_count():
        assert any("suspensions without a value" in n for n in s.notes)
    # one handoff: no interval yet (the first handoff of a carrier has none)
    iv = s.handoff_intervals.filter(pl.col("metric") == "handoff_interval_s")
    assert iv.height == 1 and iv["note"].to_list() == ["none of the 1 flows has a value"]


def test_cli_bad_input_exit_codes(results, tmp_path, capsys):
    assert main(["study", str(tmp_path / "missing"), "-o", str(tmp_path / "o")]) == 3
    assert "no such results directory" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in ("flows", "events"):
        (broken / f"{f}.parquet").write_bytes((results["noradio"] / f"{f}.parquet").read_bytes())
    assert main(["study", str(broken), "-o", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert f"{broken}: not a complete hsrtcp results directory: series.parquet is missing" in err
    assert "Traceback" not in err
    assert main(["study", str(results["noradio"]), "-o", str(tmp_path / "o"), "--by", "nosuch"]) == 2
    assert "--by nosuch: no such column" in capsys.readouterr().err
    assert main(["study", str(results["noradio"]), "-o", str(tmp_path / "o"), "--min-flows", "0"]) == 2
    capsys.readouterr()
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert main(["study", str(results["noradio"]), "-o", str(blocker / "sub"), "-q"]) == 3
    err = capsys.readouterr().err
    assert "a_file/sub: cannot create the output directory: Not a directory" in err and "Traceback" not in err


def test_python_module_is_callable_and_import_stays_lazy():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    code = "import sys, hsrtcp; assert 'polars' not in sys.modules; assert callable(hsrtcp.study); print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


@pytest.mark.parametrize("stream", ["1", "0"])
def test_by_result_groups_per_directory(results, tmp_path, capsys, monkeypatch, stream):
    """Issue 30: `--by result` (advertised by --help) named the key column a second time and
    ended in a polars DuplicateError (streamed: every partition a failures row, exit 3;
    in memory: a traceback, exit 4). Each directory holds one connection, classed as in CASES:
    the hand count is one flow per (directory, its class) and per (directory, all)."""
    monkeypatch.setenv("HSRTCP_STUDY_STREAM", stream)
    dirs = [results[k] for k in ("data_blackout", "drops_cubic", "noradio")]
    assert main(["study", *map(str, dirs), "-o", str(tmp_path / "st"), "--by", "result", "--bootstrap", "0",
                 "-q"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    classes = pl.read_parquet(tmp_path / "st" / "classes.parquet").filter(pl.col("n_flows") > 0)
    got = sorted((r["result"], r["flow_class"], r["n_flows"]) for r in classes.iter_rows(named=True))
    want = sorted([(str(results["data_blackout"]), c, 1) for c in ("static", "all")]
                  + [(str(results["drops_cubic"]), c, 1) for c in ("high_1_8", "high_1_16", "all")]
                  + [(str(results["noradio"]), c, 1) for c in ("unknown", "all")])
    assert got == want
    samples = pl.read_parquet(tmp_path / "st" / "throughput_samples.parquet")
    assert samples.columns[:3] == ["result", "flow_id", "flow_class"] and samples.columns.count("result") == 1
    assert set(samples["result"]) == {str(d) for d in dirs}


@pytest.mark.parametrize("stream", [False, True])
def test_by_class_reason_counts_each_reason(results, stream):
    """Issue 30 (FIX30): `--by class_reason` grouped the class counts by class_reason twice
    (DuplicateError in both paths). Hand count: data_blackout's one flow is static with no
    reason, noradio's one flow unknown for want of a radio log; each also in ``all``."""
    from hsrtcp.study.groups import NO_CONTEXT_REASON

    s = hsrtcp.study([results["data_blackout"], results["noradio"]], by="class_reason", bootstrap=0, stream=stream)
    classes = s.tables["classes"].filter(pl.col("n_flows") > 0)
    got = sorted((r["flow_class"], r["class_reason"] or "", r["n_flows"]) for r in classes.iter_rows(named=True))
    assert got == sorted([("static", "", 1), ("unknown", NO_CONTEXT_REASON, 1), ("all", "", 1),
                          ("all", NO_CONTEXT_REASON, 1)])
