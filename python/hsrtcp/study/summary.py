"""The short text ``hsrtcp study`` prints: flows per class, then the headline value of each
seed table for seed 000's three classes (and every other class with flows), then the notes.

One line per metric; columns are class groups; a cell is ``value [lo, hi] (n)`` or the
cell's note. The full tables (every ``--by`` value, medians) are in the Parquet files.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.study import groups, stats
from hsrtcp.units import RATE, SHARE, TIME, human

#: (table, metric, label, base unit): each value is printed in the unit that reads best for
#: it (hsrtcp.units.human: 66.5 µs, 13 s, 1.5 Mbit/s, 5.8 %), as the analyze summary does
HEADLINES = (
    ("performance", "throughput_bps", "throughput, pooled 1-s (M3)", RATE),
    ("performance", "throughput_zero_share", "P(1-s throughput = 0)", SHARE),
    ("performance", "rtt_mean_s", "RTT, mean of flows (M7)", TIME),
    ("performance", "p_d", "data loss p_d (M8)", SHARE),
    ("spurious_rto", "spurious_rto_rate", "spurious RTO rate (M13) [Table VII]", SHARE),
    ("spurious_rto", "ackl_share", "ACKL share (M14) [Table VIII]", SHARE),
    ("dupack", "dupack_rate", "DupACK rate (M15) [Table IX]", SHARE),
    ("handshake", "establishment_s", "establishment (M18)", TIME),
    ("handshake", "closure_s", "closure (M19)", TIME),
    ("timeout_recovery", "timeout_recovery_s", "timeout recovery (M10)", TIME),
    ("timeout_recovery", "q", "q (M11)", SHARE),
    ("suspensions", "suspension_s", "suspension per handoff (M24)", TIME),
)


def _fmt(row: dict, unit: str) -> str:
    if row["value"] is None:
        return row["note"] or "–"
    text = human(row["value"], unit)
    if row["value_lo"] is not None:
        text += f" [{human(row['value_lo'], unit)}, {human(row['value_hi'], unit)}]"
    return f"{text} (n={row['n_flows']})"


#: --by combinations printed (the rest are in the files)
MAX_COMBOS = 8


def render(study) -> str:
    classes = study.tables["classes"]
    by = list(study.options.by)
    lines = [f"study: {study.rows('study_flows')} flows from {len(study.inputs)} results directories"
             + (f", by {', '.join(by)}" if by else "")]
    total = classes.filter(pl.col("flow_class") != "all").group_by("flow_class", maintain_order=True).agg(
        pl.col("n_flows").sum())
    lines.append("flows per class: " + ", ".join(f"{c} {n}" for c, n in total.iter_rows()))
    seed = ("static", "high_0", "high_1_16")
    shown = [*seed, *[c for c in total["flow_class"].to_list() if c not in (*seed, "high_1_8", "high_9_16")]]
    names = groups.CLASS_NAMES
    for cls in shown:
        lines.append(f"  {cls}: {names.get(cls, cls)}")
    reasons = {r["flow_class"]: r["reasons"] for r in classes.iter_rows(named=True)
               if r["flow_class"] in ("other", "unknown") and r["reasons"] and not by}
    for cls, why in reasons.items():
        lines.append(f"  ({cls}: {why})")
    lines.append(f"value [{round(study.options.level * 100)} % bootstrap interval, from "
                 f"{stats.MIN_INTERVAL_FLOWS} flows] (n = flows); columns: {' | '.join(shown)}")
    combos = (study.tables["performance"].select(by).unique(maintain_order=True).rows() if by else [()])
    for combo in combos[:MAX_COMBOS]:
        where = pl.lit(True)
        for name, value in zip(by, combo):
            where = where & (pl.col(name).is_null() if value is None else (pl.col(name) == value))
        if by:
            lines.append(", ".join(f"{n}={'null' if v is None else v}" for n, v in zip(by, combo)) + ":")
        for table, metric, label, unit in HEADLINES:
            t = study.tables[table].filter(where & (pl.col("metric") == metric))
            cells = []
            for cls in shown:
                rows = t.filter(pl.col("flow_class") == cls)
                cells.append(_fmt(rows.row(0, named=True), unit) if rows.height else "no flows")
            lines.append(f"  {label}: " + " | ".join(cells))
    if len(combos) > MAX_COMBOS:
        lines.append(f"... {len(combos) - MAX_COMBOS} more --by combinations in the tables")
    for note in study.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
