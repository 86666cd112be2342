"""The handoffs of a log read block by block go to temporary Parquet files beside the run's
output as they are found, not memory (issue 32: the table grew with the log, 510 k rows on a
1 GB log); the analysis reads only their time, system and ping-pong (numpy arrays) and
handoffs.parquet is copied from the files one at a time. The tables equal the
whole-frame ones; the files are removed on success and on error; a full disk is an
OutputError naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hsrtcp.context import csvlog
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.context.schema import RadioLogError
from hsrtcp.context.stream import HandoffScan, scan_radio
from hsrtcp.errors import OutputError

from .logs import lab_log, one_hz


def _rows() -> list[tuple]:
    # two carriers, a cell change every 5 or 7 s, ping-pongs and inter-system changes among them
    m = one_hz([(0.0, "LTE", 1, 10)] + [(5.0 * k + 0.5, "LTE", 1, 10 + k % 3 + (k % 5 == 0)) for k in range(1, 40)],
               210, "M")
    u = one_hz([(0.0, "LTE", 5, 50)] + [(7.0 * k + 0.5, "EDGE" if k % 4 == 0 else "LTE", 5, 50 + k % 2)
                                        for k in range(1, 28)], 205, "U")
    return sorted(m + u, key=lambda r: (r[0], r[1]))


def _arrays(whole: pl.DataFrame) -> dict:
    """(run, carrier) -> (ts, inter, ping-pong) of the whole table, by time."""
    out = {}
    for (run, c), g in whole.group_by("run_id", "carrier", maintain_order=True):
        g = g.sort("ts")
        out[(run, c)] = (g["ts"].to_numpy(), (g["system"] == "inter").to_numpy(), g["ping_pong"].to_numpy())
    return out


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_handoffs_spilled_equal_whole(tmp_path, monkeypatch):
    """Two runs of two carriers fed in 9-row blocks, a row group every 2 pieces: the files read
    back in order are the whole-frame table, the arrays its columns, and close() removes them."""
    monkeypatch.setattr(HandoffScan, "_JOIN", 2)
    one = read_radio(lab_log(tmp_path / "r.csv", _rows()), "lab").frame
    df = pl.concat([one.with_columns(pl.lit("r2").alias("run_id")),
                    one.with_columns(pl.lit("r1").alias("run_id"), pl.col("ts") + 1000)])
    whole = handoffs(df)
    assert len(whole) > 100 and whole["ping_pong"].sum() > 10 and (whole["system"] == "inter").sum() > 5
    out = tmp_path / "out"
    out.mkdir()
    ho = HandoffScan(spill=str(out / "radio.parquet.part0"))
    for i in range(0, len(df), 9):
        ho.add(df.slice(i, 9))
    files, arrays = ho.spilled()
    # a file each time a (run, carrier)'s pieces were spilled (polars' writer, s14): spilled
    # during the scan, not only at its end
    assert len(files) > 4 * 3 and all(Path(f).parent == out for f in files)
    assert_frame_equal(pl.concat([pl.read_parquet(f) for f in files]), whole, check_exact=True)
    want = _arrays(whole)
    assert sorted(arrays) == sorted(want)
    for k, (ts, inter, pp) in want.items():
        assert np.array_equal(arrays[k][0], ts) and np.array_equal(arrays[k][1], inter)
        assert np.array_equal(arrays[k][2], pp)
    ho.close()
    assert _files(out) == []


def test_scan_radio_spills_beside_its_output_and_cleans_up(tmp_path, monkeypatch):
    monkeypatch.setattr(HandoffScan, "_JOIN", 1)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 300)
    (tmp_path / "in").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    log = lab_log(tmp_path / "in" / "radio.csv", _rows())
    lg = scan_radio(log, "lab", parquet=str(out / "radio.parquet.part0"))
    whole = handoffs(read_radio(log, "lab").frame.with_columns(pl.lit(None, pl.String).alias("run_id")))
    assert_frame_equal(lg.derived, whole, check_exact=True)
    assert len(lg.handoff_files) > 2 and _files(out) == sorted(
        ["radio.parquet.part0", *(Path(f).name for f in lg.handoff_files)])
    assert all(Path(f).name.startswith("radio.parquet.part0.handoffs") for f in lg.handoff_files)
    assert _files(tmp_path / "in") == ["radio.csv"]
    assert sorted(lg.handoff_arrays) == ["M", "U"]
    lg.discard()
    assert _files(out) == []

    # an error in a late block: the files already spilled are removed with the Parquet file
    text = log.read_text().splitlines()
    text[-3] = text[-3].replace(",LTE,", ",LTE,x", 1)
    log.write_text("\n".join(text) + "\n")
    seen = []
    real = HandoffScan._write
    monkeypatch.setattr(HandoffScan, "_write", lambda self, k: (real(self, k), seen.append(len(self._writers))))
    with pytest.raises(RadioLogError, match=rf"{log.name}:{len(text) - 2}:"):
        scan_radio(log, "lab", parquet=str(out / "radio.parquet.part1"))
    assert len(seen) > 20 and seen[-1] == 2  # both carriers' files were written before the error
    assert _files(out) == []


@pytest.mark.parametrize("pages", [1, 2, 3, 4, 6, 8])
def test_a_full_disk_is_an_output_error_naming_the_file(tmp_path, monkeypatch, small_disk, pages):
    """The rows' and the handoffs' temporary files on a disk of a few pages: whichever fills
    it, an OutputError names that file (before: an OSError, a traceback), and nothing of the
    run is left on the disk."""
    monkeypatch.setattr(HandoffScan, "_JOIN", 1)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 2000)
    rows = _rows()
    log = lab_log(tmp_path / "radio.csv", [(r[0] + 400 * k, *r[1:]) for k in range(12) for r in rows])
    disk = small_disk(f"size={pages * 4096}")
    with pytest.raises(OutputError) as e:
        scan_radio(log, "lab", parquet=str(disk / "radio.parquet.part0"))
    msg = str(e.value)
    assert msg.startswith(f"{disk}/radio.parquet.part0") and "No space left on device" in msg, msg
    assert _files(disk) == []
    del e  # (its frames): no descriptor left open on the disk's removed files
    fds = [os.readlink(f"/proc/self/fd/{f}") for f in os.listdir("/proc/self/fd")
           if os.path.exists(f"/proc/self/fd/{f}")]
    assert not [f for f in fds if f.startswith(str(disk))]


def test_the_scan_does_not_load_pyarrow(tmp_path):
    """Importing pyarrow and its writer cost 45-55 MB of the scan's peak (issue 32, s14): the
    scan writes radio.parquet and the handoffs' files with polars. A fresh interpreter, so
    that no other test's import counts."""
    import subprocess
    import sys

    log = lab_log(tmp_path / "radio.csv", _rows())
    code = ("import sys; from hsrtcp.context.stream import scan_radio\n"
            f"lg = scan_radio({str(log)!r}, 'lab', first_ts=[0.0], last_ts=[1e10], parquet={str(tmp_path / 'r.parquet')!r})\n"
            "assert lg.handoff_files and lg.windows is not None\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow'))")
    root = Path(__file__).resolve().parents[3]
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(root / "python")))
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"
    assert pl.read_parquet(tmp_path / "r.parquet").height == len(_rows())
