"""Seeded and reproducible: same seed -> byte-identical files."""

import filecmp

from hsrtcp.lab import scenario as S


def _files(d):
    return sorted(p.relative_to(d) for p in d.rglob("*") if p.is_file())


def test_same_seed_byte_identical(tmp_path, scenarios_dir):
    sc = S.load(scenarios_dir / "two-carriers.toml")
    a = sc.compile(tmp_path / "a")
    first = {f: (tmp_path / "a" / f).read_bytes() for f in _files(tmp_path / "a")}
    sc.compile(tmp_path / "a")  # idempotent re-run into the same directory
    assert {f: (tmp_path / "a" / f).read_bytes() for f in _files(tmp_path / "a")} == first
    b = S.load(scenarios_dir / "two-carriers.toml").compile(tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    for f in _files(tmp_path / "a"):
        if f.name == "rattan.toml":  # names the traces by absolute path
            ta = (tmp_path / "a" / f).read_text().replace(str((tmp_path / "a").resolve()), "DIR")
            tb = (tmp_path / "b" / f).read_text().replace(str((tmp_path / "b").resolve()), "DIR")
            assert ta == tb
        else:
            assert filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False), f
    assert a.seed == 2021


def test_other_seed_differs(tmp_path, scenarios_dir):
    sc = S.load(scenarios_dir / "smoke.toml")
    sc.compile(tmp_path / "a")
    sc.with_overrides(seed=sc.seed + 1).compile(tmp_path / "b")
    assert (tmp_path / "a" / "events.csv").read_bytes() != (tmp_path / "b" / "events.csv").read_bytes()
    assert (tmp_path / "a" / "traces/bw_down_p1.json").read_bytes() != (tmp_path / "b" / "traces/bw_down_p1.json").read_bytes()


def test_truncation_keeps_the_prefix(scenarios_dir):
    # a shorter window is a prefix of the longer one: same handoffs, same impairments
    sc = S.load(scenarios_dir / "urban-handoffs.toml")
    long = sc.realize()
    short = sc.with_overrides(duration_s=60).realize()
    t_short = short.handoff_times(0)
    t_long = long.handoff_times(0)
    assert len(t_short) >= 2
    assert list(t_short) == list(t_long[: len(t_short)])
    for a, b in zip(short.impairments[0], long.impairments[0]):
        if a.t < 60:
            assert a == b


def test_carriers_are_independent(scenarios_dir):
    r = S.load(scenarios_dir / "two-carriers.toml").with_overrides(duration_s=1800).realize()
    m, u = r.handoff_times(0), r.handoff_times(1)
    assert len(m) > 50 and len(u) > 50
    # no systematic coincidence of handoffs on the two paths
    near = sum(1 for t in m if abs(u - t).min() < 0.5)
    assert near < 0.2 * len(m)


def test_recompile_removes_stale_traces(tmp_path, scenarios_dir):
    S.load(scenarios_dir / "two-carriers.toml").compile(tmp_path / "d")
    assert (tmp_path / "d" / "traces" / "bw_down_p2.json").exists()
    S.load(scenarios_dir / "smoke.toml").compile(tmp_path / "d")
    names = sorted(p.name for p in (tmp_path / "d" / "traces").iterdir())
    assert names == sorted(f"{w}_{d}_p1.json" for w in ("bw", "delay", "loss") for d in ("down", "up"))
