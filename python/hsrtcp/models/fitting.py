"""Compare model predictions with measured per-flow throughput (seed 001 §IV-E, Fig. 10).

Input: the ``flows`` table written by the analyzer (a polars DataFrame, a Parquet file, or a
results directory holding ``flows.parquet``). The model inputs are read from these columns
(symbol of seed 001 / research/models.md → column):

============  =======================  =============================================
symbol        column                   meaning, unit
============  =======================  =============================================
p_d           ``p_d``                  data loss rate, fraction (models.md §3.1)
p_a           ``p_a``                  ACK loss rate, fraction (§3.2; only for the
                                       optional P_a fallback)
P_a           ``ack_burst_loss``       ACK burst loss per round, fraction (M36, §3.4)
q             ``q``                    loss rate of timeout retransmissions (§3.6)
RTT           ``rtt_mean``             mean RTT, seconds (§3.5)
T             ``rto_first_mean``       mean first RTO of a timeout sequence, s (§3.6)
W_m           ``w_m_packets``          receiver window limit, packets (§3.7)
b             ``b_packets_per_ack``    packets per ACK (§3.3); null → 2, with a note
TP_trace      ``throughput_pkts``      measured throughput, packets/s (§3.9)
============  =======================  =============================================

plus ``flow_id`` and, optionally, a grouping column (e.g. ``class`` or a carrier).

Output (:class:`FitResult`): per flow the measured throughput, ``pred_<model>`` for every
model and variant (packets/s), ``d_<model>`` = D of seed 001 eq. 22 as a fraction
(docs/metrics.md M35, ruling A20), ``missing_inputs`` (columns that were null for that flow; the
models needing them are null) and ``notes`` (assumed defaults, domain errors); a per-group
summary (mean and median D per model) and a Fig.-10-like PNG.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.models.evaluate import MODEL_KEYS, MODEL_LABELS, evaluate_all
from hsrtcp.models.pftk import _ewu

__all__ = ["COLUMNS", "FitResult", "fit_flows", "load_flows"]

# model symbol -> flows column
COLUMNS: dict[str, str] = {
    "p_d": "p_d",
    "p_a": "p_a",
    "P_a": "ack_burst_loss",
    "q": "q",
    "rtt": "rtt_mean",
    "T": "rto_first_mean",
    "W_m": "w_m_packets",
    "b": "b_packets_per_ack",
}
MEASURED = "throughput_pkts"
#: flows per slice the models are evaluated on (bounded intermediate arrays)
FIT_CHUNK = 1 << 16
DEFAULT_B = 2.0

_PFTK_NEEDS = ("p_d", "rtt_mean", "rto_first_mean", "w_m_packets")
_ENH_NEEDS = (*_PFTK_NEEDS, "ack_burst_loss", "q")
NEEDS: dict[str, tuple[str, ...]] = {k: (_PFTK_NEEDS if k.startswith("pftk") else _ENH_NEEDS) for k in MODEL_KEYS}


def load_flows(source: pl.DataFrame | str | os.PathLike, group_by: str | None = None) -> pl.DataFrame:
    """Return the flows table from a DataFrame, a Parquet file or a results directory: a file
    through the results reader (:mod:`hsrtcp.results`), which checks ``flow_id`` and the model
    inputs (any numeric type, read as float) and names the file and column of a bad one."""
    if isinstance(source, pl.DataFrame):
        return source
    from hsrtcp.results import read_table

    path = Path(source)
    if path.is_dir():
        path = path / "flows.parquet"
    if not path.exists():
        raise InputError(f"{path}: no such file (expected a flows Parquet file or a results directory)")
    inputs = [*COLUMNS.values(), MEASURED]
    return read_table(path, "flows", ["flow_id"], optional=[*inputs, *([group_by] if group_by else [])],
                      as_float=inputs)


@dataclass
class FitResult:
    """Per-flow predictions and deviations, and their per-group summary."""

    flows: pl.DataFrame
    summary: pl.DataFrame
    group_by: str | None
    models: tuple[str, ...]

    def figure(self, path: str | os.PathLike) -> Path:
        """Write a Fig.-10-like PNG: measured vs predicted per flow, and D per group."""
        return _plot_fit(self, Path(path))

    def write(self, outdir: str | os.PathLike) -> dict[str, Path]:
        """Write ``model_fit_flows.{parquet,csv}``, ``model_fit_summary.csv`` and
        ``model_fit.png`` into ``outdir`` (created if needed), all four or none: they are
        staged and committed together (:class:`hsrtcp.output.OutputSet`, with a manifest
        of their own, so an analysis's files in the same directory are left alone). A
        failure leaves the previous run's files; raises
        :class:`hsrtcp.errors.OutputError` when the directory cannot be used."""
        from hsrtcp.output import OutputSet

        names = {
            "flows_parquet": "model_fit_flows.parquet",
            "flows_csv": "model_fit_flows.csv",
            "summary_csv": "model_fit_summary.csv",
            "figure": "model_fit.png",
        }
        with OutputSet(outdir, manifest=FIT_MANIFEST, replaces=frozenset()) as output:
            # (output.file: a full disk is an OutputError naming the file)
            with output.file(names["flows_parquet"]) as p:
                self.flows.write_parquet(p)
            with output.file(names["flows_csv"]) as p:
                _csv_safe(self.flows).write_csv(p)
            with output.file(names["summary_csv"]) as p:
                self.summary.write_csv(p)
            with output.file(names["figure"]) as p:
                self.figure(p)
            output.commit()
        return {k: Path(outdir) / n for k, n in names.items()}


#: The manifest of ``model fit``'s files (docs/formats/output.md).
FIT_MANIFEST = "hsrtcp-manifest.model-fit.txt"


def fit_flows(
    source: pl.DataFrame | str | os.PathLike,
    *,
    group_by: str | None = None,
    models: tuple[str, ...] = MODEL_KEYS,
    allow_any_b: bool = False,
    pa_fallback: bool = False,
    progress: bool = False,
) -> FitResult:
    """Predict every flow's throughput with every model and compare with the measurement.

    Parameters
    ----------
    source : flows DataFrame, Parquet file, or results directory with ``flows.parquet``.
    group_by : optional column to summarise by (e.g. ``"class"``); nulls form their own group.
    models : subset of :data:`hsrtcp.models.MODEL_KEYS`.
    allow_any_b : evaluate the as_printed variant also where b ≠ 2 (otherwise null with a
        note; it is only defined for b = 2).
    pa_fallback : where ``ack_burst_loss`` is null but ``p_a`` is known, use the
        independent-loss value P_a = p_a^⌈w/b⌉ with w = PFTK's E[W_u](p_d, b)
        (models.md §3.4 step 4). Under independence this is ≈ 0, so it mostly means
        "treat P_a as 0"; the flow gets a note.
    progress : report the flows through the models on standard error when the table takes
        more than one slice (:data:`FIT_CHUNK`): a bar on a terminal, else a plain line at
        every tenth.

    Flows lacking an input get null predictions for the models that need it, and the
    column names in ``missing_inputs``. D is null where the prediction or the measurement
    is missing, or the measurement is not > 0.
    """
    df = load_flows(source, group_by)
    where = source if not isinstance(source, pl.DataFrame) else "flows DataFrame"
    if "flow_id" not in df.columns:
        raise InputError(f"{where}: column 'flow_id' is missing (columns: {', '.join(df.columns)})")
    if group_by is not None and group_by not in df.columns:
        raise InputError(f"{where}: group-by column {group_by!r} is missing (columns: {', '.join(df.columns)})")
    n = df.height

    # Input columns as float arrays, NaN for null or absent.
    cols: dict[str, np.ndarray] = {}
    for col in (*COLUMNS.values(), MEASURED):
        if col not in df.columns:
            cols[col] = np.full(n, np.nan)
            continue
        try:
            series = df.get_column(col).cast(pl.Float64)
        except Exception as exc:
            raise InputError(f"{where}: column {col!r} is not numeric ({df.schema[col]}): {exc}") from None
        cols[col] = series.fill_null(np.nan).to_numpy().astype(np.float64)

    # Notes and missing inputs are kept sparse, as (flows, texts) per kind of note in the
    # order a flow lists them, and become list columns at the end (:func:`_lists`): no Python
    # list per flow, so a million flows cost their notes, not gigabytes of empty lists.
    note_cols: list[tuple[np.ndarray, list[str]]] = []
    b = cols["b_packets_per_ack"].copy()
    b_null = np.isnan(b)
    note_cols.append(_fixed_note(b_null, f"b_packets_per_ack null: assumed b = {DEFAULT_B:g}"))
    b[b_null] = DEFAULT_B

    pa = cols["ack_burst_loss"].copy()
    if pa_fallback:
        use = np.isnan(pa) & ~np.isnan(cols["p_a"]) & ~np.isnan(cols["p_d"]) & (cols["p_d"] > 0)
        with np.errstate(all="ignore"):
            exponent = np.ceil(_ewu(cols["p_d"], b) / b)
            pa = np.where(use, cols["p_a"] ** exponent, pa)
        note_cols.append(_notes_at(n, use, lambda i: f"ack_burst_loss null: P_a = p_a^{exponent[i]:.0f} = "
                                   f"{pa[i]:.3g} from p_a under independent ACK losses"))

    missing_mask = {c: np.isnan(cols[c]) for c in set(_ENH_NEEDS) | {MEASURED}}
    missing_mask["ack_burst_loss"] = np.isnan(pa)
    order = [*_ENH_NEEDS, MEASURED]

    measured = cols[MEASURED]
    out_cols: dict[str, np.ndarray] = {}
    noted: dict[str, tuple[list[np.ndarray], list[str]]] = {key: ([], []) for key in models}
    lacking = {}
    for key in models:
        lacking[key] = np.zeros(n, dtype=bool)
        for c in NEEDS[key]:
            lacking[key] |= missing_mask[c]
        out_cols[f"pred_{key}"] = np.empty(n)
    # The models run on slices of FIT_CHUNK flows: their intermediate arrays stay the size
    # of a slice whatever the number of flows.
    prog = _Progress(n) if progress and n > FIT_CHUNK else None
    for lo in range(0, n, FIT_CHUNK):
        sl = slice(lo, min(n, lo + FIT_CHUNK))
        evaluated = evaluate_all(
            cols["p_d"][sl], pa[sl], cols["q"][sl], cols["rtt_mean"][sl], cols["rto_first_mean"][sl], b[sl],
            cols["w_m_packets"][sl], models=models, allow_any_b=allow_any_b,
        )
        for key in models:
            res = evaluated[key]
            pred = np.where(lacking[key][sl], np.nan, res.throughput)
            out_cols[f"pred_{key}"][sl] = pred
            at = np.flatnonzero(~lacking[key][sl] & np.isnan(pred))
            noted[key][0].append(at + lo)
            noted[key][1].extend(f"{key}: {r}" for r in res.reasons_at(at))
        del evaluated
        if prog is not None:
            prog.update(sl.stop)
    if prog is not None:
        prog.close()
    for key in models:
        at = np.concatenate(noted[key][0]) if noted[key][0] else np.zeros(0, dtype=np.int64)
        note_cols.append((at, noted[key][1]))
        pred = out_cols.pop(f"pred_{key}")
        with np.errstate(all="ignore"):
            d = np.abs(pred - measured) / measured
        d = np.where(measured > 0, d, np.nan)
        out_cols[f"pred_{key}"] = pred
        out_cols[f"d_{key}"] = d
    note_cols.append(_notes_at(n, ~np.isnan(measured) & ~(measured > 0),
                               lambda i: f"throughput_pkts = {measured[i]:g} is not > 0: D undefined"))

    base = [pl.col("flow_id")]
    if group_by is not None and group_by != "flow_id":
        base.append(pl.col(group_by))
    missing = [_fixed_note(missing_mask[c], c) for c in order]
    result = df.select(base).with_columns(
        pl.Series(MEASURED, measured, dtype=pl.Float64, nan_to_null=True),
        *[pl.Series(name, values, dtype=pl.Float64, nan_to_null=True) for name, values in out_cols.items()],
        _lists("missing_inputs", n, missing),
        _lists("notes", n, note_cols),
    )
    return FitResult(result, _summarise(result, group_by, models), group_by, tuple(models))


class _Progress:
    """Flows through the models: a bar on a terminal (rich, stderr), else a plain line at
    every tenth of the flows (a log of a long run)."""

    def __init__(self, total: int) -> None:
        import sys
        import time

        self.total, self._next, self._t0, self._bar = total, total / 10, time.monotonic(), None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("model fit: flows"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("fit", total=total)

    def update(self, done: int) -> None:
        import sys
        import time

        if self._bar is not None:
            self._bar.update(self._task, completed=done)
        elif done >= self._next or done == self.total:
            print(f"model fit: {done:,}/{self.total:,} flows through the models ({100 * done // self.total} %), "
                  f"{time.monotonic() - self._t0:.0f} s", file=sys.stderr, flush=True)
            while self._next <= done:
                self._next += self.total / 10

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _fixed_note(mask: np.ndarray, text: str) -> tuple[np.ndarray, list[str]]:
    """A kind of note: ``text`` at the flows of ``mask``."""
    at = np.flatnonzero(mask)
    return at, [text] * len(at)


def _notes_at(n: int, mask: np.ndarray, text: Callable[[int], str]) -> tuple[np.ndarray, list[str]]:
    """A kind of note: ``text(i)`` at the flows ``i`` of ``mask`` (with their own numbers)."""
    at = np.flatnonzero(mask)
    return at, [text(int(i)) for i in at]


def _lists(name: str, n: int, parts: list[tuple[np.ndarray, list[str]]]) -> pl.Series:
    """A List(String) column of ``n`` flows from sparse ``parts`` (flows, texts): each flow's
    texts in the order of the parts, an empty list where it has none."""
    import pyarrow as pa

    rows = np.concatenate([at for at, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    texts = [t for _, ts in parts for t in ts]
    order = np.argsort(rows, kind="stable")  # stable: a flow's texts keep the parts' order
    offsets = np.searchsorted(rows[order], np.arange(n + 1)).astype(np.int64)
    values = pa.array([texts[i] for i in order], type=pa.large_string())
    return pl.Series(name, pa.LargeListArray.from_arrays(pa.array(offsets), values))


def _summarise(flows: pl.DataFrame, group_by: str | None, models: tuple[str, ...]) -> pl.DataFrame:
    """Long table: one row per (group, model) with n_flows, n_with_d, mean_d, median_d and the
    paired means of prediction and measurement over the n_with_d flows."""
    gcol = group_by if group_by is not None else None
    frames = []
    keyed = flows.with_columns(
        (pl.col(gcol).cast(pl.Utf8).fill_null("(null)") if gcol else pl.lit("all")).alias("group")
    )
    for key in models:
        agg = keyed.group_by("group", maintain_order=True).agg(
            pl.len().alias("n_flows"),
            pl.col(f"d_{key}").is_not_null().sum().alias("n_with_d"),
            pl.col(f"d_{key}").mean().alias("mean_d"),
            pl.col(f"d_{key}").median().alias("median_d"),
            # paired means, over the flows that have D
            pl.col(f"pred_{key}").filter(pl.col(f"d_{key}").is_not_null()).mean().alias("mean_pred_pkts"),
            pl.col(MEASURED).filter(pl.col(f"d_{key}").is_not_null()).mean().alias("mean_measured_pkts"),
        )
        frames.append(agg.with_columns(pl.lit(key).alias("model"), pl.lit(MODEL_LABELS[key]).alias("label")))
    out = pl.concat(frames).select(
        "group", "model", "label", "n_flows", "n_with_d", "mean_d", "median_d", "mean_pred_pkts", "mean_measured_pkts"
    )
    if group_by is not None:
        out = out.rename({"group": group_by}) if group_by not in ("model", "label") else out
    return out.sort(out.columns[0], maintain_order=True)


def _csv_safe(df: pl.DataFrame) -> pl.DataFrame:
    """CSV has no lists: join list columns with '; '."""
    return df.with_columns(
        [pl.col(c).list.join("; ") for c, t in df.schema.items() if isinstance(t, pl.List)]
    )


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write ``path`` with :func:`hsrtcp.atomic.write_file` (``write`` gets the path to write)."""
    from hsrtcp.atomic import write_file

    write_file(path, lambda tmp: write(Path(tmp)))


#: flows drawn in the scatter of the figure at most (a random sample beyond)
PLOT_POINTS = 20_000
_MARKERS = {"pftk_full": "o", "pftk_approx": "v", "enh_as_printed": "s", "enh_corrected": "D", "enh_rederived": "^"}


def _plot_fit(res: FitResult, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flows = res.flows
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    # Beyond PLOT_POINTS flows the scatter shows a random sample of them (the same flows for
    # every model; seeded, so the figure is reproducible): a million markers per model are
    # unreadable and cost gigabytes. The tables and the box plots keep every flow.
    n = flows.height
    shown = np.sort(np.random.default_rng(0).choice(n, PLOT_POINTS, replace=False)) if n > PLOT_POINTS else None
    meas = flows.get_column(MEASURED).to_numpy()
    if shown is not None:
        meas = meas[shown]
    lo, hi = math.inf, 0.0
    for key in res.models:
        pred = flows.get_column(f"pred_{key}").to_numpy()
        if shown is not None:
            pred = pred[shown]
        ok = np.isfinite(meas) & np.isfinite(pred) & (meas > 0) & (pred > 0)
        if ok.any():
            ax1.scatter(meas[ok], pred[ok], s=18, alpha=0.7, marker=_MARKERS.get(key, "o"), label=MODEL_LABELS[key])
            lo = min(lo, meas[ok].min(), pred[ok].min())
            hi = max(hi, meas[ok].max(), pred[ok].max())
    if hi > 0:
        ax1.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color="grey", lw=1, ls="--", label="y = x")
        ax1.set_xscale("log")
        ax1.set_yscale("log")
        ax1.legend(fontsize=8)
    else:
        ax1.text(0.5, 0.5, "no flow with both measurement and prediction", ha="center", transform=ax1.transAxes)
    ax1.set_xlabel("measured throughput (packets/s)")
    ax1.set_ylabel("predicted throughput (packets/s)")
    ax1.set_title("Measured vs predicted, per flow" if shown is None else
                  f"Measured vs predicted: {PLOT_POINTS:,} of {n:,} flows at random")

    # D per group and model, as box plots side by side (seed 001 Fig. 10 groups by carrier).
    gname = res.group_by
    if gname:
        g = flows.get_column(gname).cast(pl.Utf8).fill_null("(null)")
        labels = g.unique(maintain_order=True).to_list()
        codes = g.replace_strict(labels, list(range(len(labels))), return_dtype=pl.Int32).to_numpy()
    else:
        labels, codes = ["all"], np.zeros(n, dtype=np.int32)
    width = 0.8 / max(len(res.models), 1)
    handles = []
    for j, key in enumerate(res.models):
        d = flows.get_column(f"d_{key}").to_numpy()
        data = [d[codes == k] for k in range(len(labels))]
        data = [x[np.isfinite(x)] for x in data]
        pos = [i + (j - (len(res.models) - 1) / 2) * width for i in range(len(labels))]
        keep = [(p, x) for p, x in zip(pos, data) if x.size]
        if not keep:
            continue
        bp = ax2.boxplot(
            [x for _, x in keep], positions=[p for p, _ in keep], widths=width * 0.9, patch_artist=True,
            showfliers=shown is None, showmeans=True, manage_ticks=False,
        )
        color = f"C{j}"
        for box in bp["boxes"]:
            box.set_facecolor(color)
            box.set_alpha(0.6)
        handles.append(matplotlib.patches.Patch(color=color, alpha=0.6, label=MODEL_LABELS[key]))
    ax2.set_xticks(range(len(labels)), labels, rotation=20 if len(labels) > 4 else 0)
    ax2.set_ylabel("deviation D (fraction)")
    ax2.set_xlabel(gname or "")
    ax2.set_title("Deviation D = |TP_model − TP_trace| / TP_trace" + ("" if shown is None else
                  " (whiskers 1.5 IQR, outliers not drawn)"))
    if handles:
        ax2.legend(handles=handles, fontsize=8)
    fig.tight_layout()
    _atomic(path, lambda p: fig.savefig(p, format="png", dpi=120))
    plt.close(fig)
    return path
