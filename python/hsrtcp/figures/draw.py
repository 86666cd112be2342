"""The gallery's three kinds of drawing (CDF per group, bars with intervals, a series over
time) and the numbers written beside them, in the look of :mod:`hsrtcp.plot.style`."""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.plot import style
from hsrtcp.study import stats

LINESTYLES = ("-", "--", "-.", ":")


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.4g} %"


def fmt(v: float | None, unit: str, missing: str = "–") -> str:
    """A value in the unit a reader expects: shares in %, seconds in ms below 1 s, bit/s in Mbit/s,
    speeds in whole km/h; ``missing`` for a null or non-finite value (never a format error)."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return missing
    if unit in ("share", "fraction"):
        return f"{100 * v:.3g} %"
    if unit == "s":
        return f"{1000 * v:.3g} ms" if abs(v) < 1 else f"{v:.3g} s"
    if unit == "bit/s":
        return f"{v / 1e6:.3g} Mbit/s"
    if unit == "dBm":
        return f"{v:.1f} dBm"
    if unit == "km/h":
        return f"{v:.0f} km/h"
    return f"{v:.4g} {unit}".strip()


def cell_text(value, lo, hi, unit: str, n_flows: int, n: int | None = None, note: str | None = None) -> str:
    """``value [lo, hi] (k flows)``, as docs/study.md writes a cell."""
    if value is None:
        return f"– ({n_flows} flows{': ' + note if note else ''})"
    iv = f" [{fmt(lo, unit)}, {fmt(hi, unit)}]" if lo is not None and hi is not None else ""
    count = f"{n_flows} flows" + (f", n = {n:,}" if n is not None and n != n_flows else "")
    return f"{fmt(value, unit)}{iv} ({count})"


def group_cells(df: pl.DataFrame, groups: list[str], unit: str, key: str, seed: int = 0) -> tuple[pl.DataFrame, list[str]]:
    """Mean over flows with a percentile bootstrap interval (hsrtcp.study.stats.per_flow,
    1000 draws) and the median, per group of a (group, value) frame: a table and one line
    of text per group."""
    rows, lines = [], []
    for g in groups:
        v = df.filter(pl.col("group") == g)["value"].to_list()
        c = stats.per_flow(v, min_flows=1, n_boot=1000, rng=stats.rng_for(seed, f"{key}/{g}"),
                           min_interval=stats.MIN_INTERVAL_FLOWS)
        rows.append({"group": g, "n_flows": c.n_flows, "mean": c.value, "mean_lo": c.value_lo,
                     "mean_hi": c.value_hi, "median": c.median})
        lines.append(f"{g}: mean {cell_text(c.value, c.value_lo, c.value_hi, unit, c.n_flows)}, "
                     f"median {fmt(c.median, unit)}")
    schema = {"group": pl.String, "n_flows": pl.Int64, "mean": pl.Float64, "mean_lo": pl.Float64,
              "mean_hi": pl.Float64, "median": pl.Float64}
    return pl.DataFrame(rows, schema=schema), lines


def _peak(values) -> float:
    """The largest finite magnitude of ``values``; 0 when there is none (empty, or all NaN
    after nulls: np.nanmax would print "All-NaN slice encountered" on the user's stderr)."""
    v = np.abs(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    return float(v.max()) if v.size else 0.0


def _scale(unit: str, values: np.ndarray) -> tuple[float, str]:
    if unit == "bit/s":
        return style.scale_for(_peak(values), "bit/s")
    if unit == "s":
        return (1e-3, "ms") if _peak(values) < 1.0 else (1.0, "s")
    if unit == "share":
        return 0.01, "%"
    return 1.0, unit


@style.styled
def cdf(df: pl.DataFrame, groups: list[str], label: str, unit: str, title: str, logx: bool = False):
    """One step curve per group of a (group, value) frame."""
    fig, ax = style.new_figure()
    div, shown = _scale(unit, df["value"].to_numpy())
    for i, g in enumerate(groups):
        v = np.sort(df.filter(pl.col("group") == g)["value"].to_numpy()) / div
        if v.size == 0:
            continue
        p = np.arange(1, v.size + 1) / v.size
        ax.step(np.r_[v[0], v], np.r_[0.0, p], where="post", color=style.CYCLE[i % len(style.CYCLE)],
                linestyle=LINESTYLES[(i // 2) % len(LINESTYLES)], label=f"{g} (n = {v.size:,})", gid=f"cdf-{g}")
    if logx:
        ax.set_xscale("symlog" if (df["value"] <= 0).any() else "log")
    ax.set_ylim(0, 1.02)
    _label(ax, f"{label} ({shown})", "CDF", title, "lower right")
    return fig


@style.styled
def bars(df: pl.DataFrame, label: str, unit: str, title: str, hue: str | None = None):
    """Bars of ``value`` per ``group`` with [value_lo, value_hi] as error bars; ``hue``: a
    second column, one bar colour per value."""
    fig, ax = style.new_figure()
    div, shown = _scale(unit, df["value"].drop_nulls().to_numpy())
    groups = list(dict.fromkeys(df["group"].to_list()))
    hues = list(dict.fromkeys(df[hue].to_list())) if hue else [None]
    width = 0.8 / len(hues)
    for k, h in enumerate(hues):
        part = df if h is None else df.filter(pl.col(hue) == h)
        xs, ys, err = [], [], [[], []]
        for row in part.iter_rows(named=True):
            if row["value"] is None:
                continue
            x = groups.index(row["group"]) + (k - (len(hues) - 1) / 2) * width
            y = row["value"] / div
            lo = row.get("value_lo")
            hi = row.get("value_hi")
            xs.append(x)
            ys.append(y)
            err[0].append(y - lo / div if lo is not None else 0.0)
            err[1].append(hi / div - y if hi is not None else 0.0)
        ax.bar(xs, ys, width=width * 0.9, color=style.CYCLE[k % len(style.CYCLE)], label=h, yerr=err,
               error_kw={"elinewidth": 0.7, "capsize": 1.5})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel(f"{label} ({shown})")
    ax.set_title(title, loc="left")
    if any(h is not None for h in hues):  # a hue column with no value (no workload) names nothing
        ax.legend(loc="upper left")
    return fig


@style.styled
def measured_predicted(df: pl.DataFrame, groups: list[str], unit: str, title: str):
    """One point per flow of a (group, measured, predicted) frame on log axes, with y = x."""
    fig, ax = style.new_figure()
    lo, hi = np.inf, 0.0
    for i, g in enumerate(groups):
        part = df.filter((pl.col("group") == g) & (pl.col("measured") > 0) & (pl.col("predicted") > 0))
        if part.is_empty():
            continue
        x, y = part["measured"].to_numpy(), part["predicted"].to_numpy()
        ax.scatter(x, y, s=5, alpha=0.6, color=style.CYCLE[i % len(style.CYCLE)], marker="os^v"[i % 4],
                   linewidths=0, label=f"{g} (n = {x.size:,})", gid=f"points-{g}")
        lo, hi = min(lo, x.min(), y.min()), max(hi, x.max(), y.max())
    if hi > 0:
        ax.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color="grey", lw=0.7, ls="--", label="y = x")
        ax.set_xscale("log")
        ax.set_yscale("log")
    _label(ax, f"measured throughput ({unit})", f"predicted throughput ({unit})", title, "upper left")
    return fig


def _label(ax, xlabel: str, ylabel: str, title: str, legend: str) -> None:
    """The axes' labels, the title on the left and the legend at ``legend``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    if ax.get_legend_handles_labels()[0]:  # nothing drawn: no empty legend
        ax.legend(loc=legend)


def _step(ax, i: int, t, y, label: str, gid: str, linewidth: float) -> str:
    """Line ``i`` of a figure as a step held until the next sample (colour and dash by ``i``,
    so the lines stay apart in grey print); returns its colour."""
    color = style.CYCLE[i % len(style.CYCLE)]
    ax.step(t, y, where="post", color=color, linestyle=LINESTYLES[i % len(LINESTYLES)], linewidth=linewidth,
            label=label, gid=gid)
    return color


@style.styled
def over_time(df: pl.DataFrame, columns: dict[str, str], unit: str, title: str):
    """One step line per column of ``columns`` (name: label) against ``t_rel``, each value
    held until the next row (a window is what the last ACK set)."""
    fig, ax = style.new_figure()
    peak = max(float(np.nanmax(df[c].drop_nulls().to_numpy())) if df[c].drop_nulls().len() else 0.0 for c in columns)
    div, shown = style.scale_for(peak, unit)
    t = df["t_rel"].to_numpy()
    for i, (c, label) in enumerate(columns.items()):
        y = df[c].cast(pl.Float64).to_numpy() / div
        _step(ax, i, t, y, label, f"line-{c}", 0.8)
    ax.set_ylim(bottom=0)
    _label(ax, "time since the flow's first packet (s)", f"bytes ({shown})", title, "upper left")
    return fig


@style.styled
def signal(df: pl.DataFrame, handoff_t: list[float], title: str):
    """RSRP of a radio log against time (each sample held until the next), handoffs as
    vertical dashed lines."""
    fig, ax = style.new_figure()
    ax.step(df["t_rel"].to_numpy(), df["rsrp_dbm"].cast(pl.Float64).to_numpy(), where="post",
            color=style.CYCLE[0], linewidth=0.8, label="RSRP", gid="line-rsrp")
    for i, t in enumerate(handoff_t):
        ax.axvline(t, color=style.CYCLE[1], linestyle="--", linewidth=0.7, label="handoff" if i == 0 else None,
                   gid=f"handoff-{i}")
    _label(ax, "time since the log's first sample (s)", "RSRP (dBm)", title, "lower left")
    return fig


@style.styled
def scatter(df: pl.DataFrame, x: str, y: str, xlabel: str, ylabel: str, title: str):
    """One point per row of ``df`` (columns ``x``, ``y``), shares shown in %."""
    fig, ax = style.new_figure()
    ax.scatter(df[x].to_numpy() * 100, df[y].to_numpy() * 100, s=12, color=style.CYCLE[0], linewidths=0,
               label=f"flows (n = {df.height:,})", gid="points")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    _label(ax, f"{xlabel} (%)", f"{ylabel} (%)", title, "upper left")
    return fig


@style.styled
def progress(df: pl.DataFrame, groups: list[str], title: str):
    """Bytes delivered so far (``value``) against ``t_rel``, one step line per ``group``."""
    fig, ax = style.new_figure()
    peak = float(df["value"].max() or 0.0)
    div, shown = style.scale_for(peak, "B")
    for i, g in enumerate(groups):
        part = df.filter(pl.col("group") == g).sort("t_rel")
        _step(ax, i, part["t_rel"].to_numpy(), part["value"].cast(pl.Float64).to_numpy() / div, g, f"line-{i}", 0.9)
    ax.set_ylim(bottom=0)
    _label(ax, "time since the connection's first packet (s)", f"data sent, highest sequence ({shown})", title,
           "upper left")
    return fig


@style.styled
def track(df: pl.DataFrame, title: str):
    """A radio log's positions (``lon``, ``lat``) coloured by RSRP: the trace on a plain map
    (degrees, equal scale at the track's latitude; no base map)."""
    fig, ax = style.new_figure()
    pts = ax.scatter(df["lon"].to_numpy(), df["lat"].to_numpy(), c=df["rsrp_dbm"].cast(pl.Float64).to_numpy(),
                     s=6, cmap="viridis", linewidths=0, gid="track")
    fig.colorbar(pts, ax=ax, label="RSRP (dBm)")
    mid = float(np.radians(df["lat"].mean()))
    ax.set_aspect(1 / max(np.cos(mid), 1e-3))
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")
    ax.set_title(title, loc="left")
    return fig


@style.styled
def footprints(df: pl.DataFrame, runs: list[str], title: str):
    """One trace per run (``run`` column), positions (``lon``, ``lat``) joined in time order
    on a plain map (degrees, equal scale at the mean latitude; no base map)."""
    fig, ax = style.new_figure()
    for i, name in enumerate(runs):
        r = df.filter(pl.col("run") == name)
        ax.plot(r["lon"].to_numpy(), r["lat"].to_numpy(), color=style.CYCLE[i % len(style.CYCLE)],
                linestyle=LINESTYLES[(i // len(style.CYCLE)) % len(LINESTYLES)], marker=".", markersize=2.5,
                linewidth=0.8, label=f"{name} ({r.height:,} fixes)", gid=f"footprint-{i}")
    mid = float(np.radians(df["lat"].mean()))
    ax.set_aspect(1 / max(np.cos(mid), 1e-3))
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")
    ax.set_title(title, loc="left")
    ax.legend(fontsize="small")
    return fig


@style.styled
def samples_with_marks(df: pl.DataFrame, column: str, marks: list[float], label: str, unit: str, title: str):
    """Samples of ``column`` against ``t_rel`` as points, events at ``marks`` as dashed lines."""
    fig, ax = style.new_figure()
    v = df[column].cast(pl.Float64).to_numpy()
    div, shown = (1e-3, "ms") if unit == "s" and v.size and _peak(v) < 1 else (1.0, unit)
    ax.plot(df["t_rel"].to_numpy(), v / div, marker=".", markersize=2.5, linewidth=0.5, color=style.CYCLE[0],
            label=f"{label} samples (n = {v.size:,})", gid="samples")
    for i, t in enumerate(marks):
        ax.axvline(t, color=style.CYCLE[1], linestyle="--", linewidth=0.7, label="handoff" if i == 0 else None,
                   gid=f"handoff-{i}")
    ax.set_ylim(bottom=0)
    _label(ax, "time since the flow's first packet (s)", f"{label} ({shown})", title, "upper left")
    return fig


@style.styled
def carriers(df: pl.DataFrame, names: list[str], marks: dict[str, list[float]], title: str):
    """RSRP of each carrier against ``t_rel`` (held until its next sample; no line where the
    carrier is off LTE), each carrier's handoffs as ticks in its colour at the top."""
    fig, ax = style.new_figure()
    for i, c in enumerate(names):
        part = df.filter(pl.col("carrier") == c).sort("t_rel")
        color = _step(ax, i, part["t_rel"].to_numpy(), part["rsrp_dbm"].cast(pl.Float64).to_numpy(), f"carrier {c}",
                      f"rsrp-{c}", 0.8)
        for k, t in enumerate(marks.get(c, [])):
            ax.axvline(t, ymin=0.92 - 0.06 * i, ymax=0.98 - 0.06 * i, color=color, linewidth=0.9, gid=f"handoff-{c}-{k}")
    _label(ax, "time since the log's first sample (s)", "RSRP (dBm)", title, "lower left")
    return fig


@style.styled
def violins(df: pl.DataFrame, column: str, label: str, title: str, line_at: float | None = None):
    """One violin per ``group`` of ``column`` with every value as a point and the median as a
    bar (few instances: the points say what the violin smooths); ``line_at``: a dashed level."""
    fig, ax = style.new_figure()
    groups = list(dict.fromkeys(df["group"].to_list()))
    for i, g in enumerate(groups):
        v = df.filter(pl.col("group") == g)[column].cast(pl.Float64).to_numpy()
        if v.size >= 2 and np.ptp(v) > 0:
            body = ax.violinplot([v], positions=[i], showextrema=False, widths=0.7)["bodies"][0]
            body.set_facecolor(style.CYCLE[i % len(style.CYCLE)])
            body.set_alpha(0.3)
            body.set_gid(f"violin-{i}")
        ax.scatter(np.full(v.size, i), v, s=10, color=style.CYCLE[i % len(style.CYCLE)], linewidths=0,
                   zorder=3, gid=f"points-{i}")
        ax.hlines(np.median(v), i - 0.25, i + 0.25, color="black", linewidth=1.0, gid=f"median-{i}")
    if line_at is not None:
        ax.axhline(line_at, color=style.GREY, linestyle="--", linewidth=0.7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g}\n(n = {df.filter(pl.col('group') == g).height})" for g in groups])
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.set_title(title, loc="left")
    return fig


@style.styled
def class_panels(df: pl.DataFrame, quantities: list[str], classes: list[str], title: str):
    """One panel per ``quantity`` of a (quantity, class, value) frame: each instance a point
    over its class, the class median a bar; 1 (and the barrier's scale) as a dashed line."""
    rows = (len(quantities) + 1) // 2
    fig, axes = style.new_figure(height=1.5 * rows + 0.3, width=style.COLUMN_WIDTH_IN)
    fig.delaxes(axes)
    grid = fig.subplots(rows, 2, squeeze=False)
    for k, q in enumerate(quantities):
        ax = grid[k // 2][k % 2]
        for i, c in enumerate(classes):
            v = df.filter((pl.col("quantity") == q) & (pl.col("class") == c))["value"].cast(pl.Float64).to_numpy()
            if v.size == 0:
                continue
            ax.scatter(np.full(v.size, i), v, s=9, color=style.CYCLE[i % len(style.CYCLE)], linewidths=0,
                       gid=f"points-{k}-{c}")
            ax.hlines(np.median(v), i - 0.3, i + 0.3, color="black", linewidth=0.9)
        ax.axhline(1.0, color=style.GREY, linestyle="--", linewidth=0.6)
        ax.set_xticks(range(len(classes)))
        ax.set_xticklabels([c.replace("semi-positive", "semi") for c in classes])
        ax.set_xlim(-0.6, len(classes) - 0.4)
        top = df.filter(pl.col("quantity") == q)["value"].max()
        ax.set_ylim(0, max(1.0, float(top or 0.0)) * 1.12)
        ax.set_title(f"({'abcdefgh'[k]}) {q}", loc="left")
    for k in range(len(quantities), rows * 2):
        grid[k // 2][k % 2].set_visible(False)
    fig.suptitle(title, x=0.02, ha="left")
    return fig


@style.styled
def instance_rates(series: pl.DataFrame, panels: list[str], onsets: pl.DataFrame, classes: list[str]):
    """Per-second rates (``value``: bit/s against ``t``) of each ``line`` of one instance per
    panel, and a last panel with each degraded subflow's onset against its instance's class."""
    n = len(panels) + 1
    fig, axes = style.new_figure(height=1.25 * n + 0.3, nrows=n)
    peak = float(series["rate_bps"].max() or 0.0)
    div, shown = style.scale_for(peak, "bit/s")
    for k, p in enumerate(panels):
        ax = axes[k]
        part = series.filter(pl.col("panel") == p)
        for i, name in enumerate(sorted(set(part["line"].to_list()))):
            s = part.filter(pl.col("line") == name).sort("t")
            _step(ax, i, s["t"].to_numpy(), s["rate_bps"].cast(pl.Float64).to_numpy() / div, name,
                  f"rate-{k}-{name}", 0.7)
        ax.set_title(f"({'abc'[k]}) a {p} instance", loc="left")
        ax.set_ylabel(shown)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", ncol=2, fontsize=5)
    ax = axes[-1]
    for i, c in enumerate(classes):
        t = onsets.filter(pl.col("class") == c)["degradation_onset_s"].cast(pl.Float64).to_numpy()
        ax.scatter(t, np.full(t.size, i), s=12, marker="x", color=style.CYCLE[i % len(style.CYCLE)],
                   gid=f"onsets-{c}")
    ax.set_yticks(range(len(classes)))
    ax.set_yticklabels([c.replace("semi-positive", "semi") for c in classes])
    ax.set_ylim(-0.5, len(classes) - 0.5)
    ax.set_title(f"({'abcd'[len(panels)]}) subflow degradation onsets", loc="left")
    ax.set_xlabel("time since the instance's first SYN (s)")
    return fig


@style.styled
def kt_lines(df: pl.DataFrame, lines: list[str], title: str):
    """k_t (bytes/s) of each flow of one instance against the second loss of its interval."""
    fig, ax = style.new_figure()
    peak = float(df["k_t"].abs().max() or 0.0)
    div, shown = style.scale_for(peak, "B")
    for i, name in enumerate(lines):
        s = df.filter(pl.col("line") == name).sort("loss2_s")
        ax.plot(s["loss2_s"].to_numpy(), s["k_t"].cast(pl.Float64).to_numpy() / div, marker="os^v"[i % 4],
                markersize=3, linewidth=0.8, color=style.CYCLE[i % len(style.CYCLE)],
                linestyle=LINESTYLES[i % len(LINESTYLES)], label=f"{name} (n = {s.height})", gid=f"kt-{name}")
    ax.axhline(0.0, color=style.GREY, linewidth=0.6)
    _label(ax, "the interval's second loss, since the first SYN (s)", f"k_t ({shown}/s)", title, "upper right")
    return fig


@style.styled
def complementarity(df: pl.DataFrame, carriers: list[str], title: str):
    """Three panels of a (panel, line, t_s, value) frame: (a) per-second rates of each
    carrier's subflow and the connection with each carrier's handoffs as ticks in its colour,
    (b) each carrier on LTE (1) or not (0), (c) each carrier's RSRP."""
    fig, axes = style.new_figure(height=3.9, nrows=3)
    rate = df.filter(pl.col("panel") == "(a) rate")
    div, shown = style.scale_for(float(rate["value"].max() or 0.0), "bit/s")
    colour = {c: style.CYCLE[i % len(style.CYCLE)] for i, c in enumerate(carriers)}
    for i, name in enumerate([f"{c}-subflow" for c in carriers] + ["MPTCP"]):
        s = rate.filter(pl.col("line") == name).sort("t_s")
        _step(axes[0], i, s["t_s"].to_numpy(), s["value"].to_numpy() / div, name, f"rate-{name}", 0.7)
    for k, c in enumerate(carriers):
        t = df.filter((pl.col("panel") == "(a) handoff") & pl.col("line").str.starts_with(f"{c} "))["t_s"].to_numpy()
        for j, x in enumerate(t):
            axes[0].axvline(x, ymin=0.93 - 0.06 * k, ymax=0.99 - 0.06 * k, color=colour[c], linewidth=0.9,
                            gid=f"handoff-{c}-{j}")
    axes[0].set_ylabel(shown)
    axes[0].set_ylim(bottom=0)
    axes[0].set_title(f"(a) rate and handoffs; {title}", loc="left")
    axes[0].legend(loc="center right", ncol=1, fontsize=5)
    for p, ax, label in (("(b) on LTE", axes[1], "on LTE"), ("(c) RSRP", axes[2], "RSRP (dBm)")):
        part = df.filter(pl.col("panel") == p)
        for i, c in enumerate(carriers):
            s = part.filter(pl.col("line") == c).sort("t_s")
            off = 0.04 * i if p == "(b) on LTE" else 0.0  # two 0/1 lines stay apart
            _step(ax, i, s["t_s"].to_numpy(), s["value"].to_numpy() + off, f"carrier {c}", f"{p}-{c}", 0.8)
        ax.set_ylabel(label)
        ax.set_title(p, loc="left")
    axes[1].set_yticks([0, 1])
    axes[1].set_yticklabels(["no", "yes"])
    axes[1].legend(loc="lower left", fontsize=5)
    axes[2].set_xlabel("time since the instance's first SYN (s)")
    return fig


@style.styled
def rate_with_marks(t, rate, marks: list[float], label: str, mark_label: str, title: str):
    """A per-second rate (bit/s) as a step line, events at ``marks`` as dashed lines."""
    fig, ax = style.new_figure()
    div, shown = style.scale_for(_peak(rate), "bit/s")
    _step(ax, 0, t, np.asarray(rate) / div, label, "rate", 0.8)
    for i, x in enumerate(marks):
        ax.axvline(x, color=style.CYCLE[1], linestyle="--", linewidth=0.7, label=mark_label if i == 0 else None,
                   gid=f"mark-{i}")
    ax.set_ylim(bottom=0)
    _label(ax, "time since the instance's first SYN (s)", shown, title, "upper right")
    return fig


@style.styled
def carriers_panels(df: pl.DataFrame, names: list[str], marks: dict[str, list[float]], title: str):
    """Seed 004 Fig. 1's panels over one trip, each carrier a line (held until its next
    sample): (a) on LTE or not, (b) RSRP, (c) RSRQ, (d) each carrier's handoffs as ticks."""
    fig, axes = style.new_figure(height=4.6, nrows=4)
    fig.suptitle(title, x=0.02, ha="left", fontsize=6)
    for i, c in enumerate(names):
        part = df.filter(pl.col("carrier") == c).sort("t_rel")
        t = part["t_rel"].to_numpy()
        _step(axes[0], i, t, part["lte"].cast(pl.Float64).to_numpy() + 0.04 * i, f"carrier {c}", f"lte-{c}", 0.8)
        _step(axes[1], i, t, part["rsrp_dbm"].cast(pl.Float64).to_numpy(), f"carrier {c}", f"rsrp-{c}", 0.8)
        _step(axes[2], i, t, part["rsrq_db"].cast(pl.Float64).to_numpy(), f"carrier {c}", f"rsrq-{c}", 0.8)
        ts = marks.get(c, [])
        axes[3].scatter(ts, np.full(len(ts), i), marker="|", s=40, color=style.CYCLE[i % len(style.CYCLE)],
                        gid=f"handoff-{c}")
    axes[0].set_yticks([0, 1])
    axes[0].set_yticklabels(["no", "yes"])
    for ax, label, head in ((axes[0], "on LTE", "(a) LTE coverage"), (axes[1], "RSRP (dBm)", "(b) signal strength"),
                            (axes[2], "RSRQ (dB)", "(c) signal quality"), (axes[3], "", "(d) handoffs")):
        ax.set_ylabel(label)
        ax.set_title(head, loc="left")
    axes[3].set_yticks(range(len(names)))
    axes[3].set_yticklabels(names)
    axes[3].set_ylim(-0.5, len(names) - 0.5)
    axes[0].legend(loc="lower left", fontsize=5)
    axes[3].set_xlabel("time since the log's first sample (s)")
    return fig
