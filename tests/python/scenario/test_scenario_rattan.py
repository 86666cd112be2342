"""Rattan's own reading of a compiled scenario equals the scenario's timeline.

Runs ``rattan run -c rattan.toml --visualize-trace <D>s --visualize-trace-mode csv``: rattan
loads the config and every trace with its own parsers (netem-trace) and prints the merged
piecewise timeline without creating namespaces, so this needs no root. Skipped when rattan is
not installed (``make rattan``).
"""

import numpy as np
import pytest

from hsrtcp.lab.scenario.traces import check_against_rattan, rattan_binary, rattan_visualize

pytestmark = pytest.mark.skipif(rattan_binary() is None, reason="rattan not installed (make rattan)")


@pytest.mark.parametrize("name", ["smoke", "two-carriers", "coverage-hole"])
def test_rattan_timeline_equals_scenario_timeline(compiled_examples, name):
    cs = compiled_examples[name]
    rows = rattan_visualize(cs.rattan_config, cs.duration_s)
    assert rows[0]["start_s"] == 0.0
    assert rows[-1]["start_s"] + rows[-1]["duration_s"] == pytest.approx(cs.duration_s)
    tl = cs.timeline()
    n = int(np.ceil(cs.duration_s))
    starts = np.array([r["start_s"] for r in rows])
    ends = starts + np.array([r["duration_s"] for r in rows])
    for p in range(1, cs.paths + 1):
        for d, tag in (("down", "dn"), ("up", "up")):
            # per-second time-weighted mean of what rattan will apply, computed from its table
            bw = np.array([r[f"p{p}_{tag}_bw_bandwidth"] for r in rows])
            dl = np.array([r[f"p{p}_{tag}_delay_delay"] for r in rows])
            lossy = np.array([r[f"p{p}_{tag}_loss_loss_pattern"] == (1.0,) for r in rows])
            mine = tl.filter((tl["path"] == p) & (tl["direction"] == d)).sort("t")
            assert mine.height == n
            for k in range(n):
                ov = np.clip(np.minimum(ends, k + 1.0) - np.maximum(starts, float(k)), 0, None)
                m = ov > 0
                w = ov[m] / ov[m].sum()
                exp = mine.row(k, named=True)
                assert (bw[m] * w).sum() == pytest.approx(exp["bw_bps"], rel=1e-6, abs=1e-3), (p, d, k)
                assert (dl[m] * w).sum() == pytest.approx(exp["delay_s"], abs=2e-6), (p, d, k)
                assert bool((bw[m] <= 1).any() or lossy[m].any()) == exp["outage"], (p, d, k)
            assert bw.min() >= 1


def test_rattan_changes_only_at_scenario_boundaries(compiled_examples):
    for name in ("smoke", "two-carriers", "urban-handoffs"):
        assert check_against_rattan(compiled_examples[name]) == []


def test_rattan_rejects_a_broken_trace(compiled_examples, tmp_path):
    # the witness can fail: a trace rattan cannot parse must surface as an error
    import shutil

    from hsrtcp.lab.scenario.config import ScenarioError

    src = compiled_examples["smoke"].outdir
    dst = tmp_path / "broken"
    shutil.copytree(src, dst)
    cfg = (dst / "rattan.toml").read_text().replace(str(src.resolve()), str(dst.resolve()))
    (dst / "rattan.toml").write_text(cfg)
    f = dst / "traces" / "bw_down_p1.json"
    f.write_text(f.read_text().replace("bps", "parsecs", 1))
    with pytest.raises(ScenarioError, match="visualize-trace failed"):
        rattan_visualize(dst / "rattan.toml", 5.0)
