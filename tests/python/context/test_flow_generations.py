"""A flow's network generations and their changes in context (issue 33): an EN-DC (5G NSA)
flow is RAT LTE, so context's ``rats`` says LTE; ``generations`` says 5G NSA.

The real case: the small_50k pair put onto the Irish G-NetTrack excerpt (tests/data/radio/
irish-5g) with --radio-offset 213642188 lands at 09:52:29, where the log's NetworkMode is
5G NSA since 09:52:28 (cell 10809101; the sample before, 09:52:27 on cell 10809091, is 4G:
radio.parquet lines 22-23). With the offset 1.604 s larger the 3-ms flow holds that change:
the state at its start is the 4G sample and the 5G NSA one falls inside it. Before the
column, both runs gave rats LTE and no generation at all; the figures classed the flows 4G."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.context.classes import flow_context
from hsrtcp.context.schema import conform
from hsrtcp.context.stream import FlowWindows

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
EXCERPT = DATA / "radio" / "irish-5g" / "B_2020.02.14_09.38.22.lines760-1100.csv"
NSA_OFFSET = 213642188.0


def analyze_irish(out: Path, offset: float) -> pl.DataFrame:
    """context.parquet of the small_50k pair analyzed with the excerpt at ``offset``."""
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "hsrtcp"), "analyze",
                        "--client", str(DATA / "small_50k.client.pcap"),
                        "--server", str(DATA / "small_50k.server.pcap"), "--radio", str(EXCERPT),
                        "--radio-offset", f"{offset:.3f}", "-q", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return pl.read_parquet(out / "context.parquet")


@pytest.mark.parametrize(("offset", "generations", "changes"), [
    (NSA_OFFSET, "5G NSA", 0),                 # inside a 5G NSA stretch
    (NSA_OFFSET + 1.604, "4G,5G NSA", 1),      # over the 4G -> 5G NSA change
])
def test_a_5g_nsa_flow_of_the_irish_log_has_its_generation(tmp_path, offset, generations, changes):
    ctx = analyze_irish(tmp_path / "out", offset)
    assert ctx.height == 3
    assert set(ctx["rats"]) == {"LTE"}  # what the figures read before
    assert ctx["generations"].to_list() == [generations] * 3
    assert ctx["generation_changes"].to_list() == [changes] * 3


T0 = 1_700_000_000.0
# one carrier's cell samples: 4G, 5G NSA (SCG added), no generation, 5G NSA, 4G (released), 5G SA
GENS = ["4G", "5G NSA", None, "5G NSA", "4G", "5G SA"]


def _radio() -> pl.DataFrame:
    n = len(GENS)
    return conform(pl.DataFrame({
        "ts": [T0 + k for k in range(n)], "carrier": ["M"] * n, "cid": [7, 7, 7, 7, 7, 9],
        "rat": ["LTE", "LTE", None, "LTE", "LTE", "NR"], "speed_kmh": [300.0] * n, "generation": GENS,
    })).with_columns(pl.lit(None, pl.String).alias("run_id"))


def _flows(intervals) -> pl.DataFrame:
    return pl.DataFrame({"flow_id": list(range(len(intervals))), "first_ts": [T0 + a for a, _ in intervals],
                         "last_ts": [T0 + b for _, b in intervals], "run_id": [None] * len(intervals),
                         "carrier": ["M"] * len(intervals), "preset_reason": [None] * len(intervals)},
                        schema_overrides={"flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String,
                                          "preset_reason": pl.String})


@pytest.mark.parametrize("read", ["whole", "block by block"])
def test_generations_and_their_changes_over_a_flow(read):
    """Both ways context reads a log (a frame; FlowWindows, the streamed logs) count alike:
    a sample without a generation is skipped, not a change."""
    intervals = [(0.0, 0.5), (0.5, 1.5), (0.5, 4.5), (3.0, 5.0)]
    flows, radio = _flows(intervals), _radio()
    no_ho = pl.DataFrame(schema={"run_id": pl.String, "carrier": pl.String, "ts": pl.Float64,
                                 "system": pl.String, "ping_pong": pl.Boolean})
    if read == "whole":
        ctx = flow_context(flows, radio, no_ho)
    else:
        win = FlowWindows(flows["first_ts"].to_numpy(), flows["last_ts"].to_numpy())
        for k in range(len(radio)):  # a block a sample
            win.add(radio.slice(k, 1))
        ctx = flow_context(flows, None, no_ho, windows={None: win})
    assert ctx["generations"].to_list() == ["4G", "4G,5G NSA", "4G,5G NSA", "4G,5G NSA,5G SA"]
    # 4G -> 5G NSA at 1; 4G -> 5G NSA (1), -> 4G (4); 5G NSA (3) -> 4G (4) -> 5G SA (5)
    assert ctx["generation_changes"].to_list() == [0, 1, 2, 2]
    assert np.array_equal(ctx["rats"].to_numpy(), np.array(["LTE", "LTE", "LTE", "LTE,NR"], dtype=object))


def test_study_groups_by_generation(tmp_path):
    """`hsrtcp study --by generations` (issue 33's network-generation dimension): the classes
    table has the flow's generation as its cell key, read from context like any other column."""
    res = tmp_path / "res"
    analyze_irish(res, NSA_OFFSET)
    out = tmp_path / "study"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "hsrtcp"), "study", str(res), "-o", str(out),
                        "--by", "generations", "--bootstrap", "0", "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    classes = pl.read_parquet(out / "classes.parquet")
    assert "generations" in classes.columns
    assert set(classes["generations"].drop_nulls()) == {"5G NSA"}
