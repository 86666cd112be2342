"""Numbers in docs/ written from the committed data (issue 34): ``python -m hsrtcp.docsgen``.

A document marks each region that comes from data::

    <!-- generated:NAME -->
    <!-- inputs (sha256): FILE HASH, ... -->
    ...
    <!-- /generated -->

and this module rewrites every such region from the committed summaries it names (the study
campaign's tables in tests/data/study*/, the mitigation study's docs/findings/arms.csv), with
the hashes of the files it read on the region's first line. Prose outside the regions is
written by hand and must say only what the regions show. ``--check`` writes nothing and exits
1 naming every region whose text differs from what its data gives (a number edited by hand, or
data changed without regenerating); ``make docs`` runs the rewrite before building the site.

Statistics (docs/study.md, "Statistics"): the unit is the trip — the three workloads of one
repetition run on one compiled trip (lab/campaign.py, ``reseed``) — so intervals resample
trips (:func:`hsrtcp.study.stats.cluster_bootstrap`, within each campaign and scenario) and
the findings' p-values permute within trips (:mod:`hsrtcp.findings.multiplicity`). Cells that
the per-connection rows cannot decompose (pooled 1-s samples, timeout phases, suspensions,
handoff intervals) keep the committed table's interval, which resamples flows, and are marked.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl

from hsrtcp import atomic
from hsrtcp.errors import ExitCode, InputError
from hsrtcp.schemas import RETRANS_CLASSES, SEED_CLASSES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/study.md", "docs/findings.md", "docs/passive.md", "docs/models.md", "docs/lab.md", "docs/mptcp.md")

STUDY = "tests/data/study"
WITH_STATIC = "tests/data/study-with-static"
BY_WORKLOAD = "tests/data/study-by-workload"
V2 = "tests/data/study-v2"  # the v2 channel's campaign (docs/lab.md "Levels"), class with handoffs only
V3 = "tests/data/study-v3"  # the v3 channel's campaigns (docs/lab.md "Channel v3"), three classes
V4 = "tests/data/study-v4"  # the v4 channel's campaigns (docs/lab.md "Channel v4"), three classes
V5 = "tests/data/study-v5"  # the v5 channel's campaigns (docs/lab.md "Channel v5"), three classes
V6 = "tests/data/study-v6"  # the v6 channel's campaigns (docs/lab.md "Channel v6"), three classes
ARMS = "docs/findings/arms.csv"
MPTCP_CONJ = "tests/data/mptcp-conjunction"  # docs/mptcp.md §5: `hsrtcp mptcp` tables of 8 instances

REGION = re.compile(r"<!-- generated:(?P<name>[A-Za-z0-9_.-]+) -->\n(?P<body>.*?)<!-- /generated -->", re.S)
SEED = 0
N_BOOT = 2000
CLASSES = SEED_CLASSES
WORKLOADS = (("all", "all workloads"), ("50KB", "50 KB flows"), ("2MB", "2 MB flows"),
             ("duration", "120-s downloads"))
FLOWS_MARK = "‡"


class Context:
    """The committed inputs, each read once; every file read is hashed for the region."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[str, object] = {}
        self.read: list[str] = []

    def path(self, rel: str) -> Path:
        p = self.root / rel
        if not p.is_file():
            raise InputError(f"{rel}: missing (a generated region of docs/ reads it)")
        if rel not in self.read:
            self.read.append(rel)
        return p

    def _read(self, rel: str, reader) -> pl.DataFrame:
        p = self.path(rel)
        if rel not in self._cache:
            try:
                self._cache[rel] = reader(p)
            except (pl.exceptions.PolarsError, OSError) as exc:
                raise InputError(f"{rel}: cannot be read: {exc}") from None
        return self._cache[rel]

    def parquet(self, rel: str) -> pl.DataFrame:
        return self._read(rel, pl.read_parquet)

    def csv(self, rel: str) -> pl.DataFrame:
        return self._read(rel, pl.read_csv)

    def inputs_line(self) -> str:
        parts = [f"{rel} {hashlib.sha256((self.root / rel).read_bytes()).hexdigest()[:16]}" for rel in self.read]
        return "<!-- inputs (sha256): " + ", ".join(parts) + " -->"


# ---------------------------------------------------------------------------------------------
# numbers


def _sig(v: float, digits: int = 3) -> str:
    """``digits`` significant digits, plain notation, thousands separated (1,615)."""
    if v == 0:
        return "0"
    from math import floor, log10

    d = max(0, digits - 1 - int(floor(log10(abs(v)))))
    s = f"{v:,.{d}f}"
    return s


def _num(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    scale = {"%": 100.0, "ms": 1000.0, "Mbit/s": 1e-6, "s": 1.0, "": 1.0}[unit]
    return _sig(v * scale)


def _cellfmt(value, lo, hi, unit: str, tail: str = "", mark: str = "") -> str:
    if value is None:
        return "no value" + (f" ({tail})" if tail else "")
    u = f" {unit}" if unit else ""
    ci = f" [{_num(lo, unit)}, {_num(hi, unit)}]{mark}" if lo is not None else " (no interval)"
    return f"{_num(value, unit)}{u}{ci}" + (f" ({tail})" if tail else "")


def _count(n: int) -> str:
    return f"{n:,}"


# ---------------------------------------------------------------------------------------------
# the study: per-trip sums and their bootstrap


def _trip_frame(flows: pl.DataFrame) -> pl.DataFrame:
    """The trip of each connection: scenario and repetition (the trip seed is the scenario's
    seed + repetition − 1, shared by the repetition's workloads); the stratum is the campaign
    and scenario (the design fixed how many trips each got)."""
    return flows.with_columns(
        (pl.col("scenario") + pl.lit("#") + pl.col("repetition").cast(pl.String)).alias("_trip"),
        (pl.col("campaign") + pl.lit("/") + pl.col("scenario")).alias("_stratum"))


@dataclass
class Measure:
    """A per-connection numerator and denominator: a mean over flows has denominator 1 where
    the value exists; a pooled share has the counts."""

    num: pl.Expr
    den: pl.Expr


def mean_of(col: str) -> Measure:
    return mean_of_expr(pl.col(col))


def mean_of_expr(e: pl.Expr) -> Measure:
    """The mean over the flows where ``e`` has a value."""
    c = e.cast(pl.Float64)
    ok = c.is_not_null() & c.is_not_nan()
    return Measure(pl.when(ok).then(c).otherwise(None), pl.when(ok).then(1.0).otherwise(None))


def share_of(num: pl.Expr, den: pl.Expr) -> Measure:
    n, d = num.cast(pl.Float64), den.cast(pl.Float64)
    ok = n.is_not_null() & d.is_not_null() & (d > 0)
    return Measure(pl.when(ok).then(n).otherwise(None), pl.when(ok).then(d).otherwise(None))


def _sums(flows: pl.DataFrame, m: Measure, groups: dict[str, pl.Expr]):
    """Per-trip sums of numerator and denominator for each named group of connections:
    (array trips x 2·groups, strata, per group (flows with a value, trips with one))."""
    from hsrtcp.study import stats

    f = _trip_frame(flows).with_columns(m.num.alias("_num"), m.den.alias("_den"))
    values: dict[str, list] = {}
    counts = {}
    for g, sel in groups.items():
        inside = sel & pl.col("_den").is_not_null()
        col = f.select(pl.when(inside).then(pl.col("_num")).otherwise(0.0).alias("n"),
                       pl.when(inside).then(pl.col("_den")).otherwise(0.0).alias("d"))
        values[f"{g}:num"] = col["n"].to_list()
        values[f"{g}:den"] = col["d"].to_list()
        sub = f.filter(inside)
        counts[g] = (sub.height, sub["_trip"].n_unique(), float(sub["_den"].sum()) if sub.height else 0.0)
    sums, keys = stats.cluster_sums(values, f["_trip"].to_list())
    stratum = dict(zip(f["_trip"].to_list(), f["_stratum"].to_list()))
    return sums, [stratum[k] for k in keys], counts


def _boot(sums, strata, statistic, key: str):
    from hsrtcp.study import stats

    return stats.cluster_bootstrap(sums, statistic, n_boot=N_BOOT, rng=stats.rng_for(SEED, key), strata=strata)


def class_sel(cls: str, workload: str = "all") -> pl.Expr:
    sel = pl.col("flow_class").is_in(list(CLASSES[cls]))
    if workload != "all":
        sel &= pl.col("workload") == workload
    return sel


def class_cells(flows: pl.DataFrame, m: Measure, key: str, workload: str = "all"):
    """Per class: (value, lo, hi, flows, trips, Σ denominator), trips resampled."""
    groups = {c: class_sel(c, workload) for c in CLASSES}
    sums, strata, counts = _sums(flows, m, groups)
    out = {}
    for j, c in enumerate(CLASSES):
        v, lo, hi = _boot(sums, strata, lambda t, j=j: t[:, 2 * j] / t[:, 2 * j + 1], f"{key}|{workload}|{c}")
        out[c] = (v, lo, hi, *counts[c])
    return out, sums, strata


def _committed(df: pl.DataFrame, cls: str, metric: str, **by) -> dict:
    sel = (pl.col("flow_class") == cls) & (pl.col("metric") == metric)
    for k, v in by.items():
        sel &= pl.col(k) == v
    r = df.filter(sel)
    if r.height != 1:
        raise InputError(f"{metric}/{cls}: {r.height} rows in the committed table (one expected)")
    return r.row(0, named=True)


def _committed_cell(table: pl.DataFrame, cls: str, metric: str, unit: str, what: str):
    """A class's value in a committed table with its interval, as (cell text, (v, lo, hi)); with
    no value or fewer than 5 flows, (its flow count, None)."""
    r = _committed(table, cls, metric)
    n = r["n_flows"] or 0
    if r["value"] is None or n < 5:
        return f"{n} flows", None
    v = (r["value"], r["value_lo"], r["value_hi"])
    return _cellfmt(*v, unit, f"{n} flows, {_count(r['n'])} {what}", FLOWS_MARK), v


def _agree(rel: str, metric: str, cls: str, row: dict, recomputed: float | None) -> None:
    """The committed table and its own per-connection rows must give the same value (a cell
    the table left null with a note, e.g. too few flows, is not compared)."""
    committed = row["value"]
    if committed is None and (recomputed is None or row.get("note")):
        return
    if committed is None or recomputed is None or abs(committed - recomputed) > 1e-9 * max(1.0, abs(committed)):
        raise InputError(f"{rel}: {metric} of {cls} is {committed} in the table but {recomputed} from "
                         f"study_flows.parquet (tables and connections of different runs?)")


# ---------------------------------------------------------------------------------------------
# study regions


SEEDS = {
    "spurious_rto_rate": "3G 6.3 / 20.68 / 58.39 %; 4G 5.52 / 17.21 / 50.62 %",
    "spurious_2v": "49.24 % (T1-11)",
    "ackl": "4G 1.52 / 2.81 / 7.62 %",
    "dupack": "3G 2.52 / 18.21 / 50.69 %; 4G 1.08 / 5.76 / 12.16 %",
    "p_d": "0.7526 % on HSR (T1-10)",
    "loss_bin": "ordering only (T0-35/36)",
    "loss_full": "0 at > 280 km/h without handoffs (T0-30); 35 % with 9–16 (T0-31, 3G)",
    "rtt": "ordering only (T0-35/36)",
    "tput": "1.66 stationary, 0.58 HSR with handoffs (T3-03)",
    "tput_zero": "13 % (4G, 9–16 handoffs, T0-33); 15.8 % of time suspended (T3-22)",
    "recovery": "0.65 s stationary, 5.05 s HSR (T1-07)",
    "q": "27.26 % (T1-09) vs p_d 0.7526 %",
    "establishment": "rises with speed and handoffs (T0-53)",
    "closure": "closure > establishment (T0-53)",
    "failure": "2 MB > 50 KB (T0-55)",
    "suspension": "27.8 % > 10 s (T3-20)",
    "interval": "12.9 s, 45.1 % ≤ 10 s at cruise (T3-18/19)",
}


def _row(label: str, cells: list[str], seed_key: str) -> str:
    return "| " + " | ".join([label, *cells, SEEDS[seed_key]]) + " |"


def study_main(ctx: Context) -> str:
    """The main table of docs/study.md: pooled over workloads, per class."""
    flows = ctx.parquet(f"{STUDY}/study_flows.parquet")
    rec_flows = ctx.parquet(f"{WITH_STATIC}/study_flows.parquet")
    t = {n: ctx.parquet(f"{STUDY}/{n}.parquet") for n in ("spurious_rto", "dupack", "performance", "handshake",
                                                          "timeout_recovery", "suspensions", "handoff_intervals")}
    rec = ctx.parquet(f"{WITH_STATIC}/timeout_recovery.parquet")
    lines = ["| metric | static | 280–310 km/h, 0 handoffs | 280–310 km/h, 1–16 handoffs | seeds (static / 0 / 1–16) |",
             "|---|---|---|---|---|"]

    def measured_row(m: Measure, key, unit, table, metric, what=None):
        """Per class the value over the flows with its trip interval, checked against the
        committed table; a pooled share (``what`` counted) shows only the count under 5 flows."""
        cells, _, _ = class_cells(flows, m, f"main|{key}")
        out = []
        for c in CLASSES:
            v, lo, hi, n, trips, d = cells[c]
            _agree(STUDY, metric, c, _committed(table, c, metric), v)
            tail = f"{n} flows, {trips} trips" + (f", {_count(int(d))} {what}" if what else "")
            out.append(_cellfmt(v, lo, hi, unit, tail) if n >= 5 or not what else f"{n} flows")
        return out

    def per_flow_row(col, unit, table, metric):
        return measured_row(mean_of(col), col, unit, table, metric)

    def share_row(num, den, unit, table, metric, what, key):
        return measured_row(share_of(num, den), key, unit, table, metric, what)

    def committed_row(table, metric, unit, what):
        return [_committed_cell(table, c, metric, unit, what)[0] for c in CLASSES]

    def bin_share_row(num, den, metric, key):
        """The pooled share of 1-s bins (performance) counted in ``num`` of those in ``den``."""
        return share_row(pl.col(num), pl.col(den), "%", t["performance"], metric, "bins", key)

    lines.append(_row("spurious RTO rate M13 (Table VII)",
                      per_flow_row("spurious_rto_rate", "%", t["spurious_rto"], "spurious_rto_rate"),
                      "spurious_rto_rate"))
    lines.append(_row("spurious share of timeout sequences M12, both captures (pooled)",
                      share_row(pl.col("spurious_2v"), pl.col("rto_sequences"), "%", t["spurious_rto"],
                                "spurious_timeout_share_2v", "sequences", "m12"), "spurious_2v"))
    lines.append(_row("ACKL share M14 (Table VIII, pooled)",
                      share_row(pl.col("spurious_ackl"), pl.col("spurious_ackl") + pl.col("spurious_rtoei"), "%",
                                t["spurious_rto"], "ackl_share", "spurious RTOs", "m14"), "ackl"))
    lines.append(_row("DupACK rate M15 (Table IX)",
                      per_flow_row("dupack_rate", "%", t["dupack"], "dupack_rate"), "dupack"))
    lines.append(_row("data loss p_d M8", per_flow_row("p_d", "%", t["performance"], "p_d"), "p_d"))
    lines.append(_row("loss per 1-s bin M6 (pooled bins)",
                      committed_row(t["performance"], "loss_bin_rate", "%", "bins"), "loss_bin"))
    lines.append(_row("P(1-s loss = 100 %) M6",
                      bin_share_row("loss_full_bins", "loss_bins", "loss_full_share", "m6full"), "loss_full"))
    lines.append(_row("RTT, mean of flows M7",
                      per_flow_row("rtt_mean_s", "ms", t["performance"], "rtt_mean_s"), "rtt"))
    lines.append(_row("throughput M3, pooled 1-s samples",
                      committed_row(t["performance"], "throughput_bps", "Mbit/s", "s"), "tput"))
    lines.append(_row("P(1-s throughput = 0)",
                      bin_share_row("tput_zero_bins", "tput_bins", "throughput_zero_share", "tzero"), "tput_zero"))
    lines.append(_row("timeout recovery M10 (pooled phases; static with the extension)",
                      [committed_row(rec, "timeout_recovery_s", "s", "phases")[0],
                       *committed_row(t["timeout_recovery"], "timeout_recovery_s", "s", "phases")[1:]], "recovery"))
    qcells, _, _ = class_cells(rec_flows, mean_of("q"), "main|q")
    qmain, _, _ = class_cells(flows, mean_of("q"), "main|q")
    qrow = []
    for c in CLASSES:
        src, rel, tab = (qcells, WITH_STATIC, rec) if c == "static" else (qmain, STUDY, t["timeout_recovery"])
        v, lo, hi, n, trips, _ = src[c]
        _agree(rel, "q", c, _committed(tab, c, "q"), v)
        qrow.append(_cellfmt(v, lo, hi, "%", f"{n} flows, {trips} trips" + (", with extension" if c == "static" else "")))
    lines.append(_row("q M11 (mean over flows; static with the extension)", qrow, "q"))
    lines.append(_row("establishment M18",
                      per_flow_row("establishment_s", "ms", t["handshake"], "establishment_s"),
                      "establishment"))
    lines.append(_row("closure M19", per_flow_row("closure_s", "ms", t["handshake"], "closure_s"),
                      "closure"))
    fail = []
    for c in CLASSES:
        parts = []
        for w, name in (("50KB", "50 KB"), ("2MB", "2 MB"), ("duration", "120-s")):
            sub = flows.filter(class_sel(c, w))
            parts.append(f"{name} {int(sub['failed'].sum())} of {sub.height}")
        fail.append(", ".join(parts))
    lines.append(_row("failure M20 (failed of flows)", fail, "failure"))
    s = t["suspensions"]
    susp = []
    for c in CLASSES:
        r = _committed(s, c, "suspension_s")
        if r["value"] is None or (r["n_flows"] or 0) < 5:
            susp.append("–" if c == "static" else f"{r['n_flows'] or 0} flows")
            continue
        g = _committed(s, c, "suspension_gt_10s_share")
        susp.append(f"{_num(r['value'], 's')} s [{_num(r['value_lo'], 's')}, {_num(r['value_hi'], 's')}]{FLOWS_MARK}, "
                    f"median {_num(r['median'], 's')} s; {_num(g['value'], '%')} % [{_num(g['value_lo'], '%')}, "
                    f"{_num(g['value_hi'], '%')}]{FLOWS_MARK} > 10 s ({_count(r['n'])} handoffs, {r['n_flows']} flows)")
    lines.append(_row("suspension per handoff M24", susp, "suspension"))
    hi = t["handoff_intervals"]
    mean = hi.filter(pl.col("metric") == "handoff_interval_s").row(0, named=True)
    le = hi.filter(pl.col("metric") == "handoff_interval_le_10s_share").row(0, named=True)
    per_trip = 3  # the three workloads of a repetition share its trip: each interval is in 3 results
    lines.append(_row("handoff interval M23", ["–", "–",
                      f"mean {_num(mean['value'], 's')} s [{_num(mean['value_lo'], 's')}, {_num(mean['value_hi'], 's')}]"
                      f"{FLOWS_MARK}{FLOWS_MARK}, median {_num(mean['median'], 's')} s, {_num(le['value'], '%')} % ≤ 10 s "
                      f"({_count(mean['n'] // per_trip)} intervals of {mean['n_flows'] // per_trip} trips, each counted "
                      f"{per_trip}×: {_count(mean['n'])} rows from {mean['n_flows']} results)"], "interval"))
    lines.append("")
    lines.append(f"Values are `value [95 % interval] (flows, trips)`. Intervals resample **trips** (2,000 draws, "
                 f"within each campaign and scenario) unless marked {FLOWS_MARK}: those are the committed table's, "
                 f"which resample flows (the connections' rows cannot rebuild pooled 1-s samples, phases or "
                 f"suspensions), and are too narrow where a trip holds several flows; {FLOWS_MARK}{FLOWS_MARK}: "
                 f"resamples results, three per trip.")
    return "\n".join(lines) + "\n"


def study_classes(ctx: Context) -> str:
    """Connections and trips per class, and the workload mix of each class."""
    flows = _trip_frame(ctx.parquet(f"{STUDY}/study_flows.parquet"))
    lines = ["| class | connections | trips | 50 KB | 2 MB | 120-s downloads |", "|---|---|---|---|---|---|"]
    for c in CLASSES:
        sub = flows.filter(class_sel(c))
        n = sub.height
        cells = []
        for w in ("50KB", "2MB", "duration"):
            k = sub.filter(pl.col("workload") == w).height
            cells.append(f"{k} ({_sig(100.0 * k / n, 2)} %)" if n else "0")
        name = {"static": "static", "high_0": "280–310 km/h, 0 handoffs",
                "high_1_16": "280–310 km/h, 1–16 handoffs"}[c]
        extra = ""
        if c == "high_1_16":
            a = sub.filter(pl.col("flow_class") == "high_1_8").height
            extra = f" ({a} with 1–8, {n - a} with 9–16)"
        lines.append(f"| {name} | {n}{extra} | {sub['_trip'].n_unique()} | " + " | ".join(cells) + " |")
    trips = flows["_trip"].n_unique()
    lines.append("")
    lines.append(f"{flows.height} connections from {flows['result'].n_unique()} runs on {trips} trips "
                 f"(a trip: one scenario and repetition; its three workloads ran on it).")
    return "\n".join(lines) + "\n"


ORDER_METRICS = (
    # (key, label, column, unit, rising)
    ("spurious_rto_rate", "spurious RTO rate M13", "spurious_rto_rate", "%", True),
    ("dupack_rate", "DupACK rate M15", "dupack_rate", "%", True),
    ("p_d", "data loss p_d M8", "p_d", "%", True),
    ("rtt_mean_s", "RTT M7", "rtt_mean_s", "ms", True),
    ("throughput_mean_bps", "throughput M3, mean over flows", "throughput_mean_bps", "Mbit/s", False),
)


def _step_verdict(speed, handoff, rising: bool) -> str:
    """Speed and handoff steps as they come out, with the sign the seeds expect."""
    def one(name, v, lo, hi):
        if v is None:
            return f"{name}: no value"
        right = (v > 0) if rising else (v < 0)
        sure = lo is not None and ((lo > 0) if rising else (hi < 0))
        wrong_sure = lo is not None and ((hi < 0) if rising else (lo > 0))
        if right:
            return f"{name} as expected" + ("" if sure else " (interval includes 0)")
        return f"**{name} reversed**" + (" (interval excludes 0)" if wrong_sure else " (interval includes 0)")
    return "; ".join([one("speed", *speed), one("handoffs", *handoff)])


def study_orderings_by_workload(ctx: Context) -> str:
    """docs/metrics.md §3 items 1, 3, 4 on each workload alone and pooled, trips resampled,
    with both steps and whether handoffs dominate speed."""
    flows = ctx.parquet(f"{STUDY}/study_flows.parquet")
    head = ["metric", "workload", "static", "0 handoffs", "1–16 handoffs", "speed step", "handoff step",
            "handoff − speed step", "as it comes out"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, col, unit, rising in ORDER_METRICS:
        for w, wname in WORKLOADS:
            cells, sums, strata = class_cells(flows, mean_of(col), f"order|{key}", w)
            v = {c: cells[c][0] for c in CLASSES}

            def r(j):
                return lambda t: t[:, 2 * j] / t[:, 2 * j + 1]
            sp = _boot(sums, strata, lambda t: r(1)(t) - r(0)(t), f"order|{key}|{w}|speed")
            ho = _boot(sums, strata, lambda t: r(2)(t) - r(1)(t), f"order|{key}|{w}|handoff")
            sign = 1.0 if rising else -1.0
            dom = _boot(sums, strata, lambda t: sign * ((r(2)(t) - r(1)(t)) - (r(1)(t) - r(0)(t))),
                        f"order|{key}|{w}|dominance")
            row = [label, wname]
            for c in CLASSES:
                val, lo, hi, n, trips, _ = cells[c]
                row.append(_cellfmt(val, lo, hi, unit, f"{n}") if val is not None else f"no value ({n})")
            for s in (sp, ho):
                row.append("—" if s[0] is None else f"{_signed(s[0], unit)} [{_signed(s[1], unit)}, {_signed(s[2], unit)}]")
            if dom[0] is None:
                row.append("—")
            else:
                ok = dom[0] >= 0
                row.append(f"{_signed(dom[0], unit)} [{_signed(dom[1], unit)}, {_signed(dom[2], unit)}] "
                           + ("dominate" if ok else "**do not dominate**"))
            row.append(_step_verdict(sp, ho, rising) if None not in v.values() else "a class has no value")
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("Class cells: mean over flows [95 % interval, trips resampled] (flows). Steps: 0 handoffs − static (speed) and 1–16 − 0 handoffs "
                 "(handoffs), trips resampled jointly (the handoff scenario's trips hold flows of both "
                 "high-speed classes); \"handoff − speed step\" is oriented so that > 0 means handoffs dominate.")
    return "\n".join(lines) + "\n"


def _signed(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    s = _num(abs(v), unit)
    return ("+" if v >= 0 else "−") + s


def study_t0_30(ctx: Context) -> str:
    """T0-30: no 1-s bin at 100 % loss above 280 km/h without handoffs."""
    flows = ctx.parquet(f"{STUDY}/study_flows.parquet")
    sub = flows.filter(class_sel("high_0"))
    k, n = int(sub["loss_full_bins"].sum()), int(sub["loss_bins"].sum())
    flows_k = sub.filter(pl.col("loss_full_bins") > 0)
    where = ", ".join(sorted(f"{Path(r).name}" for r in flows_k["result"].to_list()))
    verdict = "holds" if k == 0 else "**does not hold**"
    return (f"T0-30 (no 1-s bin at 100 % loss above 280 km/h without handoffs) {verdict} on the committed "
            f"data: {k} of {_count(n)} bins of the class" + (f" ({where})" if k else "") + ".\n")


def study_orderings_registered(ctx: Context) -> str:
    """The checks of hsrtcp.study.orderings as they were written, on the committed tables,
    each marked with when it was written."""
    from hsrtcp.study import orderings

    ctx.parquet(f"{STUDY}/performance.parquet")
    for n in ("spurious_rto", "dupack", "timeout_recovery"):
        ctx.parquet(f"{STUDY}/{n}.parquet")
    ctx.parquet(f"{WITH_STATIC}/timeout_recovery.parquet")
    ctx.parquet(f"{WITH_STATIC}/performance.parquet")
    ctx.parquet(f"{BY_WORKLOAD}/performance.parquet")
    res = orderings.check(ctx.root / STUDY, ctx.root / WITH_STATIC, ctx.root / BY_WORKLOAD)
    lines = ["| item | check | written | verdict |", "|---|---|---|---|"]
    for o in res:
        state = ("holds" + (", intervals disjoint (flows resampled)" if o.separated else "")) if o.holds \
            else f"**fails**: {o.why}"
        lines.append(f"| {o.item} | {o.name} | {o.registered} | {state} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# findings regions


def _findings(ctx: Context):
    if "_findings" not in ctx._cache:
        from hsrtcp import findings as F
        from hsrtcp.findings import effects as E
        from hsrtcp.findings import questions as Q

        arms = ctx.csv(ARMS)
        eff = E.table(arms, Q.QUESTIONS, Q.groups_of, F.group_members, seed=0, n_boot=2000, min_pairs=3,
                      noise_key=Q.NOISE_KEY)
        cau = E.causes(arms, F.group_members, (*Q.HSR_SCENARIOS, Q.ALL_HSR), seed=0, n_boot=2000)
        ctx._cache["_findings"] = F.Findings(arms=arms, effects=eff, causes=cau)
    else:
        ctx.csv(ARMS)
    return ctx._cache["_findings"]


def findings_question(key: str) -> Callable[[Context], str]:
    def gen(ctx: Context) -> str:
        from hsrtcp import findings as F
        from hsrtcp.findings import markdown, questions as Q

        f = _findings(ctx)
        if key == "levels":
            return markdown.arms_table(f.arms, Q.GROUPS, F.group_members, f._arm_order())
        if key == "causes":
            return markdown.causes_table(f.causes)
        q = Q.BY_KEY[key]
        return markdown.question_table(f.effects, q, Q.groups_of(q))
    return gen


def findings_headlines(ctx: Context) -> str:
    from hsrtcp import findings as F
    from hsrtcp.findings import multiplicity as M

    f = _findings(ctx)
    t = M.table(f.arms, f.effects, F.group_members)
    k, n = M.significant_cells(f.effects)
    aa_k, aa_n = M.aa_rejections(f.arms, F.group_members)
    held = t.filter(pl.col("holds"))
    not_held = t.filter(~pl.col("holds"))
    return (M.markdown(t) + "\n"
            + f"{held.height} of {t.height} headline claims hold at a false discovery rate of 5 % "
              f"(Benjamini–Hochberg), {int((t['p_holm'] <= M.ALPHA).sum())} with Holm's family-wise "
              f"control. Without any correction the tables below mark {k} of {n} effect cells + or −; "
              f"the permutation test by trip calls {aa_k} of {aa_n} A/A cells significant at 5 %.\n")


def findings_families(ctx: Context) -> str:
    from hsrtcp import findings as F
    from hsrtcp.findings import multiplicity as M

    f = _findings(ctx)
    t = M.question_families(f.arms, f.effects, F.group_members)
    held = t.filter(pl.col("q_bh") <= M.ALPHA)
    marked = t.filter(pl.col("verdict").is_in(["helps", "hurts"]))
    return (M.families_markdown(t) + "\n"
            + f"Within their questions {held.height} of these {t.height} pooled cells hold at a false discovery "
              f"rate of 5 % ({int((t['p_holm'] <= M.ALPHA).sum())} with Holm); the uncorrected bootstrap marks "
              f"{marked.height} of them + or −.\n")


def passive_cc_accuracy(ctx: Context) -> str:
    """docs/passive.md: the congestion-control inference against the lab's known senders."""
    from hsrtcp.passive.congestion import accuracy_markdown
    return accuracy_markdown(ctx.path("docs/passive/cc_accuracy.csv"))


def models_on_data(ctx: Context) -> str:
    """docs/models.md: seed 001's comparison of the models on the study's connections."""
    from hsrtcp.models.on_data import lab_ack_loss, markdown, on_data
    flows = ctx.parquet(f"{STUDY}/study_flows.parquet")
    ack = {s: lab_ack_loss(ctx.path(f"scenarios/{s}.toml")) for s in sorted(flows["scenario"].unique().to_list())}
    return markdown(on_data(flows, ack))


# ---------------------------------------------------------------------------------------------
# docs/lab.md: the levels of the seeds, lab v1 and the v2 channel (issue 35)

#: a level counts as reached within this factor of the seed's value (docs/lab.md, declared
#: before the v2 runs)
LEVEL_FACTOR = 1.5
#: the class names of the three-class channels' columns (docs/lab.md "Channel v3" to "Channel v6")
V3_NAMES = {"static": "static", "high_0": "0 handoffs", "high_1_16": "1–16"}
#: the channels with static, no-handoff and handoff classes, each a column pair of the table
THREE_CLASS = (("v3", V3), ("v4", V4), ("v5", V5), ("v6", V6))


def _level_verdict(v, lo, hi, seed: float | None, role: str) -> str:
    """``role``: "held out" (judged: reached or missed, with lab / seed), "calibration" (the
    channel was set from it: shown, not judged), or a reason it is not comparable."""
    if role not in ("held out", "calibration"):
        return role
    if v is None or seed is None:
        return "no value"
    ratio = v / seed
    if role == "calibration":
        return f"calibration target (lab {_sig(ratio, 2)}× seed)"
    inside = seed / LEVEL_FACTOR <= v <= seed * LEVEL_FACTOR
    overlaps = lo is not None and lo <= seed * LEVEL_FACTOR and hi >= seed / LEVEL_FACTOR
    return f"{'reached' if inside and overlaps else 'missed'} (lab {_sig(ratio, 2)}× seed)"


def lab_levels(ctx: Context) -> str:
    """docs/lab.md: per metric the seeds' level, the lab v1 study campaign's per class (values of
    docs/study.md's main table) and the v2 channel's class with handoffs with its interval,
    flows and trips, judged against the held-out seed values by the declared factor."""
    f1 = ctx.parquet(f"{STUDY}/study_flows.parquet")
    f1s = ctx.parquet(f"{WITH_STATIC}/study_flows.parquet")
    t1 = {n: ctx.parquet(f"{STUDY}/{n}.parquet") for n in ("performance", "timeout_recovery")}
    rec1s = ctx.parquet(f"{WITH_STATIC}/timeout_recovery.parquet")
    f2 = ctx.parquet(f"{V2}/study_flows.parquet")
    t2 = {n: ctx.parquet(f"{V2}/{n}.parquet") for n in ("spurious_rto", "dupack", "performance", "timeout_recovery")}
    hc = "high_1_16"

    def v1_cells(m: Measure, key: str, flows=f1, static_flows=None) -> str:
        out = []
        for c in CLASSES:
            cells, _, _ = class_cells(static_flows if (c == "static" and static_flows is not None) else flows, m,
                                      f"main|{key}")
            v, _, _, n, _, _ = cells[c]
            out.append("–" if v is None or n < 5 else _sig(v * 100 if key != "rtt" else v * 1000))
        return " / ".join(out)

    def v1_committed(table, metric, scale, static_table=None) -> str:
        out = []
        for c in CLASSES:
            r = _committed(static_table if (c == "static" and static_table is not None) else table, c, metric)
            out.append("–" if r["value"] is None or (r["n_flows"] or 0) < 5 else _sig(r["value"] * scale))
        return " / ".join(out)

    def v2_cell(m: Measure, key: str, table, metric, unit, what: str | None = None):
        cells, _, _ = class_cells(f2, m, f"v2|{key}")
        v, lo, hi, n, trips, d = cells[hc]
        _agree(V2, metric, hc, _committed(table, hc, metric), v)
        tail = f"{n} flows, {trips} trips" + (f", {_count(int(d))} {what}" if what else "")
        return (_cellfmt(v, lo, hi, unit, tail) if n >= 5 else f"{n} flows"), v, lo, hi

    def committed(table, metric, unit, what, classes=(hc,), names=None):
        """The committed table's value with its interval per class of ``classes``, as (cell
        text, {class: (v, lo, hi) or None}); a class of fewer than 5 flows shows its count. The
        v2 column has the one class hc, unnamed; the v3 column names each class (``names``)."""
        parts, vals = [], {}
        for c in classes:
            cell, vals[c] = _committed_cell(table, c, metric, unit, what)
            parts.append(f"{names[c]} " + (cell if vals[c] else f"– ({cell})") if names else cell)
        return "; ".join(parts), vals

    def v2_committed(table, metric, unit, what):
        """:func:`committed` of hc as v2_cell gives it: (cell text, v, lo, hi)."""
        cell, vals = committed(table, metric, unit, what)
        return (cell, *(vals[hc] or (None, None, None)))

    chans = {ch: (ctx.parquet(f"{d}/study_flows.parquet"),
                  {n: ctx.parquet(f"{d}/{n}.parquet") for n in ("spurious_rto", "dupack", "performance",
                                                                  "timeout_recovery")}, d)
             for ch, d in THREE_CLASS}

    def class3_cells(ch: str, m: Measure, key: str, table, metric, unit, what: str | None = None):
        """Per class (static, 0, 1–16) channel ``ch``'s value with its trip interval, checked
        against the committed table, as (cell text, {class: (v, lo, hi) or None})."""
        flows, _, d = chans[ch]
        cells, _, _ = class_cells(flows, m, f"{ch}|{key}")
        parts, vals = [], {}
        for c in CLASSES:
            v, lo, hi, n, trips, dn = cells[c]
            _agree(d, metric, c, _committed(table, c, metric), v)
            if n < 5:
                parts.append(f"{V3_NAMES[c]} – ({n} flows)")
                vals[c] = None
                continue
            tail = f"{n} flows, {trips} trips" + (f", {_count(int(dn))} {what}" if what else "")
            parts.append(f"{V3_NAMES[c]} {_cellfmt(v, lo, hi, unit, tail)}")
            vals[c] = (v, lo, hi)
        return "; ".join(parts), vals

    rows = []
    chvals: dict[str, dict[str, dict]] = {ch: {} for ch in chans}

    def add(label, seeds, v1, v2, seed, role, per_ch, seeds3=None):
        """``per_ch(ch)``: a three-class channel's (cell text, {class: (v, lo, hi) or None});
        ``seeds3``: the seed value per class it is judged on (held out) or shown against."""
        cell, v, lo, hi = v2
        cols = []
        for ch in chans:
            c3, vals = per_ch(ch)
            chvals[ch][label] = vals
            verdicts = []
            for c, sv in (seeds3 or {}).items():
                x = vals.get(c)
                verdicts.append(f"{V3_NAMES[c]}: " + (_level_verdict(*x, sv, role) if x else "no value"))
            cols += [c3, "; ".join(verdicts) if verdicts else role]
        rows.append(f"| {label} | {seeds} | {v1} | {cell} | {_level_verdict(v, lo, hi, seed, role)} | "
                    + " | ".join(cols) + " |")

    def measured(label, seeds, m: Measure, key, table, metric, unit, seed, role, seeds3=None, what=None,
                 v1_key=None, **v1):
        """A row measured from the flows by ``m`` in every column (v2, v3, v4 checked against
        the committed ``table``'s ``metric``); ``v1_key``, ``v1``: v1's own key and flows."""
        add(label, seeds, v1_cells(m, v1_key or key, **v1) + f" {unit}",
            v2_cell(m, key, t2[table], metric, unit, what), seed, role,
            lambda ch: class3_cells(ch, m, key, chans[ch][1][table], metric, unit, what), seeds3)

    ackl = share_of(pl.col("spurious_ackl"), pl.col("spurious_ackl") + pl.col("spurious_rtoei"))
    measured("spurious RTO rate M13", "4G 5.52 / 17.21 / 50.62 % (3G 6.3 / 20.68 / 58.39)",
             mean_of("spurious_rto_rate"), "spurious_rto_rate", "spurious_rto", "spurious_rto_rate", "%", 0.5062,
             "held out", {"static": 0.0552, "high_0": 0.1721, "high_1_16": 0.5062})
    measured("ACKL share of spurious RTOs M14", "4G 1.52 / 2.81 / 7.62 %", ackl, "m14", "spurious_rto",
             "ackl_share", "%", 0.0762, "held out", {"static": 0.0152, "high_0": 0.0281, "high_1_16": 0.0762},
             "spurious RTOs")
    measured("spurious share of timeouts M12", "49.24 % (T1-11)",
             share_of(pl.col("spurious_2v"), pl.col("rto_sequences")), "m12", "spurious_rto",
             "spurious_timeout_share_2v", "%", 0.4924, "held out", {"high_1_16": 0.4924}, "sequences")
    measured("DupACK rate M15", "4G 1.08 / 5.76 / 12.16 %", mean_of("dupack_rate"), "dupack_rate", "dupack",
             "dupack_rate", "%", 0.1216, "held out", {"static": 0.0108, "high_0": 0.0576, "high_1_16": 0.1216})
    measured("data loss p_d M8", "0.7526 % on HSR (T1-10)", mean_of("p_d"), "p_d", "performance", "p_d", "%",
             0.007526, "calibration", {"high_1_16": 0.007526})
    measured("P(1-s loss = 100 %) M6", "0 at > 280 km/h without handoffs (T0-30); 35 % with 9–16 (T0-31, 3G)",
             share_of(pl.col("loss_full_bins"), pl.col("loss_bins")), "m6full", "performance", "loss_full_share",
             "%", 0.35, "held out", {"high_1_16": 0.35}, "bins")
    measured("P(1-s throughput = 0)", "13 % (4G, 9–16 handoffs, T0-33)",
             share_of(pl.col("tput_zero_bins"), pl.col("tput_bins")), "tzero", "performance",
             "throughput_zero_share", "%", 0.13, "held out", {"high_1_16": 0.13}, "bins")
    add("timeout recovery M10 (pooled phases)", "0.65 s standing, 5.05 s HSR (T1-07)",
        v1_committed(t1["timeout_recovery"], "timeout_recovery_s", 1.0, rec1s) + " s",
        v2_committed(t2["timeout_recovery"], "timeout_recovery_s", "s", "phases"), 5.05, "held out",
        lambda ch: committed(chans[ch][1]["timeout_recovery"], "timeout_recovery_s", "s", "phases", CLASSES,
                             V3_NAMES),
        {"static": 0.65, "high_1_16": 5.05})
    measured("q M11", "27.26 % (T1-09)", mean_of("q"), "q", "timeout_recovery", "q", "%", 0.2726, "calibration",
             {"high_1_16": 0.2726}, static_flows=f1s)
    measured("RTT, mean of flows M7",
             "99.6 % < 30 ms standing, 97.3 % driving (T3-06); 11.4 % ≥ 0.4 s on HSR (T3-05)",
             mean_of("rtt_mean_s"), "rtt_mean_s", "performance", "rtt_mean_s", "ms", None,
             "not judged: the seeds give shares of RTT samples, the tables a mean per flow", v1_key="rtt")
    add("throughput M3, pooled 1-s samples", "1.66 standing, 0.58 HSR with handoffs Mbit/s (T3-03)",
        v1_committed(t1["performance"], "throughput_bps", 1e-6) + " Mbit/s",
        v2_committed(t2["performance"], "throughput_bps", "Mbit/s", "s"), 0.58e6, "calibration",
        lambda ch: committed(chans[ch][1]["performance"], "throughput_bps", "Mbit/s", "s", CLASSES, V3_NAMES),
        {"static": 1.66e6, "high_1_16": 0.58e6})
    def recovery_ratio_row() -> str:
        """T1-07's ratio, HSR over standing: v1 and the three-class channels have both classes
        (committed values; no interval: the two come from different phases)."""
        r1 = (_committed(t1["timeout_recovery"], hc, "timeout_recovery_s")["value"],
              _committed(rec1s, "static", "timeout_recovery_s")["value"])
        v1r = f"{_sig(r1[0] / r1[1], 2)}× (1–16 / static)" if None not in r1 else "–"
        cols = []
        for ch in chans:
            x3 = chvals[ch]["timeout recovery M10 (pooled phases)"]
            if x3.get(hc) and x3.get("static"):
                ratio = x3[hc][0] / x3["static"][0]
                inside = 7.8 / LEVEL_FACTOR <= ratio <= 7.8 * LEVEL_FACTOR
                cols += [f"{_sig(ratio, 2)}× (1–16 / static)",
                         f"{'reached' if inside else 'missed'} (lab {_sig(ratio / 7.8, 2)}× seed; no interval)"]
            else:
                cols += ["–", "no value (a class has fewer than 5 flows with a phase)"]
        return (f"| timeout recovery ratio M10, HSR / standing | 7.8× (T1-07: 5.05 / 0.65 s) | {v1r} "
                f"| – (no static class) | – | " + " | ".join(cols) + " |")

    def class3_foot(ch: str) -> str:
        """The orderings of docs/metrics.md §3 a three-class channel's classes can show (items 1,
        3, 4; 7 is the ratio row), each on the class values (the intervals are in the cells)."""
        def order(label, rising=True):
            x = chvals[ch][label]
            if any(x.get(c) is None for c in CLASSES):
                return "not judged (a class has no value)"
            a, b, c = (x[k][0] for k in CLASSES)
            ok = (a < b < c) if rising else (a > b > c)
            sep = (x["static"][2] < x["high_0"][1] and x["high_0"][2] < x[hc][1]) if rising else \
                (x["static"][1] > x["high_0"][2] and x["high_0"][1] > x[hc][2])
            return ("holds" + (", intervals disjoint" if sep else ", intervals overlap")) if ok else "**does not hold**"
        items = [("1. spurious RTO rate static < 0 < 1–16 handoffs", order("spurious RTO rate M13")),
                 ("3. DupACK rate rises with speed and handoffs", order("DupACK rate M15")),
                 ("4. loss rises", order("data loss p_d M8")),
                 ("4. RTT rises", order("RTT, mean of flows M7")),
                 ("4. throughput falls", order("throughput M3, pooled 1-s samples", rising=False))]
        f3 = chans[ch][0]
        n3 = f3.height
        runs3 = f3["result"].n_unique()
        trips3 = _trip_frame(f3)["_trip"].n_unique()
        counts = ", ".join(f"{V3_NAMES[c]} {f3.filter(class_sel(c)).height}" for c in CLASSES)
        return (f"\n{ch}: {n3} connections in {runs3} runs on {trips3} trips ({counts}; the rest in no column). "
                f"{ch}'s orderings (docs/metrics.md §3, static → 0 → 1–16 handoffs): "
                + "; ".join(f"{k}: {v}" for k, v in items) + ".\n")

    classes = f2.filter(class_sel(hc))
    other = f2.filter(~class_sel(hc))
    head = ["| metric | seeds (static / 0 / 1–16 handoffs) | lab v1 (static / 0 / 1–16) "
            "| lab v2 (1–16 handoffs) | v2 against the seed's 1–16 value "
            + "".join(f"| lab {ch} (static; 0; 1–16 handoffs) | {ch} against the seeds " for ch in chans) + "|",
            "|---|---|---|---|---" + "|---|---" * len(chans) + "|"]
    runs = f2["result"].n_unique()
    trips = _trip_frame(classes)["_trip"].n_unique()
    foot = (f"\nv2: {classes.height} connections with 1–16 handoffs of {f2.height} in {runs} runs on "
            f"{_trip_frame(f2)['_trip'].n_unique()} trips ({trips} trips hold one with handoffs; the "
            f"{other.height} others, mostly 50 KB flows between handoffs, are in no column). Values are "
            f"`value [95 % interval] (flows, trips)`, intervals resampling trips unless marked {FLOWS_MARK} "
            f"(the committed table's, resampling flows), as in docs/study.md. A held-out level is reached when "
            f"the lab's value lies within a factor {LEVEL_FACTOR:g} of the seed's and its interval meets that band.\n")
    return "\n".join(head + rows + [recovery_ratio_row()]) + "\n" + foot + "".join(class3_foot(ch) for ch in chans)


# ---------------------------------------------------------------------------------------------
# docs/mptcp.md §5: the conjunction campaign's instances against seed 004 (issue 33/35)

#: seed 004's values per summary row (S4, (M, U) at 280–310 km/h, LIA; docs/metrics.md §4)
MPTCP_SEED = {
    "u_c": "≈ 1.0 (static ≈ 1.4), range 0–2.9 (T4-20/21)",
    "p_uc": "51 % (T4-22)",
    "u_t": "– (Fig. 5b)",
    "classes": "21 / 29 / 50 % (T4-23)",
    "neg_ut": "> 75 % (T4-24)",
    "degraded": "39.7 %, 62.5 %, 100 % (T4-26)",
}
_MPTCP_CLASSES = ("positive", "semi-positive", "negative")


def mptcp_lab_instances(ctx: Context) -> str:
    """docs/mptcp.md §5: per instance U_c, U_t, class, R'_n/R_n, A25 onsets and the server's
    kernel counters, then the summary beside seed 004's values, from the committed tables."""
    inst = ctx.parquet(f"{MPTCP_CONJ}/mptcp_instances.parquet")
    paths = ctx.parquet(f"{MPTCP_CONJ}/mptcp_paths.parquet")
    need = {"instance", "repetition", "scenario_seed", "u_c", "u_t", "instance_class", "kernel_subflow_stale",
            "kernel_mptcp_retrans", "mapping", "cc"}
    for rel, df, cols in (("mptcp_instances", inst, need),
                          ("mptcp_paths", paths, {"instance", "path", "subflow_utilization", "degraded",
                                                  "degradation_onset_s", "rate_subflow_bps", "rate_single_path_bps"})):
        missing = sorted(cols - set(df.columns))
        if missing:
            raise InputError(f"{MPTCP_CONJ}/{rel}.parquet: no column {', '.join(missing)}")
    inst = inst.sort("repetition")
    carriers = sorted(paths["path"].unique().to_list())

    def f2(v) -> str:
        return "–" if v is None else f"{v:.2f}"

    def cnt(v) -> str:
        return "–" if v is None else str(v)

    rows = ["| run (seed) | U_c | U_t | class | " + " | ".join(f"R'_{c}/R_{c}" for c in carriers)
            + " | A25 degradation onset (path " + " / ".join(map(str, carriers)) + ") | server SubflowStale "
            "| server MPTCPRetrans |", "|---" * (7 + len(carriers)) + "|"]
    degraded_runs = set()
    for r in inst.iter_rows(named=True):
        mine = paths.filter(pl.col("instance") == r["instance"])
        by_path = {p["path"]: p for p in mine.iter_rows(named=True)}
        util = [f2(by_path[c]["subflow_utilization"]) if c in by_path else "–" for c in carriers]
        onsets = [f"{by_path[c]['degradation_onset_s']} s" if c in by_path and by_path[c]["degraded"] else "–"
                  for c in carriers]
        if any(p["degraded"] for p in by_path.values()):
            degraded_runs.add(r["instance"])
        rows.append(f"| r{r['repetition']} ({r['scenario_seed']}) | {f2(r['u_c'])} | {f2(r['u_t'])} | "
                    f"{r['instance_class'] or '–'} | " + " | ".join(util) + f" | {' / '.join(onsets)} | "
                    f"{cnt(r['kernel_subflow_stale'])} | {cnt(r['kernel_mptcp_retrans'])} |")

    n = inst.height
    u_c, u_t = inst["u_c"].drop_nulls(), inst["u_t"].drop_nulls()
    by_class = {c: inst.filter(pl.col("instance_class") == c) for c in _MPTCP_CLASSES}
    neg = by_class["negative"]
    summary = [f"| quantity | lab ({n} instances, {'/'.join(sorted(inst['cc'].unique().to_list()))} uncoupled) "
               f"| seed 004, (M, U) at 280–310 km/h, LIA |", "|---|---|---|",
               f"| median U_c | {f2(u_c.median())} (range {f2(u_c.min())}–{f2(u_c.max())}) | {MPTCP_SEED['u_c']} |",
               f"| P(U_c > 1) | {int((u_c > 1).sum())}/{u_c.len()} = {(u_c > 1).mean() * 100:.0f} % "
               f"| {MPTCP_SEED['p_uc']} |",
               f"| median U_t | {f2(u_t.median())} (range {f2(u_t.min())}–{f2(u_t.max())}) | {MPTCP_SEED['u_t']} |",
               "| classes positive / semi-positive / negative | "
               + " / ".join(str(by_class[c].height) for c in _MPTCP_CLASSES) + f" of {n} ("
               + " / ".join(f"{by_class[c].height / n * 100:.0f}" for c in _MPTCP_CLASSES)
               + f" %) | {MPTCP_SEED['classes']} |",
               f"| negative instances with U_t < 50 % | {int((neg['u_t'] < 0.5).sum())} of {neg.height}"
               + (f" (U_t {', '.join(f2(v) for v in neg['u_t'].to_list())})" if neg.height else "")
               + f" | {MPTCP_SEED['neg_ut']} |",
               "| instances with a degraded subflow (A25) | "
               + ", ".join(f"{c} {by_class[c].filter(pl.col('instance').is_in(list(degraded_runs))).height}"
                           f"/{by_class[c].height}" for c in _MPTCP_CLASSES) + f" | {MPTCP_SEED['degraded']} |"]

    carried = paths.filter(pl.col("rate_subflow_bps") > 0)
    idle = paths.filter(~(pl.col("rate_subflow_bps") > 0)).join(
        inst.select("instance", "repetition", *(["kernel_mp_join_ack_rx"] if "kernel_mp_join_ack_rx" in inst.columns else [])),
        on="instance")
    # the join count says whether the idle subflow was made at all
    idle_txt = ", ".join(f"r{r['repetition']} path {r['path']} (server MPJoinAckRx {cnt(r.get('kernel_mp_join_ack_rx'))})"
                         for r in idle.sort("repetition", "path").iter_rows(named=True))
    mb = 1e-6
    foot = (f"\nSubflows by {', '.join(sorted(inst['mapping'].unique().to_list()))}; A25 with the default rule "
            f"(`hsrtcp mptcp` without options). Single-path rates R_n {paths['rate_single_path_bps'].min() * mb:.2f}–"
            f"{paths['rate_single_path_bps'].max() * mb:.2f} Mbit/s; R'_n/R_n of the subflows that carried data "
            f"{f2(carried['subflow_utilization'].min())}–{f2(carried['subflow_utilization'].max())}; "
            f"subflows that carried nothing (R'_n = 0): {idle_txt or 'none'}.\n")
    return "\n".join(rows) + "\n\n" + "\n".join(summary) + "\n" + foot


#: per audited study campaign: its study tables and its truth per connection (docs/accuracy.md)
TRUTH = {"v5": (V5, "docs/audit/v5/connections.csv"), "v6": (V6, "docs/audit/v6/connections.csv")}
#: the server row's classes of re-send (schemas.RETRANS_CLASSES) that the levels table names
_RESEND = (("rto", "RTO"), ("tlp", "TLP"), ("fast", "fast retransmit"), ("sack_refill", "SACK refill"))


def _with_truth(ctx: Context, campaign: str) -> pl.DataFrame:
    """A study campaign's flows (:data:`TRUTH`), each with its connection's truth (``hsrtcp
    audit`` of the same captures), joined by run and first packet time (within 1 ms), in the
    study's row order."""
    study, audit = TRUTH[campaign]
    f = ctx.parquet(f"{study}/study_flows.parquet").with_row_index("_row").with_columns(
        pl.col("result").str.split("/").list.last().alias("_run"))
    c = pl.read_csv(ctx.path(audit), infer_schema_length=None).rename({"run": "_run"})
    keep = ["_run", "truth_first_ts", "truth_retransmissions", "truth_m13_packets", "truth_episodes",
            "truth_spurious_episodes", "kernel_total_rto", "truth_rto_expirations",
            *[f"truth_{w}_{k}" for k in (*RETRANS_CLASSES, "unlabelled") for w in ("retrans", "needless")]]  # the audit's columns
    j = f.sort("first_ts").join_asof(c.select(keep).sort("truth_first_ts"), left_on="first_ts",
                                     right_on="truth_first_ts", by="_run", strategy="nearest", tolerance=0.001,
                                     check_sortedness=False)
    if j["truth_first_ts"].null_count():
        raise InputError(f"{audit}: {j['truth_first_ts'].null_count()} flows of {study} have no audited connection")
    return j.sort("_row")


def lab_truth(campaign: str) -> Callable[[Context], str]:
    """docs/lab.md "Channel v5" / "Channel v6": the levels question answered with the truth
    (issue 35), for one audited campaign of :data:`TRUTH`."""
    return lambda ctx: _lab_truth(ctx, campaign)


def _lab_truth(ctx: Context, campaign: str) -> str:
    """For the class with 1–16 handoffs, M13 as the lab measures it and as the truth gives it,
    and M13 if a method also counted the needless re-sends of other classes (by the server
    row's label) as spurious timeout re-sends; the spurious share of timeouts, lab and truth;
    the re-sends of the class by label with the needless ones."""
    j = _with_truth(ctx, campaign)
    hc, seed_m13, seed_share = "high_1_16", 0.5062, 0.4924
    n = {k: pl.col(f"truth_needless_{k}") for k, _ in _RESEND}
    m13 = pl.col("truth_m13_packets")

    def rate(extra) -> Measure:  # a per-flow share of the truth's re-sends: mean over flows
        r = pl.col("truth_retransmissions")
        return mean_of_expr(pl.when(r > 0).then((m13 + extra) / r))

    def cell(m: Measure, key: str, seed: float, what: str | None = None) -> str:
        v, lo, hi, k, trips, d = class_cells(j, m, key)[0][hc]
        tail = f"{k} flows, {trips} trips" + (f", {_count(int(d))} {what}" if what else "")
        return f"{_cellfmt(v, lo, hi, '%', tail)} | {_sig(v / seed, 2)}×"

    h = j.filter(class_sel(hc))
    same = h.filter(pl.col("truth_retransmissions") > 0).select(
        ((pl.col("truth_m13_packets") / pl.col("truth_retransmissions") - pl.col("spurious_rto_rate")).abs()
         < 1e-12).sum()).item()
    flows_with = h.filter(pl.col("truth_retransmissions") > 0).height
    zero = pl.lit(0)
    rows = ["| quantity, class with 1–16 handoffs | value [95 % CI] (flows, trips) | lab / seed |", "|---|---|---|",
            f"| M13 as the lab measures it (analyzer, matched rows) | "
            f"{cell(mean_of('spurious_rto_rate'), f'{campaign}|spurious_rto_rate', seed_m13)} |",
            f"| M13 by the truth (both captures, the kernel's RTOs; equal to the lab's on {same} of "
            f"{flows_with} flows) | {cell(rate(zero), f'{campaign}-truth|m13', seed_m13)} |",
            f"| M13 + needless TLPs | {cell(rate(n['tlp']), f'{campaign}-truth|m13+tlp', seed_m13)} |",
            f"| M13 + needless TLPs, fast retransmits and SACK refills | "
            f"{cell(rate(n['tlp'] + n['fast'] + n['sack_refill']), f'{campaign}-truth|m13+all', seed_m13)} |",
            f"| spurious share of timeouts as the lab measures it (pooled) | "
            f"{cell(share_of(pl.col('spurious_2v'), pl.col('rto_sequences')), f'{campaign}|m12', seed_share, 'sequences')} |",
            f"| spurious share of timeouts by the truth (pooled) | "
            f"{cell(share_of(pl.col('truth_spurious_episodes'), pl.col('truth_episodes')), f'{campaign}-truth|m12', seed_share, 'sequences')} |"]
    tot = h.select(*[pl.col(f"truth_{w}_{k}").sum() for k, _ in _RESEND for w in ("retrans", "needless")],
                   pl.col("truth_retransmissions").sum(), m13.sum(), pl.col("rto_sequences").sum(),
                   pl.col("truth_episodes").sum(), pl.col("kernel_total_rto").sum(),
                   pl.col("truth_rto_expirations").sum()).row(0, named=True)
    needless = sum(tot[f"truth_needless_{k}"] for k, _ in _RESEND)
    rows += ["", "| re-sends of the class, by the server row's label | sent | needless by the truth |",
             "|---|---|---|"]
    rows += [f"| {name} | {_count(tot[f'truth_retrans_{k}'])} | {_count(tot[f'truth_needless_{k}'])} |"
             for k, name in _RESEND]
    rows += [f"| all | {_count(tot['truth_retransmissions'])} | {_count(needless)} |",
             f"| M13's numerator (the re-sends of spurious timeouts) | {_count(tot['truth_m13_packets'])} | |",
             f"| timeout sequences: lab (matched rows) / truth; RTOs: kernel / truth | "
             f"{_count(tot['rto_sequences'])} / {_count(tot['truth_episodes'])}; "
             f"{_count(tot['kernel_total_rto'])} / {_count(tot['truth_rto_expirations'])} | |"]
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[[Context], str]] = {
    "models-on-data": models_on_data,
    "mptcp-lab-instances": mptcp_lab_instances,
    "lab-levels": lab_levels,
    **{f"lab-{c}-truth": lab_truth(c) for c in TRUTH},
    "passive-cc-accuracy": passive_cc_accuracy,
    "findings-families": findings_families,
    "study-classes": study_classes,
    "study-main": study_main,
    "study-t0-30": study_t0_30,
    "study-orderings": study_orderings_registered,
    "study-orderings-by-workload": study_orderings_by_workload,
    "findings-headlines": findings_headlines,
    **{f"findings-{k}": findings_question(k) for k in ("noise", "cc", "frto", "quickack", "rto_min", "tlp_rack",
                                                        "static", "levels", "causes")},
}


# ---------------------------------------------------------------------------------------------
# the rewrite


def render(text: str, root: Path, where: str = "") -> str:
    """``text`` with every generated region rewritten from the data under ``root``."""
    def one(m: re.Match) -> str:
        name = m.group("name")
        gen = GENERATORS.get(name)
        if gen is None:
            line = text.count("\n", 0, m.start()) + 1
            raise InputError(f"{where}:{line}: no generator for region '{name}' "
                             f"(known: {', '.join(sorted(GENERATORS))})")
        ctx = Context(root)
        body = gen(ctx)
        return f"<!-- generated:{name} -->\n{ctx.inputs_line()}\n{body}<!-- /generated -->"

    return REGION.sub(one, text)


def regions(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in REGION.finditer(text)}


def run(root: Path, docs=DOCS, check: bool = False) -> list[str]:
    """Rewrite (or with ``check`` only compare) the documents; returns "doc: region" for every
    region that differs from what its data gives."""
    changed = []
    for rel in docs:
        p = root / rel
        if not p.is_file():
            raise InputError(f"{rel}: missing")
        old = p.read_text(encoding="utf-8")
        new = render(old, root, rel)
        if new != old:
            a, b = regions(old), regions(new)
            changed += [f"{rel}: {n}" for n in b if a.get(n) != b[n]] or [rel]
            if not check:
                atomic.write_text(p, new)
    return changed


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m hsrtcp.docsgen",
                                 description="Rewrite the generated regions of docs/ from the committed data.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a region differs")
    ap.add_argument("--root", default=str(ROOT), help="repository root (default: this checkout)")
    ap.add_argument("docs", nargs="*", help=f"documents relative to the root (default: {' '.join(DOCS)})")
    a = ap.parse_args(argv)
    try:
        changed = run(Path(a.root), tuple(a.docs) or DOCS, check=a.check)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    for c in changed:
        print(("differs from its data: " if a.check else "rewritten: ") + c, file=sys.stderr)
    return ExitCode.FAILED if (a.check and changed) else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
