"""A figure of a column with no finite value (an older results table whose floats were NaN,
read as null) is drawn without a word on stderr: numpy's "All-NaN slice encountered" reached
the user through `hsrtcp report` (issue 30, item 17: no library warning on stderr)."""

import warnings

import numpy as np
import polars as pl
import pytest

from hsrtcp.figures import draw


@pytest.mark.parametrize("values", [[None, None, None], [float("nan")] * 3])
def test_samples_with_marks_of_no_value_is_silent(values):
    df = pl.DataFrame({"t_rel": [0.0, 1.0, 2.0], "rtt_s": values}, schema={"t_rel": pl.Float64, "rtt_s": pl.Float64})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draw.samples_with_marks(df, "rtt_s", [1.0], "RTT", "s", "RTT of one flow")


@pytest.mark.parametrize("unit", ["s", "bit/s"])
def test_the_scale_of_no_value_is_the_smallest_and_silent(unit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert draw._scale(unit, np.array([np.nan, np.nan])) == draw._scale(unit, np.array([]))


def test_a_rate_of_no_value_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draw.rate_with_marks(np.array([0.0, 1.0]), np.array([np.nan, np.nan]), [0.5], "rate", "onset", "a rate")


def test_a_scenario_without_speed_is_said_not_a_traceback(tmp_path):
    """Issue 30 (FIX30): seed003-table-I formatted the mean speed with ``:.0f`` and ended in a
    TypeError (exit 4) when no flow of a scenario had a speed (no radio log). The row is drawn
    and its line says "speed unknown"; a scenario with a speed keeps its whole km/h."""
    import shutil
    from pathlib import Path

    from hsrtcp.figures import build

    study = tmp_path / "study"
    shutil.copytree(Path(__file__).resolve().parents[3] / "tests" / "data" / "study", study)
    flows = pl.read_parquet(study / "study_flows.parquet")
    first = flows["scenario"].drop_nulls()[0]
    flows.with_columns(pl.when(pl.col("scenario") == first).then(pl.lit(None, pl.Float64))
                       .otherwise(pl.col("speed_mean_kmh")).alias("speed_mean_kmh")
                       ).write_parquet(study / "study_flows.parquet")
    (o,) = build(study, only=["seed003-table-I"]).outcomes
    assert o.status in ("made", "partly") and o.made is not None, o.gaps()  # (partly: no route without positions)
    unknown = [x for x in o.made.lab if "speed unknown" in x]
    assert unknown and all(f"{first}: speed unknown" in x for x in unknown)
    assert any(x.endswith(" flow-minutes") and " km/h, " in x for x in o.made.lab)


def test_a_radio_log_without_rsrp_is_said_not_a_traceback(tmp_path):
    """Issue 30 (FIX30): seed003-fig-05 formatted the log's RSRP median with ``:.1f`` and ended
    in a TypeError (exit 4) for a radio log that has no RSRP column (a map without ``rsrp``).
    The log's line says the median is unknown; the other items of the run are made too."""
    from pathlib import Path

    import hsrtcp
    from hsrtcp.cli import main

    data = Path(__file__).resolve().parents[3] / "tests" / "data"
    client, server = data / "drops_cubic.client.pcap", data / "drops_cubic.server.pcap"
    f = hsrtcp.analyze([client], vantage="client").flows
    first, last = round(float(f["first_ts"].min()) * 1000) - 1000, round(float(f["last_ts"].max()) * 1000) + 1000
    log = tmp_path / "log.csv"  # every 2 ms, moving, one cell: no RSRP column at all
    log.write_text("Time,Op,Net,TAC,CI,Vel\n" + "".join(f"{ms},M,LTE,1,7,300\n" for ms in range(first, last, 2)))
    res, study, out = tmp_path / "r", tmp_path / "s", tmp_path / "g"
    code = main(["analyze", "--client", str(client), "--server", str(server), "--radio", str(log), "--radio-map",
                 "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h", "-o", str(res), "-q", "--no-plot"])
    assert code in (0, None)
    assert main(["study", str(res), "-o", str(study), "-q", "--bootstrap", "0"]) == 0
    assert main(["figures", str(study), str(res), "-o", str(out), "-q", "--only", "seed003-fig-05"]) == 0
    assert (out / "seed003-fig-05.pdf").is_file()
    from hsrtcp.figures import build

    (o,) = build(study, [res], only=["seed003-fig-05"]).outcomes
    assert any("RSRP median unknown (no RSRP in the log)" in x for x in o.made.lab), o.made.lab
