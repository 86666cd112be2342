"""The two captures of a pair are checked for sense before their numbers are trusted (issue
30, item 4; docs/two-vantage.md, "Checks").

Given the other way round, a pair's packets arrive before they are sent: it is analyzed
swapped, with a warning, and every table equals the right order's. A pair impossible either
way round (a capture whose clock jumped), or without a connection in common, is an input
error (exit 3) with its results written, and is not swapped.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main, quick
from hsrtcp.pair import analyze_pairs_to
from hsrtcp.testing.pcapio import capture_info, read_records, write_pcap

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
PHONE, SERVER = DATA / "data_blackout.client.pcap", DATA / "data_blackout.server.pcap"


def _fixture_pairs() -> list[tuple[Path, Path]]:
    """Every phone/server pair of tests/data (each server-side variant of a phone capture:
    pcap, big-endian, pcapng, gzip) and the bundled example."""
    pairs = []
    for c in sorted(DATA.glob("*.client.pcap")):
        stem = c.name.removesuffix(".client.pcap")
        pairs += [(c, s) for s in sorted(DATA.glob(f"{stem}.server.*"))]
    return pairs + [(ROOT / "python/hsrtcp/examples" / "phone.pcap", ROOT / "python/hsrtcp/examples" / "server.pcap")]


PAIRS = _fixture_pairs()


def _tables(d: Path) -> dict[str, pl.DataFrame]:
    """Every table a run wrote; events and rtt rows grouped by flow (a capture's flows may
    interleave in chunks: docs/two-vantage.md, From Rust to Parquet)."""
    out = {}
    for f in sorted(d.glob("*.parquet")):
        df = pl.read_parquet(f)
        out[f.stem] = df.sort("flow_id", maintain_order=True) if f.stem in ("events", "rtt") else df
    return out


def _assert_same_tables(a: Path, b: Path) -> None:
    ta, tb = _tables(a), _tables(b)
    assert sorted(ta) == sorted(tb)
    for name in ta:
        assert ta[name].equals(tb[name]), name
    assert ta["flows"].filter(pl.col("vantage") == "matched").height >= 1


def test_the_fixture_list_is_complete():
    assert len(PAIRS) >= 22  # 18 fixture pairs, 4 more server-side variants, the example


@pytest.mark.parametrize("client,server", PAIRS, ids=[f"{c.parent.name}/{s.name}" for c, s in PAIRS])
def test_every_fixture_pair_is_kept_as_given_and_turned_back_when_swapped(tmp_path, client, server):
    right = analyze_pairs_to([(client, server)], tmp_path / "right")
    wrong = analyze_pairs_to([(server, client)], tmp_path / "wrong")
    _assert_same_tables(tmp_path / "right", tmp_path / "wrong")
    assert right.swapped == [] and right.warnings == [] and right.errors == []
    assert wrong.swapped == [(str(server), str(client))] and wrong.errors == []
    assert len(wrong.warnings) == 1 and "the other way round" in wrong.warnings[0]


@pytest.mark.parametrize("parser", ["quick", "click"])
def test_the_issue_command_gives_the_right_orders_numbers(tmp_path, capsys, parser):
    """`hsrtcp analyze --client data_blackout.server.pcap --server data_blackout.client.pcap`
    reported p_d 0 instead of 7.5 %, the losses as capture loss, a negative owd_up_max_s."""
    extra = [] if parser == "quick" else ["--radio-offset", "0"]  # (click's parser: no radio log)
    swapped = ["analyze", "--client", str(SERVER), "--server", str(PHONE), "-o", str(tmp_path / "w"), "-q", *extra]
    assert (quick.parse(swapped) is None) == (parser == "click")
    assert main(swapped) == 0
    err = capsys.readouterr().err
    assert "the other way round" in err and f"analyzed with {PHONE} as the client side" in err
    assert main(["analyze", "--client", str(PHONE), "--server", str(SERVER), "-o", str(tmp_path / "r"), "-q"]) == 0
    assert capsys.readouterr().err == ""
    _assert_same_tables(tmp_path / "r", tmp_path / "w")
    m = pl.read_parquet(tmp_path / "w" / "flows.parquet").filter(pl.col("vantage") == "matched").row(0, named=True)
    truth = json.loads((DATA / "data_blackout.json").read_text())["truth"]["connections"][0]
    assert m["p_d"] == truth["p_data"] and m["lost_data_packets"] == truth["data_lost"] > 0
    assert m["capture_loss_client_packets"] == 0 and m["capture_loss_server_packets"] == 0
    assert m["owd_up_max_s"] > 0 and m["owd_down_min_s"] >= 0 and m["clock_offset_uncertainty_s"] > 0
    caps = pl.read_parquet(tmp_path / "w" / "captures.parquet")
    assert caps.select("capture", "vantage").rows() == [(str(PHONE), "client"), (str(SERVER), "server")]


def test_the_python_api_swaps_too_and_says_so():
    right = hsrtcp.analyze(client=PHONE, server=SERVER)
    with pytest.warns(UserWarning, match="the other way round"):
        wrong = hsrtcp.analyze(client=SERVER, server=PHONE)
    assert right.tables().keys() == wrong.tables().keys()
    for name, df in right.tables().items():
        assert df.equals(wrong.tables()[name]), name


def _stepped_phone(tmp_path: Path, step_s: float) -> Path:
    """The phone capture with its clock stepped by ``step_s`` halfway (an NTP step): no
    order of the pair is possible then."""
    recs = list(read_records(PHONE))
    mid = recs[len(recs) // 2].ts_ns
    out = tmp_path / "stepped.client.pcap"
    write_pcap(out, [(r.ts_ns + (round(step_s * 1e9) if r.ts_ns >= mid else 0), r.data) for r in recs],
               linktype=capture_info(PHONE)["linktype"])
    return out


@pytest.mark.parametrize("step_s", [0.5, -0.5])
def test_a_pair_impossible_either_way_round_is_an_input_error_not_a_swap(tmp_path, capsys, step_s):
    phone = _stepped_phone(tmp_path, step_s)
    for k, (c, s) in enumerate([(phone, SERVER), (SERVER, phone)]):
        out = tmp_path / f"o{k}"
        assert main(["analyze", "--client", str(c), "--server", str(s), "-o", str(out), "-q"]) == 3
        err = capsys.readouterr().err
        assert "impossible either way round" in err and "the other way round" not in err
        stats = pl.read_parquet(out / "pair_stats.parquet")  # written, as given
        assert stats.select("client_capture", "server_capture").rows() == [(str(c), str(s))]


@pytest.mark.parametrize("parser", ["quick", "click"])
def test_a_pair_without_a_connection_in_common_is_its_own_input_error(tmp_path, capsys, parser):
    extra = [] if parser == "quick" else ["--radio-offset", "0"]
    a, b = DATA / "small_50k.client.pcap", DATA / "clean_200k.server.pcap"
    for k, (c, s) in enumerate([(a, b), (b, a)]):
        out = tmp_path / f"o{k}"
        assert main(["analyze", "--client", str(c), "--server", str(s), "-o", str(out), "-q", *extra]) == 3
        err = capsys.readouterr().err
        assert f"{c} + {s}: no TCP connection in common (1 in the client-side capture, 1 in the server-side" in err
        assert "round" not in err  # neither swapped nor impossible: nothing to say about the clocks
        assert pl.read_parquet(out / "pair_stats.parquet")["pairs"].to_list() == [0]
        flows = pl.read_parquet(out / "flows.parquet")
        assert sorted(flows["vantage"].to_list()) == ["client", "matched", "matched", "server"]


def test_a_swapped_pair_with_a_radio_log_writes_the_right_orders_context(tmp_path, capsys):
    """The context tables (hsrtcp.context) name each pair's sides as analyzed."""
    phone, server = ROOT / "python/hsrtcp/examples" / "phone.pcap", ROOT / "python/hsrtcp/examples" / "server.pcap"
    flows = hsrtcp.analyze([phone], vantage="client").flows
    start, end = float(flows["first_ts"].min()), float(flows["last_ts"].max())
    mid = round((start + end) / 2 * 4) / 4
    lines, t = ["Time,Op,CI"], float(int(start) - 2)
    while t < end + 2:
        lines.append(f"{round(t * 1000)},U,{8 if t >= mid else 7}")  # one handoff inside the flow
        t += 0.25
    log = tmp_path / "trip.csv"
    log.write_text("\n".join(lines) + "\n")
    radio = ["--radio", str(log), "--radio-map", "time=Time:ms,carrier=Op,cid=CI", "--label", "site=lab", "-q"]
    assert main(["analyze", "--client", str(phone), "--server", str(server), "-o", str(tmp_path / "r"), *radio]) == 0
    assert main(["analyze", "--client", str(server), "--server", str(phone), "-o", str(tmp_path / "w"), *radio]) == 0
    assert "the other way round" in capsys.readouterr().err
    _assert_same_tables(tmp_path / "r", tmp_path / "w")
    assert pl.read_parquet(tmp_path / "w" / "handoffs.parquet").height == 1
    assert pl.read_parquet(tmp_path / "w" / "labels.parquet")["client_capture"].to_list() == [str(phone)]
