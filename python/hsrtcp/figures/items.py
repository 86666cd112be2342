"""The registry: one entry per numbered table and figure of the seed studies.

Each :class:`Item` names what the seed shows, what it needs, the seed's own numbers (with
the anchors of docs/metrics.md) and the function that makes it from :class:`Inputs` — or,
for a drawing of a method rather than of data, why there is nothing to make. A maker
returns :class:`Made` (the data drawn or tabulated, the figure, the lab's numbers and what
is still missing for the whole item) or raises :class:`Missing` naming the input or column.

Seed 002 is kept as its abstract only (docs/seeds.md): it has no numbered item here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from hsrtcp.figures import conjunction, draw
from hsrtcp.figures.inputs import SEED000_CLASSES, Inputs, Missing
from hsrtcp.figures.made import Gap, Made, data_gap, tool_gap
from hsrtcp.figures.made import markdown as _markdown
from hsrtcp.schemas import CLASS_ORDER


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    needs: str
    seed_numbers: str = ""
    make: Callable[[Inputs], Made] | None = None
    diagram: str | None = None  # why there is no data to draw

    @property
    def is_figure(self) -> bool:
        return "-fig-" in self.id

    @property
    def seed(self) -> str:
        return self.id[4:7]


#: the class groups the figures give a column: up to 16 handoffs
CLASS_COLUMNS = CLASS_ORDER[:CLASS_ORDER.index("high_17+")]


def _finite(df: pl.DataFrame, column: str) -> pl.DataFrame:
    return df.filter(pl.col(column).cast(pl.Float64).is_finite())


# -- figures from study_flows, one value per flow ------------------------------------------

def _by_group(inp: Inputs, column: str, group: str, *, groups: dict[str, str] | None = None,
              workload: str | None = None, label: str, unit: str, title: str, key: str,
              logx: bool = False, min_groups: int = 1) -> Made:
    """A CDF of ``study_flows.column`` per value of ``group`` (``groups``: the values kept
    and their names, in order), with the mean [interval] and median of each."""
    f = inp.flows((column,))
    if group not in f.columns:
        raise Missing(f"study_flows.parquet of STUDY: no column {group} (from context: a radio log)")
    gaps: list[Gap] = []
    if workload is not None:
        if "workload" in f.columns and (f["workload"] == workload).any():
            f = f.filter(pl.col("workload") == workload)
        else:
            gaps.append(data_gap(f"no {workload} flows (the seed's 3-minute downloads): every workload pooled"))
    f = _finite(f, column).filter(pl.col(group).is_not_null())
    if groups is not None:
        f = f.filter(pl.col(group).is_in(list(groups)))
        f = f.with_columns(pl.col(group).replace_strict(groups, return_dtype=pl.String).alias("group"))
        order = [name for g, name in groups.items() if name in set(f["group"].to_list())]
        absent = [name for g, name in groups.items() if name not in order]
        if absent:
            gaps.append(data_gap(f"no flows with {column} in: {'; '.join(absent)}"))
    else:
        f = f.with_columns(pl.col(group).cast(pl.String).alias("group"))
        order = sorted(set(f["group"].to_list()))
    if len(order) < min_groups:
        raise Missing(f"study_flows.{group}: {len(order)} group(s) with a value of {column} "
                      f"({', '.join(order) or 'none'}); the comparison needs {min_groups}")
    data = f.select("result", "flow_id", pl.col(group).cast(pl.String).alias(group), "group",
                    pl.col(column).cast(pl.Float64).alias("value"))
    summary, lines = draw.group_cells(data, order, unit, key)
    fig = draw.cdf(data, order, label, unit, title, logx=logx)
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def _seed000_cdf(column: str, label: str, unit: str, title: str, key: str, logx: bool = False,
                 workload: str | None = "duration"):
    def make(inp: Inputs) -> Made:
        return _by_group(inp, column, "flow_class", groups=SEED000_CLASSES, workload=workload, label=label,
                         unit=unit, title=title, key=key, logx=logx)
    return make


def _flows_by(column: str, group: str, label: str, unit: str, title: str, key: str, groups=None, min_groups=1):
    def make(inp: Inputs) -> Made:
        return _by_group(inp, column, group, groups=groups, label=label, unit=unit, title=title, key=key,
                         min_groups=min_groups)
    return make


# -- tables and bars from the study's own tables -------------------------------------------

def _cells(inp: Inputs, table: str, metrics: tuple[str, ...], classes=CLASS_COLUMNS, extra: tuple[str, ...] = ()):
    t = inp.need(table, ("flow_class", "metric", "unit", "n_flows", "n", "value", "value_lo", "value_hi", "note", *extra))
    rows = t.filter(pl.col("metric").is_in(list(metrics)) & pl.col("flow_class").is_in(list(classes)))
    if rows.is_empty():
        raise Missing(f"{table}.parquet of STUDY: no row of {', '.join(metrics)} in classes {', '.join(classes)}")
    if rows["value"].is_null().all():  # every cell empty: nothing to tabulate or draw
        raise Missing(f"{table}.parquet of STUDY: no value of {', '.join(metrics)} in classes "
                      f"{', '.join(classes)}{_flow_classes(inp)}")
    return rows.select("flow_class", *extra, "metric", "unit", "n_flows", "n", "value", "value_lo", "value_hi", "note")


def _flow_classes(inp: Inputs) -> str:
    """The study's flows by class (with the first reason of a class ``unknown``): why a
    class the seeds use has no flow."""
    f = inp.table("study_flows")
    if f is None or "flow_class" not in f.columns:
        return ""
    counts = f["flow_class"].fill_null("(none)").value_counts(sort=True)
    text = ", ".join(f"{n} {c}" for c, n in counts.iter_rows())
    unknown = f.filter(pl.col("flow_class") == "unknown")
    if "class_reason" in f.columns and unknown["class_reason"].drop_nulls().len():
        text += f" ({unknown['class_reason'].drop_nulls()[0]})"
    return f"; the study's flows by class: {text}"


def _class_table(rows: pl.DataFrame, seeds: dict[str, dict[str, dict[str, float]]]) -> tuple[str, list[str]]:
    """Markdown: one line per metric (lab) and per seed row, one column per class present."""
    present = [c for c in CLASS_COLUMNS if c in set(rows["flow_class"].to_list())]
    head = "| | " + " | ".join(present) + " |\n|---|" + "---|" * len(present) + "\n"
    body, lines = [], []
    for metric in dict.fromkeys(rows["metric"].to_list()):
        cells = []
        for c in present:
            r = rows.filter((pl.col("metric") == metric) & (pl.col("flow_class") == c))
            if r.is_empty():
                cells.append("")
                continue
            x = r.row(0, named=True)
            text = draw.cell_text(x["value"], x["value_lo"], x["value_hi"], x["unit"], x["n_flows"], x["n"], x["note"])
            cells.append(text)
            lines.append(f"{metric}, {c}: {text}")
        body.append(f"| lab {metric} | " + " | ".join(cells) + " |")
        for name, per_class in seeds.get(metric, {}).items():
            body.append(f"| seed {name} | " + " | ".join(draw.pct(per_class.get(c)) if c in per_class else ""
                                                        for c in present) + " |")
    return head + "\n".join(body) + "\n", lines


def _seed_table(table: str, metrics: tuple[str, ...], seeds: dict, classes=("static", "high_0", "high_1_16")):
    def make(inp: Inputs) -> Made:
        rows = _cells(inp, table, metrics, classes + ("high_1_8", "high_9_16"))
        md, lines = _class_table(rows, seeds)
        gaps = [data_gap(f"class {c}: no row in {table}.parquet") for c in classes if c not in set(rows["flow_class"].to_list())]
        gaps += _generation_gap(inp)
        return Made(data=rows, markdown=md, lab=lines, gaps=gaps)
    return make


def _generation_gap(inp: Inputs) -> list[str]:
    """The seeds split these tables by 3G and 4G: say which generations the data has."""
    f = inp.table("study_flows")
    if f is None or "rats" not in f.columns:
        return [data_gap("3G/4G rows: study_flows has no rats column (a radio log)")]
    gens = sorted({g for g in inp.flows()["generation"].to_list() if g is not None})
    if len(gens) < 2:
        return [data_gap(f"3G/4G rows: the data has {', '.join(gens) or 'no known generation'} only "
                f"(seed000-3g-vs-4g compares them when there are two)")]
    return []


def _bars_from_study(table: str, metric: str, label: str, title: str, classes=CLASS_COLUMNS, hue: str | None = None):
    def make(inp: Inputs) -> Made:
        rows = _cells(inp, table, (metric,), classes, extra=(hue,) if hue else ())
        data = rows.with_columns(pl.col("flow_class").alias("group"))
        order = [c for c in classes if c in set(data["group"].to_list())]
        data = data.sort(pl.col("group").replace_strict({c: i for i, c in enumerate(order)}, return_dtype=pl.Int64))
        fig = draw.bars(data, label, data["unit"][0], title, hue=hue)
        lines = [f"{r['group']}{', ' + str(r[hue]) if hue else ''}: "
                 f"{draw.cell_text(r['value'], r['value_lo'], r['value_hi'], r['unit'], r['n_flows'], r['n'], r['note'])}"
                 for r in data.iter_rows(named=True)]
        return Made(data=data.drop("group"), figure=fig, lab=lines)
    return make


# -- data set tables -----------------------------------------------------------------------

def _dataset(inp: Inputs, by: tuple[str, ...], generation: str | None = None) -> Made:
    f = inp.flows(("duration_s",))
    by = tuple(b for b in by if b in f.columns)
    gaps = []
    if generation is not None:
        if "generation" not in f.columns:
            raise Missing("study_flows.parquet of STUDY: no rats column (the generation needs a radio log)")
        f = f.filter(pl.col("generation") == generation)
        if f.is_empty():
            raise Missing(f"study_flows.generation: no {generation} flow in the data "
                          f"(generations present: {', '.join(sorted(set(inp.flows()['generation'].drop_nulls().to_list()))) or 'none'})")
    agg = [pl.len().alias("flows"), (pl.col("duration_s").sum() / 3600).alias("flow_hours")]
    if "acked_bytes" in f.columns:
        agg.append((pl.col("acked_bytes").cast(pl.Float64).sum() / 1e9).alias("acked_GB"))
    if "usable" in f.columns:
        agg.append(pl.col("usable").cast(pl.Float64).mean().alias("u_rate"))
    else:
        gaps.append(data_gap("U-rate: study_flows has no usable column (context)"))
    if "run_id" in f.columns:
        agg.append(pl.col("result").n_unique().alias("runs"))
    data = f.group_by(list(by), maintain_order=True).agg(agg).sort(list(by))
    md = _markdown(data)
    lines = [", ".join(f"{k} {r[k]}" for k in by) + f": {r['flows']} flows" +
             (f", U-rate {draw.pct(r['u_rate'])}" if "u_rate" in r else "") for r in data.iter_rows(named=True)]
    return Made(data=data, markdown=md, lab=lines, gaps=gaps)




#: label keys (``hsrtcp analyze --label KEY=VALUE``, kept in study_flows as KEY or labels.KEY)
#: that name the phone and its OS, in the order shown
DEVICE_LABELS = ("device", "phone", "model", "os")
#: label keys that name where the trips ran (seed 000 Table II's and seed 004 Table I's HSR
#: lines and stations, seed 003 Table I's location): no radio log names a place
ROUTE_LABELS = ("route", "line", "location", "stations")


def _label_columns(f: pl.DataFrame, keys: tuple[str, ...]) -> list[str]:
    """The columns of study_flows holding a label of ``keys`` with a value, in that order."""
    out = []
    for k in keys:
        for c in (k, f"labels.{k}"):
            if c in f.columns and f[c].drop_nulls().len():
                out.append(c)
                break
    return out


def s000_table_1(inp: Inputs) -> Made:
    f = inp.flows(("carrier", "rats"))
    device = _label_columns(f, DEVICE_LABELS)
    by = [*device, "carrier", "rats", "generation"]
    data = f.group_by(by, maintain_order=True).agg(pl.len().alias("flows")).sort(by, nulls_last=True)
    lab = [(" ".join(str(r[c]) for c in device if r[c] is not None) + ", " if device else "")
           + f"carrier {r['carrier']}: {r['rats']} ({r['generation']}), {r['flows']} flows" for r in data.iter_rows(named=True)]
    gaps = [] if device else [data_gap(f"phone model and OS: no input names them (hsrtcp analyze --label phone=... "
                                       f"--label os=...; label keys read: {', '.join(DEVICE_LABELS)})")]
    return Made(data=data, markdown=_markdown(data), lab=lab, gaps=gaps)


def _routes(inp: Inputs) -> tuple[pl.DataFrame | None, list[Gap]]:
    """Route length per run from the GPS fixes of RESULTS' radio logs
    (:func:`hsrtcp.figures.route.route_lengths`), with the gaps of a route table."""
    from hsrtcp.figures.route import route_lengths

    try:
        radio = _radio(inp, "the radio table (lat, lon)", ("ts", "lat", "lon"))
    except Missing:
        radio = None
    routes = route_lengths(radio) if radio is not None else None
    if routes is None or routes.is_empty():
        return None, [data_gap("route length (km): needs the positions of a radio log (RESULTS radio table "
                               "with lat, lon; none with two fixes of a run)")]
    routes = routes.with_columns(pl.col("result").map_elements(lambda r: r.rstrip("/").rsplit("/", 1)[-1],
                                                               return_dtype=pl.String))
    return routes, []


def _place_gap(what: str) -> Gap:
    return data_gap(f"{what}: no input names one (hsrtcp analyze --label route=... --label stations=...; "
                    f"label keys read: {', '.join(ROUTE_LABELS)})")


def _with_routes(inp: Inputs, made: Made, places: list[str], what: str = "stations") -> Made:
    """``made`` with the route length per run (:func:`_routes`); ``places``: the route label
    columns the table is grouped by (none: ``what`` is a gap)."""
    routes, gaps = _routes(inp)
    made.gaps += gaps + ([] if places else [_place_gap(what)])
    if routes is not None:
        made.markdown += ("\n\nRoute length per run, from the GPS fixes of the radio logs of RESULTS (haversine; "
                          "a jump faster than the log's speed samples allow is a glitch, skipped):\n\n" + _markdown(routes))
        made.lab += [f"route of {r['result']} ({r['run_id']}): {r['route_km']:.3f} km over {r['span_s']:.1f} s, "
                     f"{r['fixes']} fixes, {r['glitches']} glitch(es) skipped" for r in routes.iter_rows(named=True)]
    return made


def s000_table_2(inp: Inputs) -> Made:
    f = inp.flows(("scenario", "speed_min_kmh", "speed_max_kmh", "duration_s"))
    places = _label_columns(f, ROUTE_LABELS)
    by = [*places, "scenario", "speed_band"]
    data = (f.group_by(by, maintain_order=True)
            .agg(pl.col("result").n_unique().alias("runs"), pl.len().alias("flows"),
                 (pl.col("duration_s").sum() / 3600).alias("flow_hours"))
            .sort(by, nulls_last=True))
    lab = [", ".join(str(r[c]) for c in by) + f": {r['flow_hours']:.3g} flow-hours ({r['flows']} flows)"
           for r in data.iter_rows(named=True)]
    markdown = _markdown(data)
    train = _train_hours(inp)
    if train is None:
        gaps = [data_gap("the train's hours per speed band: the hours here are flow hours "
                         "(study_flows.duration_s); the train's need the radio log's speed samples (RESULTS radio table)")]
    else:
        gaps = []
        markdown += "\n\nThe train's time per speed band, from the radio logs of RESULTS:\n\n" + _markdown(train)
        lab += [f"train, {r['speed_band']}: {r['train_s']:.1f} s in {r['logs']} log(s)" for r in train.iter_rows(named=True)]
    return _with_routes(inp, Made(data=data, markdown=markdown, lab=lab, gaps=gaps), places)


def _radio(inp: Inputs, what: str, need: tuple[str, ...]) -> pl.DataFrame:
    """RESULTS' radio table with the columns ``need`` (else Missing), ``run_id`` null where a
    log has none."""
    radio = inp.extra("radio", what).collect()
    absent = [c for c in need if c not in radio.columns]
    if absent:
        raise Missing(f"radio.parquet of RESULTS: no column {', '.join(absent)}")
    if "run_id" not in radio.columns:
        radio = radio.with_columns(pl.lit(None, dtype=pl.String).alias("run_id"))
    return radio


def _train_hours(inp: Inputs) -> pl.DataFrame | None:
    """Per speed band, the time of the radio logs of RESULTS (one timeline per run: a time
    logged by several carriers counts once), each speed sample held until the next; None
    without a radio table with speeds."""
    from hsrtcp.context import classes

    if not inp.results_dirs:
        return None
    try:
        radio = inp.extra("radio", "the radio table (speed samples)").collect()
    except Missing:
        return None
    if "speed_kmh" not in radio.columns:
        return None
    if "run_id" not in radio.columns:
        radio = radio.with_columns(pl.lit(None, dtype=pl.String).alias("run_id"))
    key = ["result", "run_id"]
    r = (radio.filter(pl.col("speed_kmh").is_finite()).sort([*key, "ts"], nulls_last=True)
         .unique([*key, "ts"], keep="first", maintain_order=True)
         .with_columns((pl.col("ts").shift(-1).over(key) - pl.col("ts")).fill_null(0.0).alias("held_s"),
                       pl.col("speed_kmh").map_elements(lambda v: classes.speed_band(v, v), return_dtype=pl.String)
                       .alias("speed_band")))
    if r.is_empty():
        return None
    return (r.group_by("speed_band").agg(pl.col("held_s").sum().alias("train_s"),
                                         pl.struct(key).n_unique().alias("logs"))
            .with_columns((pl.col("train_s") / 3600).alias("train_hours")).sort("speed_band"))


def _table_3_4(generation: str):
    def make(inp: Inputs) -> Made:
        return _dataset(inp, ("scenario", "carrier", "workload"), generation)
    return make


def s000_table_6(inp: Inputs) -> Made:
    f = inp.flows(("carrier", "rats", "duration_s"))
    tot = f.group_by("carrier").agg(pl.col("duration_s").sum().alias("total"))
    data = (f.group_by("carrier", "rats").agg(pl.col("duration_s").sum().alias("flow_s"))
            .join(tot, on="carrier").with_columns((pl.col("flow_s") / pl.col("total")).alias("share"))
            .drop("total").sort("carrier", "rats"))
    return Made(data=data, markdown=_markdown(data),
                lab=[f"carrier {r['carrier']}: {r['rats']} {draw.pct(r['share'])} of flow time" for r in data.iter_rows(named=True)])


def _radio_time(inp: Inputs, period: str) -> Made:
    """Seed 000 Tables V and VI: per carrier, the share of the radio log's time in each network
    type (each sample held until the next; a log's last sample holds no time). A log is of the
    4G period when it has a 4G or 5G sample, of the 3G period when its newest generation is 3G."""
    radio = _radio(inp, "the radio table (RAT over time)", ("ts", "rat", "carrier"))
    if "generation" not in radio.columns:
        from hsrtcp.context.generation import generation_of

        radio = radio.with_columns(pl.col("rat").map_elements(generation_of, return_dtype=pl.String).alias("generation"))
    key = ["result", "run_id", "carrier"]
    radio = radio.sort([*key, "ts"], nulls_last=True).with_columns(
        (pl.col("ts").shift(-1).over(key) - pl.col("ts")).fill_null(0.0).alias("held_s"))
    newest = radio.group_by(key).agg(pl.col("generation").is_in(["4G", "5G NSA", "5G SA"]).any().alias("g4"),
                                     (pl.col("generation") == "3G").any().alias("g3"))
    keep = newest.filter(pl.col("g4") if period == "4G" else (~pl.col("g4") & pl.col("g3")))
    if keep.is_empty():
        present = sorted({g for g in radio["generation"].to_list() if g is not None})
        raise Missing(f"radio.parquet of RESULTS: no log of the {period} period "
                      f"(generations present: {', '.join(present) or 'none known'})")
    logs = radio.join(keep.select(key), on=key, how="semi", nulls_equal=True)
    tot = logs.group_by("carrier").agg(pl.col("held_s").sum().alias("total_s"))
    data = (logs.group_by("carrier", "rat", "generation").agg(pl.col("held_s").sum().alias("time_s"))
            .join(tot, on="carrier").with_columns((pl.col("time_s") / pl.col("total_s")).alias("share"))
            .sort(["carrier", "share", "rat"], descending=[False, True, False]))
    lines = [f"carrier {r['carrier']}: {r['rat']} ({r['generation']}) {draw.pct(r['share'])} of "
             f"{r['total_s']:.1f} s" for r in data.iter_rows(named=True)]
    return Made(data=data, markdown=_markdown(data), lab=[f"{keep.height} radio log(s)"] + lines)


def _table_5_6(period: str, fallback=None):
    def make(inp: Inputs) -> Made:
        if inp.results_dirs or fallback is None:
            return _radio_time(inp, period)
        made = fallback(inp)
        made.gaps.append(data_gap("the seed's share of all connected time per network type needs the radio log's "
                         "samples (RESULTS radio table; none given); here: the share of flow time by the RATs a flow met"))
        return made
    return make


def s001_table_1(inp: Inputs) -> Made:
    return _dataset(inp, ("scenario", "workload"))


def s003_table_1(inp: Inputs) -> Made:
    f = inp.flows(("scenario", "speed_mean_kmh", "duration_s"))
    places = _label_columns(f, ROUTE_LABELS)
    by = [*places, "scenario", "speed_band"]
    data = (f.group_by(by, maintain_order=True)
            .agg(pl.len().alias("flows"), pl.col("result").n_unique().alias("runs"),
                 pl.col("speed_mean_kmh").mean().alias("speed_kmh"),
                 (pl.col("duration_s").sum() / 60).alias("flow_minutes"))
            .sort(by, nulls_last=True))
    made = Made(data=data, markdown=_markdown(data),
                lab=[", ".join(str(r[c]) for c in [*places, "scenario"]) + f": {draw.fmt(r['speed_kmh'], 'km/h', 'speed unknown')}, "
                     f"{r['flows']} flows, {r['flow_minutes']:.0f} flow-minutes" for r in data.iter_rows(named=True)])
    return _with_routes(inp, made, places, "location (a place name)")


def s004_table_2(inp: Inputs) -> Made:
    """Seed 004's data sets (single path per carrier, MPTCP per combination) from the MPTCP
    instance tables; without them, the study's single-path flows per carrier."""
    try:
        made = conjunction.s004_table_2_mptcp(inp)
    except Missing as m:
        made = _dataset(inp, ("carrier", "scenario"))
        made.gaps = [data_gap(f"MPTCP instances per carrier combination: {m.reason}; here: single-path flows per carrier")] + made.gaps
        return made
    made.gaps.append(data_gap("routes: the lab's scenarios, not HSR lines (seed004-table-I gives their length from "
                              "the radio logs; no log names a station)"))
    return made


def s001_fig_3(inp: Inputs) -> Made:
    f = inp.flows(("p_d", "q"))
    parts = [_finite(f, c).select("result", "flow_id", pl.lit(name).alias("group"), pl.col(c).cast(pl.Float64).alias("value"))
             for c, name in (("p_d", "p_d: over the flow's life"), ("q", "q: in timeout recovery"))]
    data = pl.concat(parts)
    if data.is_empty():
        raise Missing("study_flows.p_d, study_flows.q: no finite value (both need a connection seen in both "
                      "captures: hsrtcp analyze --client PHONE --server SERVER)")
    order = ["p_d: over the flow's life", "q: in timeout recovery"]
    _, lines = draw.group_cells(data, order, "share", "s001-fig-3")
    fig = draw.cdf(data, order, "loss rate", "share", "two loss rates, per flow")
    # q is defined only for flows with a timeout (A17): its curve has fewer flows, n says how many
    return Made(data=data, figure=fig, lab=lines)


#: seed 001 Fig. 10's two models (hsrtcp.models: PFTK full, the enhanced model re-derived)
FIG10_MODELS = {"pftk_full": "PFTK (Padhye)", "enh_rederived": "enhanced (seed 001, re-derived)"}
#: above this many study flows seed 001 Fig. 10 fits a random sample (a report of 1 M flows)
FIG10_MAX_FLOWS = 20_000


def s001_fig_10(inp: Inputs) -> Made:
    """The models fitted to the study's connections (hsrtcp.models.on_data, as docs/models.md):
    measured against predicted throughput per flow, and D = |pred - measured| / measured."""
    from pathlib import Path

    from hsrtcp.errors import InputError
    from hsrtcp.models.on_data import lab_ack_loss, on_data

    f = inp.need("study_flows", ("scenario",))
    root = Path(__file__).resolve().parents[3] / "scenarios"
    names = sorted(f["scenario"].drop_nulls().unique().to_list())
    absent = [s for s in names if not (root / f"{s}.toml").is_file()]
    if absent:
        raise Missing(f"the lab's ACK loss of scenario(s) {', '.join(absent)}: no scenarios/<name>.toml "
                      f"(the model inputs of docs/models.md are the lab campaign's)", kind="tool")
    gaps = [data_gap("the seed plots the models over its traces by carrier; here: per flow of the lab campaign, "
            "model inputs derived as docs/models.md says (P_a from ACK-loss spurious timeouts, T from "
            "timeout sequences)")]
    n_all = f.height
    if n_all > FIG10_MAX_FLOWS:  # the model inputs cost about 2 ms per flow with loss
        f = f.sample(FIG10_MAX_FLOWS, seed=0).sort("result", "flow_id")
        gaps.append(tool_gap(f"fitted to {FIG10_MAX_FLOWS:,} of {n_all:,} flows drawn at random (seed 0)"))
    try:
        fit = on_data(f, {s: lab_ack_loss(root / f"{s}.toml") for s in names}).flows
    except InputError as exc:
        raise Missing(f"study_flows.parquet of STUDY: {exc}") from None
    fit = fit.with_columns(f["result"].alias("result"))
    data = pl.concat([fit.select("result", "flow_id", "cls", "workload", pl.lit(name).alias("group"),
                                 pl.col("throughput_pkts").alias("measured"),
                                 pl.col(f"pred_{key}").alias("predicted"), pl.col(f"d_{key}").alias("d"))
                      for key, name in FIG10_MODELS.items()]).filter(pl.col("d").is_not_null())
    if data.is_empty():
        raise Missing("study_flows.parquet of STUDY: no flow with a measured throughput and a prediction")
    order = list(FIG10_MODELS.values())
    lines = []
    for g in order:
        part = data.filter(pl.col("group") == g)
        lines.append(f"{g}: D mean {draw.pct(part['d'].mean())}, median {draw.pct(part['d'].median())} "
                     f"({part.height} of {f.height} flows with a prediction)")
    fig = draw.measured_predicted(data, order, "packets/s", "per flow of the study")
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def _first_made(inp: Inputs, *makers) -> Made:
    """The first maker's item that is not Missing; else Missing with every maker's reason."""
    reasons = []
    for make in makers:
        try:
            return make(inp)
        except Missing as m:
            reasons.append(m.reason)
    raise Missing("; ".join(reasons))


def s001_fig_12(inp: Inputs) -> Made:
    """MPTCP against TCP: from one RESULTS directory's connections (below), else from the MPTCP
    instance tables (:func:`hsrtcp.figures.conjunction.s001_fig_12`)."""
    return _first_made(inp, _s001_fig_12_connections, conjunction.s001_fig_12)


def _s001_fig_12_connections(inp: Inputs) -> Made:
    """Throughput of the MPTCP connections (mptcp.parquet: DSN bytes down over first_ts..last_ts)
    beside the single-path TCP flows (flows without an MPTCP option: bytes acknowledged over
    the flow's duration) of the same RESULTS directory, so both ran on the same paths."""
    res = inp.results("mptcp.parquet and single-path flows")
    parts, seen_mptcp = [], False
    for d, rd in res.stack.parts.items():
        if not rd.has("mptcp"):
            continue
        m = rd.read("mptcp").filter(pl.col("last_ts") > pl.col("first_ts"))
        seen_mptcp = seen_mptcp or not m.is_empty()
        f = res.flows.filter((pl.col("result") == d) & ~pl.col("mptcp").fill_null(False)
                             & (pl.col("duration_s") > 0) & pl.col("goodput_bytes").is_not_null())
        if "vantage" in f.columns:  # one row per connection: the phone's capture when there is one
            side = "client" if (f["vantage"] == "client").any() else "server"
            f = f.filter(pl.col("vantage") == side)
        if m.is_empty() or f.is_empty():
            continue
        parts.append(m.select(pl.lit(d).alias("result"), pl.col("connection_id").alias("id"), pl.lit("MPTCP").alias("group"),
                              (pl.col("data_bytes_down").cast(pl.Float64) * 8 / (pl.col("last_ts") - pl.col("first_ts")))
                              .alias("value")))
        parts.append(f.select(pl.lit(d).alias("result"), pl.col("flow_id").alias("id"), pl.lit("TCP").alias("group"),
                              (pl.col("goodput_bytes").cast(pl.Float64) * 8 / pl.col("duration_s")).alias("value")))
    if not parts:
        raise Missing("mptcp.parquet of RESULTS: " + (
            "no RESULTS directory holds both MPTCP connections and single-path TCP flows "
            "(the comparison needs both measured on the same paths: analyze them into one directory)"
            if seen_mptcp else "no MPTCP connection in any RESULTS directory given"))
    data = pl.concat(parts)
    order = ["MPTCP", "TCP"]
    _, lines = draw.group_cells(data, order, "bit/s", "s001-fig-12")
    lines = [ln.replace(" flows", " connections") for ln in lines]
    return Made(data=data, figure=draw.cdf(data, order, "throughput", "bit/s", "per connection, same directory"),
                lab=lines)


def s000_generations(inp: Inputs) -> Made:
    f = inp.flows(("spurious_rto_rate", "dupack_rate"))
    if "generation" not in f.columns:  # no rats column: results without a radio log
        raise Missing("study_flows.parquet of STUDY: no column rats (from context: a radio log)")
    gens = sorted({g for g in f["generation"].to_list() if g is not None})
    if len(gens) < 2:
        raise Missing(f"study_flows.generation: one generation only ({', '.join(gens) or 'none known'}); "
                      f"the 3G-vs-4G comparison needs flows of two")
    rows = []
    from hsrtcp.study import stats
    for metric in ("spurious_rto_rate", "dupack_rate"):
        for g in gens:
            for cls in ("static", "high_0", "high_1_16"):
                sel = f.filter((pl.col("generation") == g) & (
                    pl.col("flow_class").is_in(["high_1_8", "high_9_16"]) if cls == "high_1_16" else pl.col("flow_class") == cls))
                c = stats.per_flow(sel[metric].to_list(), min_flows=1, n_boot=1000,
                                   rng=stats.rng_for(0, f"gen/{metric}/{g}/{cls}"), min_interval=stats.MIN_INTERVAL_FLOWS)
                rows.append({"metric": metric, "generation": g, "flow_class": cls, "n_flows": c.n_flows,
                             "value": c.value, "value_lo": c.value_lo, "value_hi": c.value_hi})
    data = pl.DataFrame(rows)
    lines = [f"{r['metric']}, {r['generation']}, {r['flow_class']}: "
             f"{draw.cell_text(r['value'], r['value_lo'], r['value_hi'], 'share', r['n_flows'])}" for r in data.iter_rows(named=True)]
    return Made(data=data, markdown=_markdown(data), lab=lines)


def s003_fig_8(inp: Inputs) -> Made:
    """Per flow of the study, by inter-system handoff; without such a flow there, one flow's
    throughput across them from the conjunction runs (:func:`conjunction.s003_fig_8`)."""
    return _first_made(inp, _s003_fig_8_flows, conjunction.s003_fig_8)


def _s003_fig_8_flows(inp: Inputs) -> Made:
    f = inp.flows(("handoffs_inter", "throughput_mean_bps"))
    f = f.with_columns(pl.when(pl.col("handoffs_inter") > 0).then(pl.lit("inter-system handoff"))
                       .when(pl.col("handoffs_inter") == 0).then(pl.lit("no inter-system handoff"))
                       .alias("inter_system"))
    n_inter = int((f["handoffs_inter"].fill_null(0) > 0).sum())
    if n_inter == 0:
        raise Missing(f"study_flows.handoffs_inter: no flow crossed an inter-system handoff "
                      f"({f.height} flows, all 0 or null)")
    return _by_group(_Shim(inp, f), "throughput_mean_bps", "inter_system", label="throughput, mean of the flow",
                     unit="bit/s", title="per flow, by inter-system handoff", key="s003-fig-8", min_groups=2)


class _Shim:
    """An Inputs whose flows() is a given frame (a grouping column made by the maker)."""

    def __init__(self, inp: Inputs, frame: pl.DataFrame) -> None:
        self._inp, self._frame = inp, frame

    def flows(self, columns=()):
        absent = [c for c in columns if c not in self._frame.columns]
        if absent:
            raise Missing(f"study_flows.parquet of STUDY: no column {', '.join(absent)}")
        return self._frame


def _s003_fig_9_time(inp: Inputs) -> Made:
    """Seed 003 Fig. 9 as the seed draws it: the RTT samples of one flow over time (the
    sender's, method ack in the data direction: Karn's) with its intra-system handoffs
    marked; the server-side flow of RESULTS that crosses the most, then has the most samples."""
    res = inp.results("rtt.parquet and handoffs.parquet")
    if res.handoffs is None or "system" not in res.handoffs.columns:
        raise Missing("handoffs.parquet of RESULTS: in no RESULTS directory given (a radio log)")
    ho = res.handoffs.filter(pl.col("system") == "intra").select("result", "ts")
    f = res.flows.filter(pl.col("vantage") == "server") if "vantage" in res.flows.columns else res.flows
    f = f.select("result", "flow_id", "first_ts", "last_ts", pl.col("data_dir").fill_null("s2c"))
    crossed = (f.join(ho, on="result").filter((pl.col("ts") >= pl.col("first_ts")) & (pl.col("ts") <= pl.col("last_ts")))
               .group_by("result", "flow_id").agg(pl.col("ts").sort().alias("handoffs")))
    rtt = (inp.extra("rtt", "rtt.parquet (RTT samples)").join(f.lazy(), on=["result", "flow_id"])
           .filter((pl.col("method") == "ack") & (pl.col("dir") == pl.col("data_dir")))
           .select("result", "flow_id", "first_ts", "ts", "rtt_s").collect())
    cand = (crossed.join(rtt.group_by("result", "flow_id").len(), on=["result", "flow_id"])
            .with_columns(pl.col("handoffs").list.len().alias("n_ho"))
            .sort(["n_ho", "len", "result", "flow_id"], descending=[True, True, False, False]))
    if cand.is_empty():
        raise Missing("rtt.parquet of RESULTS: no server-side flow with RTT samples crosses an intra-system handoff")
    c = cand.row(0, named=True)
    data = (rtt.filter((pl.col("result") == c["result"]) & (pl.col("flow_id") == c["flow_id"])).sort("ts")
            .with_columns((pl.col("ts") - pl.col("first_ts")).alias("t_rel")).drop("first_ts"))
    t0 = float(f.filter((pl.col("result") == c["result"]) & (pl.col("flow_id") == c["flow_id"]))["first_ts"][0])
    marks = [t - t0 for t in c["handoffs"]]
    name = c["result"].rstrip("/").rsplit("/", 1)[-1]
    lines = [f"flow {c['flow_id']} of {name} (server capture): {data.height} RTT samples, median "
             f"{draw.fmt(data['rtt_s'].median(), 's')}, max {draw.fmt(data['rtt_s'].max(), 's')}; "
             f"{len(marks)} intra-system handoffs at " + ", ".join(f"{t:.3f}" for t in marks) + " s of the flow"]
    fig = draw.samples_with_marks(data, "rtt_s", marks, "RTT", "s", f"RTT samples of one flow, {name}")
    return Made(data=data, figure=fig, lab=lines)


def s003_fig_9(inp: Inputs) -> Made:
    """With RESULTS: the seed's drawing (RTT over time, handoffs marked) and the study's
    per-flow mean RTT by intra-system handoff count as lines; without: that per-flow CDF."""
    if inp.results_dirs:
        made = _s003_fig_9_time(inp)
        try:
            made.lab += [f"study: {line}" for line in _s003_fig_9_by_count(inp).lab]
        except Missing:
            pass
        return made
    return _s003_fig_9_by_count(inp)


def _s003_fig_9_by_count(inp: Inputs) -> Made:
    f = inp.flows(("handoffs_intra", "rtt_mean_s"))
    f = f.with_columns(pl.col("handoffs_intra").map_elements(
        lambda h: None if h is None else ("0" if h == 0 else "1-8" if h <= 8 else "9-16" if h <= 16 else "17+"),
        return_dtype=pl.String).alias("intra_handoffs"))
    made = _by_group(_Shim(inp, f), "rtt_mean_s", "intra_handoffs",
                     groups={"0": "0 intra-system handoffs", "1-8": "1-8", "9-16": "9-16", "17+": "17+"},
                     label="RTT, mean of the flow", unit="s", title="per flow, by intra-system handoffs",
                     key="s003-fig-9", min_groups=2)
    made.gaps.insert(0, data_gap("the seed draws RTT samples over time with the handoffs marked: needs RESULTS "
                        "(rtt.parquet, handoffs.parquet; none given); here: per-flow mean RTT by intra-system handoff count"))
    return made


def _results_cdf(table: str, column: str, group: str | None, label: str, unit: str, title: str, key: str,
                 vantage: tuple[str, ...] = (), classes: dict[str, str] | None = None):
    """A CDF of a column of RESULTS' ``table`` (handoffs, suspensions, flows), per
    ``group`` of the flow's context when given. ``vantage``: the flows rows that carry the
    column (a connection has client, server and matched rows: one is kept, never all).
    ``classes``: the seed's groups (value: name), drawn first; those with no flow are a gap."""
    def make(inp: Inputs) -> Made:
        res = inp.results(f"{table}.parquet")
        t = getattr(res, table, None)
        if t is None:
            raise Missing(f"{table}.parquet of RESULTS: not in any RESULTS directory given")
        if column not in t.columns:
            raise Missing(f"{table}.parquet of RESULTS: no column {column}")
        if vantage and "vantage" in t.columns:
            t = t.filter(pl.col("vantage").is_in(list(vantage)))
            if t.is_empty():
                raise Missing(f"{table}.parquet of RESULTS: no {' or '.join(vantage)} row")
        if group and res.context is not None and "flow_id" in t.columns:
            t = t.join(res.context.select("result", "flow_id", group), on=["result", "flow_id"], how="left")
        g = pl.col(group).cast(pl.String).fill_null("(none)") if group and group in t.columns else pl.lit("all")
        data = _finite(t, column).select("result", g.alias("group"), pl.col(column).cast(pl.Float64).alias("value"))
        if data.is_empty():
            raise Missing(f"{table}.{column} of RESULTS: no finite value")
        order, gaps = sorted(set(data["group"].to_list())), []
        if classes is not None:
            data = data.with_columns(pl.col("group").replace(classes))
            present = set(data["group"].to_list())
            order = [name for name in classes.values() if name in present] + sorted(present - set(classes.values()))
            absent = [name for name in classes.values() if name not in present]
            if absent:
                gaps.append(data_gap(f"no flow with {column} in: {'; '.join(absent)}"))
        _, lines = draw.group_cells(data, order, unit, key)
        return Made(data=data, figure=draw.cdf(data, order, label, unit, title), lab=lines, gaps=gaps)
    return make


_S003_FIG_12_BARS = _bars_from_study("suspensions", "suspension_gt_10s_share", "suspensions > 10 s",
                                     "by handoff class", classes=("high_0", "high_1_8", "high_9_16", "high_1_16"))


def s003_fig_12(inp: Inputs) -> Made:
    """One flow's sequence numbers with its suspensions (:func:`hsrtcp.figures.packets.s003_fig_12`);
    without RESULTS packets, the study's share of suspensions > 10 s per handoff class."""
    from hsrtcp.figures import packets

    try:
        made = packets.s003_fig_12(inp)
    except Missing as m:
        made = _S003_FIG_12_BARS(inp)
        made.gaps.append(data_gap(f"the seed draws one flow's sequence numbers with its suspensions: {m.reason}; "
                                  f"here: the share of suspensions > 10 s per handoff class"))
        return made
    try:  # the study's numbers stay beside the one flow, with their n and intervals
        made.lab += [f"study, suspensions > 10 s, {line}" for line in _S003_FIG_12_BARS(inp).lab]
    except Missing:
        pass
    return made


def s000_fig_7(inp: Inputs) -> Made:
    """The senders' RTO estimation bias per flow, by the seed's classes a-e, whose panels are
    3G and 4G."""
    made = _results_cdf("flows", "rto_bias_mean", "flow_class", "RTO estimation bias", "s", "per flow",
                        "s000-fig-7", vantage=("server",), classes=SEED000_CLASSES)(inp)
    made.gaps += _generation_gap(inp)
    return made


def _study_or_results(study_make, results_make, samples: str, study_n=None):
    """The study table's summary as bars from STUDY; the CDF of the samples when RESULTS are given.
    ``study_n``: the number of samples the study counted; RESULTS with another number are not
    the study's inputs, so the study's summary stays beside their CDF and the item is partly."""
    def make(inp: Inputs) -> Made:
        if inp.results_dirs:
            made = results_make(inp)
            n = study_n(inp) if study_n is not None else None
            if n is not None and n != made.data.height:
                try:
                    study_lines = study_make(inp).lab
                except Missing:
                    study_lines = []
                made.lab = [f"study: {line}" for line in study_lines] + [f"RESULTS: {line}" for line in made.lab]
                made.gaps.append(data_gap(f"the CDF is of the {made.data.height} samples of the RESULTS given; the study "
                                 f"counts {n}: the RESULTS are not the study's inputs"))
            return made
        made = study_make(inp)
        made.gaps.append(data_gap(f"the CDF needs the samples, {samples} of RESULTS (none given); "
                         f"here: the study table's summary as bars"))
        return made
    return make


def _study_n(table: str, metric: str, flow_class: str | None = None):
    """The samples a study table's cell counts (its ``n``), or None without the table."""
    def n(inp: Inputs) -> int | None:
        t = inp.table(table)
        if t is None or not {"metric", "n"} <= set(t.columns):
            return None
        t = t.filter(pl.col("metric") == metric)
        if flow_class is not None and "flow_class" in t.columns:
            t = t.filter(pl.col("flow_class") == flow_class)
        return int(t["n"].sum()) if t.height else None
    return n


#: seed 003's three speeds, as speed bands (hsrtcp.context.classes.speed_band)
S3_SPEEDS = {"static": "static", "0-150": "0-150 km/h (driving)", "280-310": "280-310 km/h"}


def s003_fig_4(inp: Inputs) -> Made:
    """RTT jitter: |difference of consecutive RTT samples| of a flow, from the sender's own
    samples (rtt.parquet of server-side rows, method ack, the data direction: Karn's), per
    speed band of the flow's context."""
    from hsrtcp.context import classes

    res = inp.results("rtt.parquet (RTT samples)")
    rtt = inp.extra("rtt", "rtt.parquet (RTT samples)")
    f = res.flows.filter(pl.col("vantage") == "server") if "vantage" in res.flows.columns else res.flows
    f = f.select("result", "flow_id", pl.col("data_dir").fill_null("s2c"))
    if res.context is not None and {"speed_min_kmh", "speed_max_kmh"} <= set(res.context.columns):
        ctx = res.context.select("result", "flow_id", pl.struct("speed_min_kmh", "speed_max_kmh").map_elements(
            lambda x: classes.speed_band(x["speed_min_kmh"], x["speed_max_kmh"]), return_dtype=pl.String)
            .alias("speed_band"))
        f = f.join(ctx, on=["result", "flow_id"], how="left")
    else:
        f = f.with_columns(pl.lit(None, dtype=pl.String).alias("speed_band"))
    s = (rtt.with_row_index("row").join(f.lazy(), on=["result", "flow_id"], how="inner")
         .filter((pl.col("method") == "ack") & (pl.col("dir") == pl.col("data_dir")))
         .sort("result", "flow_id", "ts", "row").collect())  # samples at one time keep the table's order
    s = s.with_columns((pl.col("rtt_s") - pl.col("rtt_s").shift(1).over("result", "flow_id")).abs().alias("value"))
    data = s.filter(pl.col("value").is_not_null()).select(
        "result", "flow_id", "ts", pl.col("speed_band").fill_null("(no radio log)").alias("speed_band"),
        pl.col("speed_band").replace_strict(S3_SPEEDS, default=None, return_dtype=pl.String)
        .fill_null(pl.col("speed_band").fill_null("(no radio log)")).alias("group"), "value")
    if data.is_empty():
        raise Missing("rtt.parquet of RESULTS: no flow with two ack RTT samples of the sender")
    order = [g for g in S3_SPEEDS.values() if g in set(data["group"].to_list())]
    order += sorted(set(data["group"].to_list()) - set(order))
    lines = []
    for g in order:
        v = data.filter(pl.col("group") == g)
        lines.append(f"{g}: {100 * float((v['value'] <= 0.0076).mean()):.3g} % of jitter <= 7.6 ms, median "
                     f"{draw.fmt(v['value'].median(), 's')} ({v.height:,} samples of "
                     f"{v.select('result', 'flow_id').unique().height} flows)")
    absent = [name for name in S3_SPEEDS.values() if name not in order]
    gaps = [data_gap(f"no flow with RTT samples at: {'; '.join(absent)}")] if absent else []
    return Made(data=data, figure=draw.cdf(data, order, "RTT jitter", "s", "sender's RTT samples", logx=True),
                lab=lines, gaps=gaps)


def s003_fig_5(inp: Inputs) -> Made:
    """The longest radio log of a moving train in RESULTS (one run and carrier; else the longest
    log): RSRP over time with its
    handoffs (handoffs.parquet), the time per RAT (each sample held until the next) and the
    longest time without LTE or NR (seed 003's 129 s)."""
    radio = _radio(inp, "the radio table (RSRP/RAT over time)", ("ts", "rsrp_dbm", "rat", "carrier"))
    key = ["result", "run_id", "carrier"]
    # a trip: a log of a moving train first (a standing train's log is no trip), then the longest
    moving = (pl.col("speed_kmh").max() > 5).fill_null(False) if "speed_kmh" in radio.columns else pl.lit(False)
    spans = radio.group_by(key).agg((pl.col("ts").max() - pl.col("ts").min()).alias("span"), pl.len().alias("n"),
                                    moving.alias("moving"))
    spans = spans.filter(pl.col("n") >= 2).sort(["moving", "span", "result"], descending=[True, True, False],
                                                 nulls_last=True)
    if spans.is_empty():
        raise Missing("radio.parquet of RESULTS: no log with two samples or more")
    r = spans.row(0, named=True)
    log = radio.filter((pl.col("result") == r["result"]) & (pl.col("carrier") == r["carrier"])
                       & (pl.col("run_id") == r["run_id"] if r["run_id"] is not None else pl.col("run_id").is_null()))
    log = log.sort("ts")
    t0 = log["ts"][0]
    log = log.with_columns((pl.col("ts") - t0).alias("t_rel"),
                           (pl.col("ts").shift(-1) - pl.col("ts")).fill_null(0.0).alias("held_s"))
    data = log.select("result", "run_id", "carrier", "ts", "t_rel", "held_s", "rat", "cid", "rsrp_dbm")
    ho = []
    res = inp.results("handoffs.parquet")
    if res.handoffs is not None:
        h = res.handoffs.filter((pl.col("result") == r["result"]) & (pl.col("carrier") == r["carrier"]))
        if r["run_id"] is not None and "run_id" in h.columns:
            h = h.filter(pl.col("run_id") == r["run_id"])
        ho = sorted(t - t0 for t in h["ts"].to_list())
    share = data.group_by("rat").agg(pl.col("held_s").sum()).sort("rat")
    total = float(data["held_s"].sum())
    if "generation" in log.columns:  # 4G, 5G NSA, 5G SA (hsrtcp.context.classes)
        lte = log["generation"].fill_null("").str.contains(r"^(4G|5G)").to_numpy()
    else:
        lte = data["rat"].is_in(["LTE", "NR"]).to_numpy()
    longest, run = 0.0, 0.0
    for held, ok in zip(data["held_s"].to_list(), lte):
        run = 0.0 if ok else run + held
        longest = max(longest, run)
    name = r["result"].rstrip("/").rsplit("/", 1)[-1]
    lines = [f"log of {name} (carrier {r['carrier']}): {data.height} samples over {r['span']:.1f} s, "
             f"{len(ho)} handoffs, RSRP median {draw.fmt(data['rsrp_dbm'].median(), 'dBm', 'unknown (no RSRP in the log)')}",
             "time per RAT: " + ", ".join(f"{x['rat']} {draw.pct(x['held_s'] / total if total else None)}"
                                          for x in share.iter_rows(named=True)),
             f"longest time without LTE or NR: {longest:.3g} s"]
    fig = draw.signal(data, ho, f"carrier {r['carrier']}, {name}")
    return Made(data=data, figure=fig, lab=lines)


def _one_flow(kind: str, pick: str, columns: tuple[str, ...], key: str):
    """One flow of RESULTS drawn by ``hsrtcp plot KIND`` (docs/plot.md): ``pick`` chooses it —
    ``most_handoffs`` (then the longest), ``static`` or ``high`` (the longest flow of that
    speed class, from context). The CSV is that flow's series rows."""
    def make(inp: Inputs) -> Made:
        from hsrtcp.plot import figure

        res = inp.results("series.parquet and context.parquet")
        if res.context is None:
            raise Missing("context.parquet of RESULTS (a radio log): no RESULTS directory has one")
        f = res.flows.select("result", "flow_id", "vantage", "data_dir", "first_ts", "last_ts").join(
            res.context.select("result", "flow_id", "flow_class", "handoffs"), on=["result", "flow_id"], how="inner")
        if kind == "window":
            f = f.filter(pl.col("vantage") == "server")  # bytes in flight: the sender's capture
        f = f.with_columns((pl.col("last_ts") - pl.col("first_ts")).alias("length"))
        if pick == "most_handoffs":
            f = f.filter(pl.col("handoffs") > 0).sort(["handoffs", "length"], descending=True, nulls_last=True)
            what = "a flow with handoffs"
        else:
            f = f.filter(pl.col("flow_class").str.starts_with(pick)).sort("length", descending=True, nulls_last=True)
            what = f"{pick} flow"
        if f.is_empty():
            raise Missing(f"context.parquet of RESULTS: no {what}" + (" in a server-side capture" if kind == "window" else ""))
        row = f.row(0, named=True)
        name = row["result"].rstrip("/").rsplit("/", 1)[-1]
        about = (f"flow {row['flow_id']} of {name}: {row['flow_class']}, {row['handoffs']} handoffs, "
                 f"{row['length']:.1f} s")
        if kind == "window":  # every ACK from the packets table when there is one
            from hsrtcp.figures.packets import at_acks

            acks = at_acks(inp, row["result"], row["flow_id"], row["data_dir"] or "s2c", row["first_ts"])
            if acks is not None and not acks.is_empty():
                fig = draw.over_time(acks, {"swnd_bytes": "SWND: data outstanding", "awnd_bytes": "AWND: advertised window"},
                                     "B", f"at each ACK, {row['flow_class']}")
                return Made(data=acks, figure=fig, lab=[f"{about}; {acks.height} ACKs: SWND mean "
                                                        f"{acks['swnd_bytes'].mean():.0f} B, AWND mean {acks['awnd_bytes'].mean():.0f} B"])
        series = res.series.filter((pl.col("result") == row["result"]) & (pl.col("flow_id") == row["flow_id"])).collect()
        absent = [c for c in columns if c not in series.columns]
        if absent or series.is_empty():
            raise Missing(f"series.parquet of RESULTS: {'no column ' + ', '.join(absent) if absent else 'no bins'} "
                          f"for flow {row['flow_id']} of {row['result']}")
        fig = figure(kind, row["result"], row["flow_id"])
        data = series.select("result", "flow_id", "bin", "t_rel", *[c for c in columns if c not in ("bin", "t_rel")])
        return Made(data=data, figure=fig, lab=[about])
    return make


def _bif_cdf(fallback):
    def make(inp: Inputs) -> Made:
        from hsrtcp.figures import packets

        return packets.s000_fig_13(inp, fallback)
    return make


def _packets(name: str):
    def make(inp: Inputs) -> Made:
        from hsrtcp.figures import packets

        return getattr(packets, name)(inp)
    return make


def s001_fig_4(inp: Inputs) -> Made:
    """Seed 001 Fig. 4: one point per flow, its ACK loss rate p_a against its probability of
    a timeout, here timeout sequences per data packet sent (the matched row of a pair: p_a
    needs both captures, docs/metrics.md)."""
    res = inp.results("flows.p_a (a pair: --client and --server)")
    f = res.flows
    need = [c for c in ("vantage", "p_a", "timeout_sequences", "data_packets_sent") if c not in f.columns]
    if need:
        raise Missing(f"flows.parquet of RESULTS: no column {', '.join(need)} (a pair: --client and --server)")
    f = f.filter((pl.col("vantage") == "matched") & pl.col("p_a").is_not_null()
                 & pl.col("timeout_sequences").is_not_null() & (pl.col("data_packets_sent").fill_null(0) > 0))
    if f.is_empty():
        raise Missing("flows.parquet of RESULTS: no matched row with p_a and data packets (a pair: --client and --server)")
    data = f.select("result", "flow_id", pl.col("p_a").cast(pl.Float64), "timeout_sequences", "data_packets_sent",
                    (pl.col("timeout_sequences").cast(pl.Float64) / pl.col("data_packets_sent")).alias("timeout_rate"))
    lines = []
    for r in data.iter_rows(named=True):
        name = r["result"].rstrip("/").rsplit("/", 1)[-1]
        lines.append(f"{name} flow {r['flow_id']}: p_a {draw.pct(r['p_a'])}, {r['timeout_sequences']} timeout "
                     f"sequence(s) in {r['data_packets_sent']} data packets ({draw.pct(r['timeout_rate'])})")
    fig = draw.scatter(data, "p_a", "timeout_rate", "ACK loss rate p_a", "timeout sequences per data packet",
                       "per flow of a captured pair")
    return Made(data=data, figure=fig, lab=[f"{data.height} flows of captured pairs"] + lines)


def _track(inp: Inputs) -> tuple[pl.DataFrame, str]:
    """The radio log of RESULTS with the most positioned samples (one run and carrier)."""
    radio = _radio(inp, "the radio table (lat, lon)", ("ts", "lat", "lon", "rsrp_dbm", "carrier"))
    radio = radio.filter(pl.col("lat").is_finite() & pl.col("lon").is_finite())
    counts = radio.group_by("result", "run_id", "carrier").len().sort(
        ["len", "result", "carrier"], descending=[True, False, False], nulls_last=True)
    if counts.is_empty() or counts["len"][0] < 2:
        raise Missing("radio.parquet of RESULTS: no log with two positions or more (lat, lon)")
    r = counts.row(0, named=True)
    log = radio.filter((pl.col("result") == r["result"]) & (pl.col("carrier") == r["carrier"])
                       & (pl.col("run_id") == r["run_id"] if r["run_id"] is not None else pl.col("run_id").is_null()))
    log = log.sort("ts").with_columns((pl.col("ts") - pl.col("ts").min()).alias("t_rel"))
    name = r["result"].rstrip("/").rsplit("/", 1)[-1]
    return log.select("result", "run_id", "carrier", "ts", "t_rel", "lat", "lon", "rsrp_dbm"), \
        f"{name} (carrier {r['carrier']})"


def _track_km(log: pl.DataFrame) -> float:
    from hsrtcp.figures.route import haversine_km

    lat, lon = log["lat"].to_numpy(), log["lon"].to_numpy()
    return float(haversine_km(lat[:-1], lon[:-1], lat[1:], lon[1:]).sum())


def s003_fig_1(inp: Inputs) -> Made:
    log, name = _track(inp)
    km = _track_km(log)
    span = float(log["t_rel"].max())
    lines = [f"trace of {name}: {log.height} positions over {span:.1f} s, {km:.3f} km along the samples "
             f"({3600 * km / span:.0f} km/h mean)" if span > 0 else f"trace of {name}: {log.height} positions",
             f"latitude {log['lat'].min():.5f} to {log['lat'].max():.5f}, longitude {log['lon'].min():.5f} "
             f"to {log['lon'].max():.5f}"]
    return Made(data=log, figure=draw.track(log, f"trace of {name}, coloured by RSRP"), lab=lines)


def s004_fig_2(inp: Inputs) -> Made:
    """The footprint of every run of RESULTS with two fixes or more: its GPS fixes in time order
    (a time logged by several carriers once), one trace each, with its route length."""
    from hsrtcp.figures.route import route_lengths

    radio = _radio(inp, "the radio table (lat, lon)", ("ts", "lat", "lon"))
    key = ["result", "run_id"]
    fixes = (radio.filter(pl.col("lat").is_finite() & pl.col("lon").is_finite())
             .sort([*key, "ts"], nulls_last=True, maintain_order=True)
             .unique([*key, "ts"], keep="first", maintain_order=True))
    routes = route_lengths(radio)
    if routes.is_empty():
        raise Missing("radio.parquet of RESULTS: no run with two positions or more (lat, lon)")
    name = pl.col("result").map_elements(lambda r: r.rstrip("/").rsplit("/", 1)[-1], return_dtype=pl.String)
    run = pl.concat_str([name, pl.lit(" ("), pl.col("run_id").fill_null("–"), pl.lit(")")]).alias("run")
    data = (fixes.join(routes.select(key), on=key, how="semi", nulls_equal=True)
            .select(run, *key, "ts", "lat", "lon"))
    routes = routes.with_columns(run)
    lines = [f"footprint of {r['run']}: {r['fixes']} fixes, {r['route_km']:.3f} km, {r['glitches']} glitch(es) skipped"
             for r in routes.iter_rows(named=True)]
    runs = routes["run"].to_list()
    return Made(data=data, figure=draw.footprints(data, runs, f"footprints of {len(runs)} run(s)"), lab=lines,
                gaps=[data_gap("the set-up drawing (phones, carriers) is not data")])


def _two_carriers(inp: Inputs) -> tuple[pl.DataFrame, dict]:
    """The run of RESULTS whose radio log has the most carriers (two at least), then the
    longest: its samples per carrier, each held until the carrier's next sample."""
    try:
        radio = _radio(inp, "the radio table of two or more carriers", ("ts", "rat", "carrier", "rsrp_dbm"))
    except Missing:
        radio = None
    beside = inp.beside_mptcp("radio")  # the conjunction runs' logs, kept beside their instance tables
    if beside is not None and (radio is None or radio.group_by("result", "run_id")
                               .agg(pl.col("carrier").n_unique().alias("n"))["n"].max() < 2):
        radio = beside
    if radio is None:
        raise Missing("radio.parquet of RESULTS: in no RESULTS directory given")
    runs = (radio.group_by("result", "run_id").agg(pl.col("carrier").n_unique().alias("carriers"),
                                                   (pl.col("ts").max() - pl.col("ts").min()).alias("span"))
            .sort(["carriers", "span", "result"], descending=[True, True, False], nulls_last=True))
    if runs.is_empty() or runs["carriers"][0] < 2:
        most = int(runs["carriers"].max() or 0) if runs.height else 0
        raise Missing(f"radio.parquet of RESULTS: no run logs two carriers or more (at most {most} per run)")
    r = runs.row(0, named=True)
    log = radio.filter((pl.col("result") == r["result"])
                       & (pl.col("run_id") == r["run_id"] if r["run_id"] is not None else pl.col("run_id").is_null()))
    t0 = float(log["ts"].min())
    log = (log.sort("carrier", "ts").with_columns(
        (pl.col("ts") - t0).alias("t_rel"),
        (pl.col("ts").shift(-1).over("carrier") - pl.col("ts")).fill_null(0.0).alias("held_s"),
        (pl.col("rat") == "LTE").alias("lte")))
    quality = ["rsrq_db"] if "rsrq_db" in log.columns else []
    return log.select("result", "run_id", "carrier", "ts", "t_rel", "held_s", "rat", "cid", "rsrp_dbm", *quality,
                      "lte"), {**r, "t0": t0}


def s004_fig_1(inp: Inputs) -> Made:
    """Seed 004 Fig. 1: two or more carriers over one trip — RSRP of each against time with
    its handoffs, and the LTE coverage of each and of either (coverage.parquet, M28)."""
    data, r = _two_carriers(inp)
    if r["result"] in inp.results_dirs:
        res = inp.results("handoffs.parquet")
        handoffs, coverage = res.handoffs, res.coverage
    else:  # a log kept beside MPTCP instance tables, with its handoffs and coverage
        handoffs, coverage = inp.beside_mptcp("handoffs"), inp.beside_mptcp("coverage")
    marks: dict[str, list[float]] = {}
    if handoffs is not None:
        h = handoffs.filter(pl.col("result") == r["result"])
        if r["run_id"] is not None and "run_id" in h.columns:
            h = h.filter(pl.col("run_id") == r["run_id"])
        for c, t in zip(h["carrier"].to_list(), h["ts"].to_list()):
            marks.setdefault(c, []).append(t - r["t0"])
    name = r["result"].rstrip("/").rsplit("/", 1)[-1]
    if r["result"] not in inp.results_dirs and r["run_id"]:
        name = f"{name} {r['run_id']}"
    lines = []
    if coverage is not None:
        cov = coverage.filter(pl.col("result") == r["result"])
        if r["run_id"] is not None and "run_id" in cov.columns:
            cov = cov.filter(pl.col("run_id") == r["run_id"])
        lines += [f"LTE coverage, {'either carrier' if x['carrier'] == '*' else 'carrier ' + x['carrier']}: "
                  f"{draw.pct(x['lte_coverage'])} of {x['total_s']:.1f} s" for x in cov.sort("carrier").iter_rows(named=True)]
    carriers = sorted(set(data["carrier"].to_list()))
    lines += [f"carrier {c}: {len(marks.get(c, []))} handoffs, RSRP median "
              f"{draw.fmt(data.filter(pl.col('carrier') == c)['rsrp_dbm'].median(), 'dBm')}" for c in carriers]
    gaps = []
    if "rsrq_db" in data.columns and data["rsrq_db"].drop_nulls().len():
        # the seed's four panels: LTE coverage, signal strength, signal quality, handoffs
        fig = draw.carriers_panels(data, carriers, marks, f"{len(carriers)} carriers, {name}")
        lines += [f"carrier {c}: RSRQ median {draw.fmt(data.filter(pl.col('carrier') == c)['rsrq_db'].median(), 'dB')}"
                  for c in carriers]
    else:
        fig = draw.carriers(data, carriers, marks, f"{len(carriers)} carriers, {name}")
        gaps.append(data_gap("the seed's (c), signal quality: the radio log has no RSRQ; its (a), LTE coverage over the "
                    "trip, is given as the shares above only"))
    return Made(data=data, figure=fig, lab=[f"log of {name}: {len(carriers)} carriers"] + lines, gaps=gaps)


# -- the registry ----------------------------------------------------------------------------

PER_PACKET = "RESULTS packets of a pair (hsrtcp analyze --client --server --packets)"


def _never(why: str):
    def make(inp: Inputs) -> Made:
        raise Missing(why)
    return make


T7 = {"spurious_rto_rate": {"3G": {"static": 0.063, "high_0": 0.2068, "high_1_16": 0.5839},
                            "4G": {"static": 0.0552, "high_0": 0.1721, "high_1_16": 0.5062}}}
T8 = {"ackl_share": {"3G": {"static": 0.0138, "high_0": 0.0321, "high_1_16": 0.0812},
                     "4G": {"static": 0.0152, "high_0": 0.0281, "high_1_16": 0.0762}},
      "rtoei_share": {"3G": {"static": 0.9862, "high_0": 0.9679, "high_1_16": 0.9188},
                      "4G": {"static": 0.9848, "high_0": 0.9719, "high_1_16": 0.9238}}}
T9 = {"dupack_rate": {"3G": {"static": 0.0252, "high_0": 0.1821, "high_1_16": 0.5069},
                      "4G": {"static": 0.0108, "high_0": 0.0576, "high_1_16": 0.1216}}}

ITEMS: tuple[Item, ...] = (
    # seed 000: Li et al., TCP over 3G/4G on high-speed rails
    Item("seed000-table-I", "types of smartphones (phone, carrier, RAT)", "study_flows: carrier, rats",
         "4 phones; carriers A, B, C; WCDMA/EVDO/FDD-LTE/TD-LTE", s000_table_1),
    Item("seed000-table-II", "HSR lines: trips and hours per speed band", "study_flows: scenario, speed, duration",
         "B-G: 25 trips, static 42.2 h, 0-150 61.3 h, 150-280 48.8 h, 280-310 115.7 h", s000_table_2),
    Item("seed000-table-III", "data set I (3G): flows per route and workload, U-rate",
         "study_flows: generation 3G, workload, usable", "U-rate 43.4-56.7 % (3G)", _table_3_4("3G")),
    Item("seed000-table-IV", "data set II (4G): flows per route and workload, U-rate",
         "study_flows: generation 4G, workload, usable", "U-rate 93.9-97.1 % (4G)", _table_3_4("4G")),
    Item("seed000-table-V", "share of time per network type, 3G period", "RESULTS radio table (time per RAT)",
         "carrier A: HSPA+ 69.69 %, HSDPA 20.16 %, UMTS 7.23 %, EDGE 2.89 %; carrier B: EVDOA 75.28 %",
         _table_5_6("3G")),
    Item("seed000-table-VI", "share of time per network type, 4G period", "RESULTS radio table (time per RAT); else study_flows: carrier, rats, duration",
         "carrier A: FDD-LTE 75.23 %; carrier C: TD-LTE 71.32 %", _table_5_6("4G", s000_table_6)),
    Item("seed000-fig-01", "CDF of packet loss rate, classes a-e", "study_flows: p_d, flow_class",
         "T0-30: P(100 % loss) = 0 at 280-310 km/h without handoffs; T0-31: 35 % with 9-16",
         _seed000_cdf("p_d", "data loss rate p_d", "share", "3-minute flows per class", "s000-fig-1")),
    Item("seed000-fig-02", "CDF of RTT, classes a-e", "study_flows: rtt_mean_s, flow_class",
         "T0-35/36: orderings only", _seed000_cdf("rtt_mean_s", "RTT, mean of the flow", "s", "3-minute flows per class", "s000-fig-2")),
    Item("seed000-fig-03", "CDF of throughput, classes a-e", "study_flows: throughput_mean_bps, flow_class",
         "T0-32/33: P(throughput = 0) with 9-16 handoffs 47 % (3G), 13 % (4G)",
         _seed000_cdf("throughput_mean_bps", "throughput, mean of the flow", "bit/s", "3-minute flows per class", "s000-fig-3")),
    Item("seed000-fig-04", "throughput over time with handoffs (one flow)", "RESULTS series.parquet, handoffs.parquet",
         "", _one_flow("throughput", "most_handoffs", ("bytes",), "s000-fig-4")),
    Item("seed000-table-VII", "spurious RTO rate", "study spurious_rto: spurious_rto_rate", "T0-40/41",
         _seed_table("spurious_rto", ("spurious_rto_rate",), T7)),
    Item("seed000-table-VIII", "causes of spurious RTOs (RTOEI / ACKL)", "study spurious_rto: rtoei_share, ackl_share",
         "T0-42/43", _seed_table("spurious_rto", ("rtoei_share", "ackl_share"), T8)),
    Item("seed000-table-IX", "DupACK rate", "study dupack: dupack_rate", "T0-44/45",
         _seed_table("dupack", ("dupack_rate",), T9)),
    Item("seed000-fig-05", "examples of spurious RTOs (time-sequence graphs)",
         "RESULTS events (spurious_timeout), packets (--packets)", "", _packets("s000_fig_5")),
    Item("seed000-fig-06", "how the RTO estimation bias is computed", "", "",
         diagram="a drawing of the method (docs/metrics.md M16), not of data"),
    Item("seed000-fig-07", "CDF of RTO estimation bias", "RESULTS flows.rto_bias_mean", "",
         s000_fig_7),
    Item("seed000-fig-08", "SWND and AWND over time, static", "RESULTS packets or series (bif_mean, awnd_mean), context", "",
         _one_flow("window", "static", ("bif_mean", "awnd_mean"), "s000-fig-8")),
    Item("seed000-fig-09", "SWND and AWND over time, full speed", "RESULTS packets or series (bif_mean, awnd_mean), context", "",
         _one_flow("window", "high", ("bif_mean", "awnd_mean"), "s000-fig-9")),
    Item("seed000-fig-10", "CDF of connection establishment time", "study_flows: establishment_s",
         "T0-53: rises with speed and handoffs; 4G << 3G",
         _seed000_cdf("establishment_s", "establishment time", "s", "50 KB flows per class", "s000-fig-10", workload="50KB")),
    Item("seed000-fig-11", "CDF of connection closure time", "study_flows: closure_s",
         "T0-53: closure >> establishment",
         _seed000_cdf("closure_s", "closure time", "s", "50 KB flows per class", "s000-fig-11", workload="50KB")),
    Item("seed000-fig-12", "transmission failure rate by class and flow size", "study failure: failure_rate",
         "T0-55: 2 MB flows >> 50 KB flows; both lower in 4G",
         _bars_from_study("failure", "failure_rate", "failure rate", "share of flows failed (M20)", hue="workload")),
    Item("seed000-fig-13", "CDF of bytes in flight", "RESULTS packets (every ACK) or flows.bif_mean", "",
         _bif_cdf(_results_cdf("flows", "bif_mean", "flow_class", "bytes in flight, mean of the flow", "B", "per flow",
                               "s000-fig-13", vantage=("server",)))),
    Item("seed000-3g-vs-4g", "Tables VII and IX by network generation", "study_flows: rats (two generations)",
         "T0-40/41, T0-44/45", s000_generations),
    # seed 001: Liu et al., measurement and model of TCP at high speed
    Item("seed001-table-I", "data set", "study_flows: scenario, workload", "Beijing-Tianjin, about 120 km (T1-01)", s001_table_1),
    Item("seed001-fig-01", "time for ACKs and data packets to arrive", PER_PACKET, "T1-04: about 30 ms one way",
         _packets("s001_fig_1")),
    Item("seed001-fig-02", "retransmissions in a timeout recovery phase",
         "RESULTS events (timeout_sequence), packets (--packets)", "", _packets("s001_fig_2")),
    Item("seed001-fig-03", "CDF of the two loss rates p_d and q", "study_flows: p_d, q",
         "T1-10: p_d 0.7526 %; T1-09: q 27.26 %", s001_fig_3),
    Item("seed001-fig-04", "ACK loss rate against timeout events", "RESULTS flows of a pair: p_a, timeout_sequences, data_packets_sent",
         "S1 §III-B: a positive, not strong, correlation over its flows",
         s001_fig_4),
    Item("seed001-fig-05", "two cases where ACK loss triggers a timeout", "", "", diagram="a drawing of two cases"),
    Item("seed001-fig-06", "CDF of the ACK loss rate p_a", "RESULTS flows.p_a (two vantages)",
         "T1-12: p_a 0.661 % on HSR, 0.0718 % standing",
         _results_cdf("flows", "p_a", "flow_class", "ACK loss rate p_a", "share", "per flow", "s001-fig-6",
                      vantage=("matched",))),
    Item("seed001-fig-07", "window evolution in a congestion-avoidance phase", "", "",
         diagram="the model's derivation (hsrtcp.models implements it)"),
    Item("seed001-fig-08", "window evolution with two kinds of loss indication", "", "",
         diagram="the model's derivation (hsrtcp.models implements it)"),
    Item("seed001-fig-09", "window evolution under window limitation", "", "",
         diagram="the model's derivation (hsrtcp.models implements it)"),
    Item("seed001-fig-10", "the model against the Padhye model", "study_flows (model inputs), scenarios/*.toml (lab p_a)",
         "", s001_fig_10),
    Item("seed001-fig-11", "one ACK's arrival avoids a timeout", "", "", diagram="a drawing of one case"),
    Item("seed001-fig-12", "MPTCP against TCP throughput", "RESULTS mptcp.parquet and single-path flows in one directory, "
         "or mptcp_instances and mptcp_paths",
         "S1 §V-B: MPTCP improves throughput by 42.15 % (China Mobile, 83 flows), 95.64 % (Unicom, 63), "
         "283.33 % (Telecom, 64)", s001_fig_12),
    # seed 003: Xiao et al., TCP over mobile networks at high speed
    Item("seed003-table-I", "scenarios: location, speed, duration", "study_flows: scenario, speed",
         "T3-01: standing 5 min; driving 100 km/h, 12 min; HSR 300 km/h, 33 min", s003_table_1),
    Item("seed003-fig-01", "measurement traces on a map", "RESULTS radio latitude/longitude", "",
         s003_fig_1),
    Item("seed003-fig-02", "throughput at different speeds", "study_flows: throughput_mean_bps, speed_band",
         "T3-03: 1663.4 kbit/s standing, 1509.5 driving, 575.8 HSR",
         _flows_by("throughput_mean_bps", "speed_band", "throughput, mean of the flow", "bit/s", "per flow by speed",
                   "s003-fig-2", groups={"static": "static", "0-150": "0-150 km/h (driving)", "280-310": "280-310 km/h"})),
    Item("seed003-fig-03", "RTT at different speeds", "study_flows: rtt_mean_s, speed_band",
         "T3-06: 99.6 % / 97.3 % of samples < 30 ms standing / driving; T3-05: 11.4 % >= 0.4 s on HSR",
         _flows_by("rtt_mean_s", "speed_band", "RTT, mean of the flow", "s", "per flow by speed", "s003-fig-3",
                   groups={"static": "static", "0-150": "0-150 km/h (driving)", "280-310": "280-310 km/h"})),
    Item("seed003-fig-04", "RTT jitter at different speeds", "RESULTS rtt.parquet (samples), context (speed)",
         "T3-07: >= 90 % of jitter <= 7.6 ms standing and driving", s003_fig_4),
    Item("seed003-fig-05", "signal condition over one trip", "RESULTS radio table (RSRP over time), handoffs",
         "T3-11: no LTE for 129 s", s003_fig_5),
    Item("seed003-fig-06", "signal strength at different speeds", "study_flows: rsrp_mean_dbm, speed_band", "",
         _flows_by("rsrp_mean_dbm", "speed_band", "RSRP, mean over the flow", "dBm", "per flow by speed", "s003-fig-6",
                   groups={"static": "static", "0-150": "0-150 km/h (driving)", "280-310": "280-310 km/h"})),
    Item("seed003-fig-07", "signal strength and TCP throughput", "study_flows: throughput_mean_bps, signal_s3", "",
         _flows_by("throughput_mean_bps", "signal_s3", "throughput, mean of the flow", "bit/s", "per flow by RSRP class",
                   "s003-fig-7", groups={"good": "good >= -85 dBm", "average": "average", "weak": "weak", "bad": "bad < -105 dBm"})),
    Item("seed003-fig-08", "inter-system handoffs and throughput", "study_flows: handoffs_inter, throughput_mean_bps; "
         "else RESULTS mptcp_rates with radio and handoffs beside them",
         "T3-17: LTE -> EDGE drops throughput to 20-30 kbit/s", s003_fig_8),
    Item("seed003-fig-09", "intra-system handoffs and RTT", "RESULTS rtt.parquet, handoffs.parquet; else study_flows: handoffs_intra, rtt_mean_s",
         "T3-18: RTT from 12 ms to 25 s over 35 handoffs", s003_fig_9),
    Item("seed003-fig-10", "CDF of the handoff interval", "study handoff_intervals; RESULTS handoffs.interval_s",
         "T3-19: 45.1 % <= 10 s",
         _study_or_results(lambda inp: _carrier_bars(inp),
                           _results_cdf("handoffs", "interval_s", None, "handoff interval", "s", "pooled", "s003-fig-10"),
                           "handoffs.interval_s", _study_n("handoff_intervals", "handoff_interval_s"))),
    Item("seed003-fig-11", "CDF of the suspension duration", "study suspensions; RESULTS suspensions.suspension_s",
         "T3-20: 27.8 % > 10 s",
         _study_or_results(_bars_from_study("suspensions", "suspension_s", "suspension, mean", "per handoff (M24)"),
                           _results_cdf("suspensions", "suspension_s", "flow_class", "suspension", "s", "per class", "s003-fig-11"),
                           "suspensions.suspension_s", _study_n("suspensions", "suspension_s", "all"))),
    Item("seed003-fig-12", "handoff frequency and suspension",
         "RESULTS suspensions and packets (--packets); else study suspensions by class",
         "T3-22: 15.8 % of a 450-s window suspended", s003_fig_12),
    # seed 004: carrier selection or MPTCP conjunction on HSR
    Item("seed004-fig-01", "carrier complementarity over a trip (coverage, signal, handoffs)",
         "RESULTS radio table with two or more carriers", "T4-04: LTE coverage M 79 %, U 76 %, either 94 %",
         s004_fig_1),
    Item("seed004-fig-02", "measurement set-up and HSR footprints", "RESULTS radio latitude/longitude", "",
         s004_fig_2),
    Item("seed004-table-I", "HSR lines", "study_flows: scenario, speed, duration", "", s000_table_2),
    Item("seed004-table-II", "data set per carrier (combination)",
         "RESULTS mptcp_instances, mptcp_paths; else study_flows: carrier", "", s004_table_2),
    Item("seed004-fig-03", "a dual-carrier MPTCP example", "RESULTS mptcp_subflows, packets (--packets)", "",
         _packets("s004_fig_3")),
    Item("seed004-fig-04", "conjunction efficiency U_c of MPTCP", "RESULTS mptcp_instances (u_c), mptcp_paths",
         "T4-20: median U_c 1.4 static, 1.0 high speed ((M, U)); T4-22: P(U_c > 1) 51 % (M, U), 32 % (M, T), "
         "49 % (U, T), 47 % (M, U, T) at high speed", conjunction.s004_fig_4),
    Item("seed004-fig-05", "the classified instances of (M, U)", "RESULTS mptcp_instances (u_c, u_t, instance_class), "
         "mptcp_paths (subflow_utilization)",
         "T4-23: positive 21 %, semi 29 %, negative 50 %; T4-24: > 75 % of negative instances with U_t < 50 %",
         conjunction.s004_fig_5),
    Item("seed004-fig-06", "subflow degradation: throughput of three instances",
         "RESULTS mptcp_rates, mptcp_paths (degraded, degradation_onset_s), mptcp_instances",
         "T4-26: instances with a degraded subflow: positive 39.7 %, semi-positive 62.5 %, negative 100 %",
         conjunction.s004_fig_6),
    Item("seed004-fig-07", "subflow degradation: LIA against Reno, cwnd", "RESULTS mptcp_kt (k_t), mptcp_instances",
         "T4-29/30: LIA's increase slows after repeated decreases; k_t of the degraded subflow stays below the others'",
         conjunction.s004_fig_7),
    Item("seed004-fig-08", "carrier complementarity in handoff, network type and signal",
         "RESULTS mptcp_rates, mptcp_paths and, beside them, radio.parquet and handoffs.parquet of the same runs", "",
         conjunction.s004_fig_8),
)


def _carrier_bars(inp: Inputs) -> Made:
    t = inp.need("handoff_intervals", ("carrier", "metric", "unit", "n_flows", "n", "value", "value_lo", "value_hi"))
    rows = t.filter(pl.col("metric").is_in(["handoff_interval_s", "handoff_interval_le_10s_share"]))
    if rows.is_empty():
        raise Missing("handoff_intervals.parquet of STUDY: no handoff_interval_s row")
    lines = [f"carrier {r['carrier']}, {r['metric']}: "
             f"{draw.cell_text(r['value'], r['value_lo'], r['value_hi'], r['unit'], r['n_flows'], r['n'])}"
             for r in rows.iter_rows(named=True)]
    share = rows.filter(pl.col("metric") == "handoff_interval_le_10s_share").with_columns(pl.col("carrier").alias("group"))
    fig = draw.bars(share, "intervals <= 10 s", "share", "handoff intervals per carrier") if share.height else None
    return Made(data=rows, figure=fig, lab=lines)


BY_ID = {i.id: i for i in ITEMS}
assert len(BY_ID) == len(ITEMS), "item ids must be unique"
