"""Per-flow context: handoffs crossed, speed class and flow class (M21 with A2), RAT mix,
signal categories (M26 for seed 003, M27 for seed 004, kept apart: A27), U-rate (M22).

A flow's interval is [first_ts, last_ts] (its first and last packet). Over it:

- speed samples: every sample of the run's log with a speed, in the interval (all carriers:
  speed belongs to the phone); a flow shorter than the sampling step uses the last sample
  before it. M21/A2 bands — *all* samples inside the band: ``static`` ≤ 5 km/h, ``low``
  in (5, 150) km/h, ``high`` in [280, 310] km/h, else ``other``.
- cell samples: the flow's carrier's samples with a serving cell; the state at ``first_ts``
  (last sample at or before it) plus the samples inside. ``rats`` lists their RATs;
  ``rat_change`` is true when there are several. ``generations`` lists their network
  generations (:mod:`hsrtcp.context.generation`: an EN-DC sample is RAT LTE but generation
  5G NSA, so ``rats`` cannot tell it) and ``generation_changes`` counts the consecutive
  samples whose generations differ (a sample without one is skipped, not a change).
- ``handoffs``: the carrier's serving-cell changes with first_ts ≤ ts ≤ last_ts (M21).
- flow classes (M21 a–e, A2): ``static`` and ``low`` need 0 handoffs; ``high_0``,
  ``high_1_8``, ``high_9_16``, ``high_17+`` by handoff count; ``other`` for flows in no
  class (speed outside the bands, a static/low flow with handoffs) and for flows with a RAT
  change (A2 excludes them, as S0 §IV-A); ``unknown`` when the context cannot be judged.
  ``class_reason`` says why for ``other`` and ``unknown``.
- coverage of the interval: no two consecutive samples around the interval (the pair
  overlaps it) more than :data:`hsrtcp.context.readers.GAP_S` apart, and samples reaching
  both ends within that; otherwise the flow is ``unknown`` (``gps gap 12.0 s`` /
  ``cell log gap 12.0 s``, the length of the hole in the log).
- ``signal_s3`` (M26, seed 003 levels): mean RSRP of the interval's LTE samples: ``good``
  ≥ −85 dBm, ``average`` [−95, −85), ``weak`` [−105, −95), ``bad`` < −105; null without
  LTE samples.
- ``signal_s4_good_share`` (M27, seed 004): share of the interval's cell samples (any RAT)
  with RSRP in [−105, −90] dBm and RSRQ in [−12, −9] dB, like S4's "share of the trip";
  null when none of them is LTE.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.context.generation import GENERATIONS
from hsrtcp.context.readers import GAP_S
from hsrtcp.schemas import CONTEXT_SCHEMA, FLOW_CLASSES  # (defined there, below hsrtcp.results)

STATIC_MAX_KMH = 5.0
LOW_MAX_KMH = 150.0
HIGH_BAND_KMH = (280.0, 310.0)
S3_LEVELS = ((-85.0, "good"), (-95.0, "average"), (-105.0, "weak"))  # else "bad"
S4_RSRP = (-105.0, -90.0)
S4_RSRQ = (-12.0, -9.0)


def speed_class(vmin: float, vmax: float) -> str:
    """M21/A2 band holding every sample, given the interval's smallest and largest speed."""
    if vmax <= STATIC_MAX_KMH:
        return "static"
    if vmin > STATIC_MAX_KMH and vmax < LOW_MAX_KMH:
        return "low"
    if vmin >= HIGH_BAND_KMH[0] and vmax <= HIGH_BAND_KMH[1]:
        return "high"
    return "other"


def flow_class(speed: str, handoffs: int) -> tuple[str, str | None]:
    """M21 class from the speed class and the handoff count, with the reason for ``other``."""
    if speed in ("static", "low"):
        return (speed, None) if handoffs == 0 else ("other", f"{speed} with {handoffs} handoffs")
    if speed == "high":
        if handoffs == 0:
            return "high_0", None
        if handoffs <= 8:
            return "high_1_8", None
        if handoffs <= 16:
            return "high_9_16", None
        return "high_17+", None
    return "other", "speed outside the M21 bands"


def signal_s3(rsrp_mean: float | None) -> str | None:
    if rsrp_mean is None:
        return None
    for level, name in S3_LEVELS:
        if rsrp_mean >= level:
            return name
    return "bad"


def _max_hole(ts: np.ndarray, a: float, b: float) -> float:
    """Longest time between two consecutive samples around [a, b] (the pair overlaps the
    interval), or before the first / after the last sample when they do not reach its ends.
    ``ts``: the samples from the last one at or before ``a`` to the first one after ``b``."""
    if len(ts) == 0:
        return b - a
    holes = [ts[0] - a, b - ts[-1], 0.0]
    if len(ts) > 1:
        x, y = ts[:-1], ts[1:]
        over = (y > a) & (x < b)
        if over.any():
            holes.append(float((y - x)[over].max()))
    return float(max(holes))


def _window(ts: np.ndarray, a: float, b: float) -> tuple[int, int]:
    """Index range of the samples describing [a, b]: the last one at or before ``a`` (the
    state at the start) through the last one at or before ``b``."""
    i0 = int(np.searchsorted(ts, a, side="right")) - 1
    i1 = int(np.searchsorted(ts, b, side="right"))
    return max(i0, 0), i1


_RUNLOG_COLUMNS = ("run_id", "ts", "speed_kmh", "carrier", "cid", "rat", "rsrp_dbm", "rsrq_db", "generation")


def _codes(s: pl.Series, names: list[str]) -> np.ndarray:
    """``s`` (strings) as the positions of its values in ``names``; null is -1."""
    return s.replace_strict(names, list(range(len(names))), default=None,
                            return_dtype=pl.Int32).fill_null(-1).to_numpy()


def generation_codes(df: pl.DataFrame) -> np.ndarray:
    """The rows' generations as positions in :data:`GENERATIONS` (-1: none, or no column)."""
    if "generation" not in df.columns:
        return np.full(len(df), -1, dtype=np.int32)
    return _codes(df["generation"], list(GENERATIONS))


class _RunLog:
    """One run's radio rows as sorted numpy arrays, per carrier and for speed."""

    def __init__(self, radio: pl.DataFrame, handoffs: pl.DataFrame):
        sp = radio.filter(pl.col("speed_kmh").is_not_null()).unique("ts", keep="first").sort("ts")
        self.speed_ts = sp["ts"].to_numpy()
        self.speed = sp["speed_kmh"].to_numpy()
        self.all_ts = np.sort(radio["ts"].to_numpy())
        self.carriers = [c for c in radio["carrier"].unique(maintain_order=True).to_list() if c is not None]
        self.cells: dict[str, dict[str, np.ndarray]] = {}
        self.rat_names: list[str] = [x for x in radio["rat"].unique(maintain_order=True).to_list() if x is not None]
        for c in self.carriers:
            r = radio.filter((pl.col("carrier") == c) & pl.col("cid").is_not_null()).sort("ts")
            self.cells[c] = {
                # RATs as codes into ``rat_names`` (-1: none), not one Python string a sample
                "ts": r["ts"].to_numpy(), "rat": _codes(r["rat"], self.rat_names),
                "rsrp": r["rsrp_dbm"].cast(pl.Float64).to_numpy(),
                "rsrq": r["rsrq_db"].cast(pl.Float64).to_numpy(), "gen": generation_codes(r),
            }
        self.handoffs = _handoff_arrays(handoffs, self.carriers)


def _handoff_arrays(handoffs: pl.DataFrame, carriers: list[str]) -> dict[str, tuple[np.ndarray, ...]]:
    """carrier -> (ts, inter-system, ping-pong) arrays of one run's handoffs, by time."""
    out = {}
    handoffs = handoffs.select("carrier", "ts", "system", "ping_pong")  # (filter and sort copy all they get)
    for c in carriers:
        h = handoffs.filter(pl.col("carrier") == c).sort("ts")
        out[c] = (h["ts"].to_numpy(), (h["system"] == "inter").to_numpy(), h["ping_pong"].to_numpy())
    return out


def _one(log: _RunLog | None, carrier: str | None, preset: str | None, a: float, b: float) -> dict:
    row: dict = {"carrier": carrier}
    if log is None or preset is not None:
        row["class_reason"] = preset or "no radio log"
        return row
    if a is None or b is None:
        row["class_reason"] = "flow without packet times"
        return row
    if len(log.all_ts) == 0 or log.all_ts[-1] < a - GAP_S or log.all_ts[0] > b + GAP_S:
        row["class_reason"] = "no overlap"
        return row
    reasons: list[str] = []
    # speed (phone-wide)
    i0, i1 = _window(log.speed_ts, a, b)
    if i1 == 0:
        reasons.append("no speed sample before the flow's end")
    else:
        hole = _max_hole(log.speed_ts[i0:i1 + 1], a, b)
        v = log.speed[i0:i1]
        inside = v[(log.speed_ts[i0:i1] >= a)] if (log.speed_ts[i0:i1] >= a).any() else v[-1:]
        row.update(speed_min_kmh=float(inside.min()), speed_mean_kmh=float(inside.mean()),
                   speed_max_kmh=float(inside.max()), speed_samples=int(len(inside)))
        if hole > GAP_S:
            reasons.append(f"gps gap {hole:.1f} s")
        else:
            row["speed_class"] = speed_class(row["speed_min_kmh"], row["speed_max_kmh"])
    # cells (the flow's carrier)
    if carrier is None:
        reasons.append("no cell information in the log (GPS only)" if not log.carriers else "carrier unknown")
    elif carrier not in log.cells:
        reasons.append(f"carrier {carrier} not in the radio log")
    else:
        cl = log.cells[carrier]
        j0, j1 = _window(cl["ts"], a, b)
        if j1 == 0:
            reasons.append("no cell sample before the flow's end")
        else:
            hole = _max_hole(cl["ts"][j0:j1 + 1], a, b)
            rats = sorted({log.rat_names[k] for k in np.unique(cl["rat"][j0:j1]) if k >= 0})
            row.update(rats=",".join(rats) or None, rat_change=len(rats) > 1)
            gen = cl["gen"][j0:j1]
            gen = gen[gen >= 0]
            row.update(generations=",".join(GENERATIONS[k] for k in np.unique(gen)) or None,
                       generation_changes=int((gen[1:] != gen[:-1]).sum()))
            hts, inter, pp = log.handoffs[carrier]
            k0, k1 = int(np.searchsorted(hts, a, "left")), int(np.searchsorted(hts, b, "right"))
            n_inter = int(inter[k0:k1].sum())
            row.update(handoffs=k1 - k0, handoffs_inter=n_inter, handoffs_intra=k1 - k0 - n_inter,
                       ping_pongs=int(pp[k0:k1].sum()))
            lte = cl["rat"][j0:j1] == (log.rat_names.index("LTE") if "LTE" in log.rat_names else -2)
            rsrp, rsrq = cl["rsrp"][j0:j1], cl["rsrq"][j0:j1]
            lte_rsrp = rsrp[lte & ~np.isnan(rsrp)]
            if len(lte_rsrp):
                row["rsrp_mean_dbm"] = float(lte_rsrp.mean())
                row["signal_s3"] = signal_s3(row["rsrp_mean_dbm"])
            if lte.any():
                with np.errstate(invalid="ignore"):
                    good = (lte & (rsrp >= S4_RSRP[0]) & (rsrp <= S4_RSRP[1])
                            & (rsrq >= S4_RSRQ[0]) & (rsrq <= S4_RSRQ[1]))
                row["signal_s4_good_share"] = float(good.sum() / len(good))
            if hole > GAP_S:
                reasons.append(f"cell log gap {hole:.1f} s")
    if reasons:
        row["class_reason"] = "; ".join(reasons)
    elif row.get("rat_change"):
        row["flow_class"], row["class_reason"] = "other", "rat change"
    else:
        row["flow_class"], row["class_reason"] = flow_class(row["speed_class"], row["handoffs"])
    return row


def _of_run(handoffs: pl.DataFrame, rid) -> pl.DataFrame:
    """The run's handoffs, the columns :func:`_handoff_arrays` reads (no copy when all are its)."""
    h = handoffs.select("run_id", "carrier", "ts", "system", "ping_pong")
    same = h["run_id"].eq_missing(rid) if rid is not None else h["run_id"].is_null()
    return h if same.all() else h.filter(same)


def flow_context(flows: pl.DataFrame, radio: pl.DataFrame | None, handoffs: pl.DataFrame | None,
                 windows: dict | None = None, handoff_arrays: dict | None = None) -> pl.DataFrame:
    """One context row per ``flows`` row (columns :data:`CONTEXT_SCHEMA`, docs/formats/context.md).

    ``flows`` needs ``flow_id``, ``first_ts``, ``last_ts``, ``run_id``, ``carrier`` and
    ``preset_reason`` (why the context cannot be judged before looking at the log, e.g.
    'several carriers in the log', or null). ``radio``/``handoffs`` carry a ``run_id``
    column: a flow is judged against its own run's log only. ``windows``: run_id ->
    :class:`hsrtcp.context.stream.FlowWindows` of the runs read block by block (their rows
    are not in ``radio``), built over the flows of that run in ``flows``' order.
    ``handoff_arrays``: run_id -> carrier -> (ts, inter-system, ping-pong) arrays by time, the
    handoffs of those runs when they are not in ``handoffs`` (spilled to files, issue 32)."""
    logs: dict = {}
    if radio is not None and not radio.is_empty():
        # only the columns _RunLog reads: grouping and sorting copy what they are given (issue 32)
        radio = radio.select(c for c in _RUNLOG_COLUMNS if c in radio.columns)
        for (rid,), part in radio.group_by(["run_id"], maintain_order=True):
            h = handoffs.filter(pl.col("run_id").eq_missing(rid)) if handoffs is not None else None
            logs[rid] = _RunLog(part, h if h is not None else pl.DataFrame(schema={"carrier": pl.String,
                                "ts": pl.Float64, "system": pl.String, "ping_pong": pl.Boolean}))
    windows = windows or {}
    empty_h = pl.DataFrame(schema={"run_id": pl.String, "carrier": pl.String, "ts": pl.Float64,
                                   "system": pl.String, "ping_pong": pl.Boolean})
    given = handoff_arrays or {}
    none = (np.empty(0), np.empty(0, dtype=bool), np.empty(0, dtype=bool))
    hand = {rid: ({c: given[rid].get(c, none) for c in w.carriers} if rid in given else
                  _handoff_arrays(_of_run(handoffs if handoffs is not None else empty_h, rid), w.carriers))
            for rid, w in windows.items()}
    seen: dict = {}  # run -> flows of it so far (the window's index)
    rows = []
    for f in flows.iter_rows(named=True):
        rid = f["run_id"]
        if rid in windows:
            k = seen[rid] = seen.get(rid, -1) + 1
            log = windows[rid].log_for(k, hand[rid])
        else:
            log = logs.get(rid)
        r = _one(log, f["carrier"], f["preset_reason"], f["first_ts"], f["last_ts"])
        r.update(flow_id=f["flow_id"], run_id=f["run_id"], first_ts=f["first_ts"], last_ts=f["last_ts"])
        if r.get("flow_class") is None:
            r["flow_class"] = "unknown"
        if r.get("speed_class") is None:
            r["speed_class"] = "unknown"
        r["usable"] = r["flow_class"] not in ("other", "unknown")
        rows.append(r)
    return pl.DataFrame(rows, schema=CONTEXT_SCHEMA) if rows else pl.DataFrame(schema=CONTEXT_SCHEMA)


def u_rate(context: pl.DataFrame, by: list[str] | None = None) -> pl.DataFrame:
    """M22 U-rate: usable flows / collected flows (A14: counts are collected counts).

    Usable = classed by M21 (any class but ``other`` and ``unknown``), hence also without a
    RAT change (S0 §IV-A's "single network type")."""
    agg = [pl.len().alias("collected"), pl.col("usable").sum().alias("usable")]
    out = context.group_by(by, maintain_order=True).agg(agg) if by else context.select(agg)
    return out.with_columns((pl.col("usable") / pl.col("collected")).alias("u_rate"))


# Extra grouping keys for the seeds' figures (hsrtcp.figures); the M21 classes above stay as
# they are. Seed 000 Table II's speed bands, with the band of a flow from its speed range.
SPEED_BANDS = ("static", "0-150", "150-280", "280-310", ">310")


def speed_band(vmin: float | None, vmax: float | None) -> str | None:
    """The seed 000 Table II band holding every speed sample of a flow (``static`` ≤ 5 km/h,
    ``0-150`` below 150 — the seed's class b and seed 003's driving —, ``150-280``,
    ``280-310``, ``>310``), ``mixed`` when the samples span bands, None without samples."""
    if vmin is None or vmax is None:
        return None
    if vmax <= STATIC_MAX_KMH:
        return "static"
    edges = ((LOW_MAX_KMH, "0-150"), (HIGH_BAND_KMH[0], "150-280"), (HIGH_BAND_KMH[1], "280-310"))

    def band(v: float) -> str:
        if v <= STATIC_MAX_KMH:
            return "static"
        for i, (edge, name) in enumerate(edges):
            # the seed's bands are [0,150), [150,280), [280,310]
            if v < edge or (i == 2 and v <= edge):
                return name
        return ">310"

    lo, hi = band(vmin), band(vmax)
    return lo if lo == hi else "mixed"


def flow_generation(rats: str | None) -> str | None:
    """A flow's network generation from context's ``generations`` (or, for a table without
    them, ``rats``; comma-separated): the one generation of all of them, or the ones met joined
    by ``+`` (``3G+4G``: a generation change), None when a name is unknown or missing (never a
    guess)."""
    from hsrtcp.context.generation import check_generation, generation_of

    def gen(name: str) -> str | None:
        try:
            return check_generation(name)
        except ValueError:  # not a generation: a RAT name
            return generation_of(name)

    if not rats:
        return None
    gens = {gen(r) for r in rats.split(",") if r.strip()}
    if not gens or None in gens:
        return None
    return "+".join(g for g in GENERATIONS if g in gens)


def handoff_band(handoffs: int | None) -> str | None:
    """Seed 000's handoff classes by count alone (any speed): ``0``, ``1-8``, ``9-16``, ``17+``."""
    if handoffs is None:
        return None
    if handoffs == 0:
        return "0"
    return "1-8" if handoffs <= 8 else ("9-16" if handoffs <= 16 else "17+")
