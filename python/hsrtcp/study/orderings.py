"""The seeds' checkable orderings (docs/metrics.md §3 items 1, 3, 4, 7) on a study's tables.

Each check reads the pooled cells (no ``--by``) of the three classes of seed 000's Tables
VII–IX — ``static``, ``high_0`` (280–310 km/h, 0 handoffs), ``high_1_16`` (280–310 km/h,
1–16 handoffs) — and says whether the ordering the seeds report holds for the point
estimates, and whether the bootstrap intervals of neighbouring classes are disjoint. A
null cell (too few flows, no timeout at all) makes its ordering fail: it was not shown.

The thresholds below were written down before the study campaign they judge was run, from
the seeds' wording alone:

1. spurious RTO rate (M13, Table VII): static < high_0 < high_1_16 (T0-40/41).
3. DupACK rate (M15, Table IX): static < high_0 < high_1_16 (T0-44/45).
4. data loss p_d (M8) and mean RTT (M7) rise, pooled 1-s throughput (M3) falls, static →
   high_0 → high_1_16; "handoffs dominate speed" (T0-35/36): for each of the three the step
   high_0 → high_1_16 is at least as large as static → high_0.
7. timeout recovery (M10) on HSR (high_1_16) lasts longer than static — the seeds measured
   7.8× (5.05 / 0.65 s, T1-07); required here: > 2× — and q ≫ p_d on HSR (27.26 % vs
   0.7526 %, T1-09/10); required here: q > 3 · p_d.

Added on 27 Nov, after run F, from seed 000's text rather than its wording of the ordering:
item 4's throughput clause also on the long downloads alone (``by_workload``). Seed 000 §V
compares "five types of 3-minute flows"; pooled over all workloads, the class without
handoffs also holds most of the short flows (a 50 KB flow seldom lasts long enough to cross
a handoff), whose 1-s throughput is low for want of time, not of radio — so the pooled
speed step measures the workload mix too. The pooled check stays as it was written.

``hsrtcp.study.orderings.check(study_or_dir, recovery=None, by_workload=None)`` returns one
:class:`Ordering` per check. ``recovery`` (a second study or directory) is where item 7 reads its cells: the
study campaign judges items 1, 3 and 4 on its main campaign plus twenty more trips with
handoffs (every scenario runs the same three workloads) and item 7 with the static extension
added (docs/study.md), because a standing train times out too rarely without it, and adding
only static long downloads to the means over flows of items 1–4 would compare different
workload mixes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

CLASSES = ("static", "high_0", "high_1_16")
# The long downloads' workload label in a study made --by workload (the seeds' 3-minute flows).
LONG_WORKLOAD = "duration"
RECOVERY_RATIO_MIN = 2.0
Q_OVER_PD_MIN = 3.0


@dataclass
class Cell:
    value: float | None
    lo: float | None
    hi: float | None
    n_flows: int


@dataclass
class Ordering:
    item: int                 # docs/metrics.md §3 item
    name: str                 # what is ordered
    cells: dict[str, Cell]    # class -> cell (or a named quantity for item 7)
    holds: bool               # the ordering of the point estimates
    separated: bool           # ... and neighbouring bootstrap intervals are disjoint
    why: str = ""             # what failed
    extra: dict = field(default_factory=dict)
    #: when the check was written (a check added after a run saw the data is marked so)
    registered: str = "before the campaign ran"


def _tables(source, names=("performance", "spurious_rto", "dupack", "timeout_recovery")) -> dict[str, pl.DataFrame]:
    if isinstance(source, (str, Path)):
        from hsrtcp.results import ResultsDir

        res = ResultsDir(source)
        return {n: res.read(n) for n in names}
    return source.tables


def _cell(df: pl.DataFrame, cls: str, metric: str, workload: str | None = None) -> Cell:
    sel = (pl.col("flow_class") == cls) & (pl.col("metric") == metric)
    if workload is not None:
        sel &= pl.col("workload") == workload
    r = df.filter(sel)
    if r.height != 1:
        raise ValueError(f"{metric}/{cls}: expected one pooled row, found {r.height} (a study with --by?)")
    row = r.row(0, named=True)
    return Cell(row["value"], row["value_lo"], row["value_hi"], int(row["n_flows"] or 0))


def _monotone(item: int, name: str, cells: dict[str, Cell], rising: bool) -> Ordering:
    vals = [cells[c].value for c in CLASSES]
    if any(v is None for v in vals):
        missing = [c for c in CLASSES if cells[c].value is None]
        return Ordering(item, name, cells, False, False, f"no value for {', '.join(missing)}")
    ok = all((a < b) if rising else (a > b) for a, b in zip(vals, vals[1:]))
    sep = ok and all(
        (x.hi is not None and y.lo is not None and x.hi < y.lo) if rising
        else (x.lo is not None and y.hi is not None and x.lo > y.hi)
        for x, y in zip([cells[c] for c in CLASSES], [cells[c] for c in CLASSES][1:]))
    why = "" if ok else f"{' < '.join(CLASSES) if rising else ' > '.join(CLASSES)} does not hold: {vals}"
    return Ordering(item, name, cells, ok, sep, why)


def _handoffs_dominate(o: Ordering) -> Ordering:
    """Item 4's last clause on a monotone ordering: the step high_0 → high_1_16 is at least as
    large as static → high_0."""
    if o.holds:
        v = [o.cells[c].value for c in CLASSES]
        speed, handoffs = abs(v[1] - v[0]), abs(v[2] - v[1])
        o.extra = {"speed_step": speed, "handoff_step": handoffs}
        if handoffs < speed:
            o.holds, o.separated = False, False
            o.why = f"handoffs do not dominate speed: step {handoffs:.4g} < {speed:.4g}"
    return o


def check(source, recovery=None, by_workload=None) -> list[Ordering]:
    """The §9 orderings 1, 3, 4 and 7 on a :class:`hsrtcp.study.Study` or a study directory;
    item 7 on ``recovery`` when given (see the module docstring). ``by_workload`` (a study
    made ``--by workload``, or its directory): item 4's throughput also on the long downloads
    alone, the seeds' own comparison (seed 000 §V: "five types of 3-minute flows")."""
    t = _tables(source)
    t7 = _tables(recovery) if recovery is not None else t
    out = []
    out.append(_monotone(1, "spurious RTO rate (M13)",
                         {c: _cell(t["spurious_rto"], c, "spurious_rto_rate") for c in CLASSES}, True))
    out.append(_monotone(3, "DupACK rate (M15)", {c: _cell(t["dupack"], c, "dupack_rate") for c in CLASSES}, True))
    for metric, name, rising in (("p_d", "data loss p_d (M8)", True), ("rtt_mean_s", "mean RTT (M7)", True),
                                 ("throughput_bps", "pooled 1-s throughput (M3)", False)):
        out.append(_handoffs_dominate(_monotone(4, name, {c: _cell(t["performance"], c, metric)
                                                          for c in CLASSES}, rising)))
    if by_workload is not None:
        perf = _tables(by_workload, ("performance",))["performance"]
        out.append(_handoffs_dominate(_monotone(
            4, "1-s throughput of the long downloads (M3)",
            {c: _cell(perf, c, "throughput_bps", LONG_WORKLOAD) for c in CLASSES}, False)))
        out[-1].registered = "after run F (27 Nov), having seen it"
    rec = {c: _cell(t7["timeout_recovery"], c, "timeout_recovery_s") for c in CLASSES}
    q = _cell(t7["timeout_recovery"], "high_1_16", "q")
    pd = _cell(t7["timeout_recovery"], "high_1_16", "p_d")
    cells = {"static": rec["static"], "high_0": rec["high_0"], "high_1_16": rec["high_1_16"],
             "q (high_1_16)": q, "p_d (high_1_16)": pd}
    a, b = rec["static"].value, rec["high_1_16"].value
    why = []
    if a is None or b is None:
        why.append("no timeout recovery value for " + ", ".join(c for c in ("static", "high_1_16")
                                                                   if rec[c].value is None))
    elif not b > RECOVERY_RATIO_MIN * a:
        why.append(f"recovery high_1_16 / static = {b / a:.2f}, not > {RECOVERY_RATIO_MIN}")
    if q.value is None or pd.value is None:
        why.append("no q or p_d with handoffs")
    elif not q.value > Q_OVER_PD_MIN * pd.value:
        why.append(f"q / p_d = {q.value / pd.value if pd.value else float('inf'):.2f}, not > {Q_OVER_PD_MIN}")
    holds = not why
    sep = holds and (rec["static"].hi is not None and rec["high_1_16"].lo is not None
                     and rec["static"].hi < rec["high_1_16"].lo
                     and q.lo is not None and pd.hi is not None and q.lo > pd.hi)
    extra = {"recovery_ratio": (b / a) if (a and b) else None,
             "q_over_p_d": (q.value / pd.value) if (q.value is not None and pd.value) else None}
    out.append(Ordering(7, "timeout recovery (M10), q vs p_d (M11, M8)", cells, holds, sep, "; ".join(why), extra))
    return out


def report(orderings: list[Ordering]) -> str:
    """A plain-text line per ordering (for docs and test messages)."""
    lines = []
    for o in orderings:
        cells = ", ".join(f"{k} {c.value:.4g} [{c.lo if c.lo is None else f'{c.lo:.4g}'}, "
                          f"{c.hi if c.hi is None else f'{c.hi:.4g}'}] (n={c.n_flows})"
                          if c.value is not None else f"{k} null (n={c.n_flows})" for k, c in o.cells.items())
        state = "holds" + (" (intervals disjoint)" if o.separated else "") if o.holds else f"FAILS: {o.why}"
        late = "" if o.registered == Ordering.registered else f" [check written {o.registered}]"
        lines.append(f"§9.{o.item} {o.name}{late}: {state}; {cells}")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m hsrtcp.study.orderings STUDY_DIR [RECOVERY_DIR [BY_WORKLOAD_DIR]]
    import sys

    if len(sys.argv) not in (2, 3, 4):
        print("usage: python -m hsrtcp.study.orderings STUDY_DIR [RECOVERY_STUDY_DIR [BY_WORKLOAD_DIR]] "
              "(pooled tables: hsrtcp study without --by; item 7 from the second directory when given; "
              "item 4's long downloads from a study --by workload)", file=sys.stderr)
        from hsrtcp.errors import ExitCode

        sys.exit(ExitCode.USAGE)
    args = sys.argv[1:] + [None] * (4 - len(sys.argv))
    print(report(check(args[0], args[1], args[2])))
