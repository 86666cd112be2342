"""Adding the radio/GPS context to a results directory: :func:`write_context`.

Called by ``hsrtcp analyze`` after flows/events/... are written, when a radio log, a run
bundle or labels are involved. Reads ``flows.parquet`` (and the ``gap`` events) back from
the directory, so it works the same after the streaming and the in-memory analysis, and
writes radio, handoffs, context, suspensions, coverage and labels (.parquet, atomically;
docs/formats/context.md). A problem with a radio log never loses the
flows: they are written first, and the context rows say ``unknown`` with the reason.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.context.classes import flow_context
from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import finish as finish_handoffs
from hsrtcp.context.handoffs import handoffs as find_handoffs
from hsrtcp.context.labels import labels_table, manifest_labels
from hsrtcp.context.options import check_options
from hsrtcp.context.readers import RadioLog, read_radio
from hsrtcp.context.schema import RADIO_SCHEMA, RadioLogError
from hsrtcp.context.stream import ScannedLog, scan_radio
from hsrtcp.context.suspension import suspensions
from hsrtcp.inputs import Input
from hsrtcp.schemas import HANDOFF_SCHEMA

CONTEXT_TABLES = ("radio", "handoffs", "context", "suspensions", "coverage", "labels")


@dataclass
class ContextResult:
    tables: dict[str, pl.DataFrame | None]
    messages: list[str]
    #: tables already written as Parquet (the radio rows, block by block): name -> path
    files: dict[str, str] = field(default_factory=dict)


_LOGS = (RadioLog, ScannedLog)


def _key(p) -> str:
    return str(Path(p))


def describe_inputs(captures=(), client=(), server=(), messages: list[str] | None = None) -> list[Input]:
    """The inputs of an analysis in the order hsrtcp.analyze takes them (an unreadable
    manifest is reported in ``messages`` and gives null labels)."""
    from hsrtcp.errors import InputError
    from hsrtcp.bundle import MANIFEST, bundle_pairs, is_bundle, phone_path, read_manifest

    inputs: list[Input] = []
    for p in captures:
        if is_bundle(p):
            d = Path(p)
            try:
                m = read_manifest(d)
            except InputError as exc:
                m = None
                if messages is not None:
                    messages.append(str(exc))
            caps: dict[str, int | None] = {}
            pairs = bundle_pairs(d)
            for c, s in pairs:
                caps[_key(c)] = phone_path(c) or 1
                caps.setdefault(_key(s), None)
            lab = manifest_labels(m)
            lab.update(client_capture=",".join(_key(c) for c, _ in pairs), server_capture=_key(pairs[0][1]))
            if not lab.get("run_id"):
                lab["run_id"] = d.resolve().name
            radio = m.get("radio", "radio.csv") if m else "radio.csv"
            t0 = m.get("t0") if m else None
            problem = _bundle_radio_problem(d / MANIFEST, radio, t0)
            rp = d / radio if radio and problem is None else None
            inputs.append(_numbered(inputs, "bundle", [str(d)], caps, lab,
                                    radio=str(rp) if rp is not None and rp.exists() else None,
                                    t0=t0 if problem is None else None, radio_problem=problem))
        else:
            inputs.append(_numbered(inputs, "capture", [_key(p)], {_key(p): None}, {"capture": _key(p)}))
    for c, s in zip(client, server):
        inputs.append(_numbered(inputs, "pair", [_key(c), _key(s)], {_key(c): 1, _key(s): None},
                                {"capture": f"{_key(c)} + {_key(s)}", "client_capture": _key(c),
                                 "server_capture": _key(s)}))
    return inputs


def _numbered(inputs: list[Input], kind: str, files: list[str], captures, labels, **derived) -> Input:
    """The next input of the run: its number (and id) is its place in ``inputs``."""
    n = len(inputs)
    return Input(str(n), kind, files, labels=labels, number=n, captures=captures, **derived)


def _bundle_radio_problem(manifest: Path, radio, t0) -> str | None:
    """Why a bundle manifest's ``radio`` / ``t0`` cannot place its radio log (None: they can).
    A NaN t0 would make every radio time NaN and every flow unknown without a word."""
    if radio is not None and not isinstance(radio, str):
        return f"{manifest}: radio {radio!r} is not a file name"
    if t0 is not None and (isinstance(t0, bool) or not isinstance(t0, (int, float)) or not math.isfinite(t0)):
        return f"{manifest}: t0 {t0!r} is not a finite number of epoch seconds"
    return None


def _flow_owner(flows: pl.DataFrame, inputs: list[Input]) -> pl.DataFrame:
    """flow_id -> input_id and phone path k (null when the row's path is not known)."""
    cap_in = {cap: (i.number, k) for i in inputs for cap, k in i.captures.items()}
    own = []
    for fid, cap, vantage, ccap in flows.select(
            "flow_id", "capture", "vantage",
            pl.col("client_capture") if "client_capture" in flows.columns else pl.lit(None, pl.String)
    ).iter_rows():
        hit = cap_in.get(ccap if vantage == "matched" and ccap else cap)
        own.append((fid, hit[0] if hit else None, hit[1] if hit else None))
    df = pl.DataFrame(own, schema={"flow_id": pl.UInt64, "input_id": pl.Int64, "path": pl.Int64}, orient="row")
    # server rows of a pair get the path of the phone capture they were matched with
    if "server_flow_id" in flows.columns:
        m = flows.filter(pl.col("vantage") == "matched").select("server_flow_id", "client_flow_id")
        m = m.join(df.rename({"flow_id": "client_flow_id", "path": "_p", "input_id": "_i"}),
                   on="client_flow_id", how="left").select(pl.col("server_flow_id").alias("flow_id"), "_p")
        m = m.filter(pl.col("flow_id").is_not_null()).unique("flow_id", keep="first")
        df = df.join(m, on="flow_id", how="left").with_columns(pl.coalesce("path", "_p").alias("path")).drop("_p")
    return df


def _short(msg: str) -> str:
    return msg if len(msg) <= 200 else msg[:197] + "..."


def compute_context(out_dir, inputs: list[Input], *, radio: str | None = None, radio_format: str = "auto",
                    radio_map: dict | None = None, radio_offset: float = 0.0, carrier: str | None = None,
                    labels: dict | None = None, path_of=None, radio_out: str | None = None,
                    handoffs_out: str | None = None) -> ContextResult:
    """The context tables for the flows of ``out_dir``/flows.parquet (see the module doc).
    ``path_of(name)``: where the table file ``name`` is, when not yet in ``out_dir`` (the
    staged files of an open :class:`hsrtcp.output.OutputSet`). The radio options go through
    :func:`hsrtcp.context.options.check_options` (OptionError, a ValueError) like the
    command line's and a manifest's.

    ``radio_out``: where radio.parquet goes; given, lab and generic CSV logs are read block
    by block (:mod:`hsrtcp.context.stream`: memory does not grow with the log) and the radio
    table is written there (``files``) instead of returned. ``handoffs_out``: where
    handoffs.parquet goes when the logs read block by block found their handoffs (spilled
    to files as they are found, never held whole: issue 32); else the table is returned."""
    out = Path(out_dir)
    if path_of is None:
        path_of = lambda name: out / name  # noqa: E731
    with open(path_of("flows.parquet"), "rb") as f:  # (polars takes no path that is not UTF-8)
        flows = pl.read_parquet(f)
    opts = check_options(radio=radio, radio_format=radio_format, radio_map=radio_map,
                         radio_offset=radio_offset, carrier=carrier)
    messages: list[str] = []
    labels = labels or {}
    run_of = {i.number: (i.labels.get("run_id") if i.kind == "bundle" else None) for i in inputs}
    owner = _flow_owner(flows, inputs)
    base = flows.select("flow_id", "vantage", "first_ts", "last_ts").join(owner, on="flow_id", how="left")
    flow_runs = pl.Series([run_of.get(iid) for iid in base["input_id"].to_list()], dtype=pl.String)
    bundle_runs = [run_of[i.number] for i in inputs if i.kind == "bundle" and i.radio is not None]
    # block by block needs each log to be its own run (the tables are computed per run)
    streaming = radio_out is not None and len(set(bundle_runs)) == len(bundle_runs) and None not in bundle_runs
    parts: list[str] = []
    scans: list[ScannedLog] = []  # their temporary files are removed at the end

    def read(path, fmt, mapping=None, t0=None, offset_s=0.0, run=None):
        if streaming:
            mine = flow_runs.eq_missing(pl.lit(run, pl.String)) if run is not None else flow_runs.is_null()
            sel = base.filter(mine)
            parts.append(f"{radio_out}.part{len(parts)}")
            lg = scan_radio(path, fmt, mapping=mapping, t0=t0, offset_s=offset_s, run_id=run,
                            first_ts=sel["first_ts"].to_list(), last_ts=sel["last_ts"].to_list(),
                            parquet=parts[-1])
            if lg is not None:
                scans.append(lg)
                return lg
        return read_radio(path, fmt, mapping, t0=t0, offset_s=offset_s)

    try:
        return _compute(out, inputs, flows, opts, messages, labels, run_of, base, read, path_of, radio_out,
                        handoffs_out)
    finally:
        for lg in scans:
            lg.discard()
        for p in parts:
            if os.path.exists(p):
                os.remove(p)


def _compute(out, inputs, flows, opts, messages, labels, run_of, base, read, path_of, radio_out,
             handoffs_out) -> ContextResult:
    radio, carrier = opts["radio"], opts["carrier"]
    # radio logs: one per bundle (own t0), the user's --radio for the other inputs
    logs: dict[int, RadioLog | ScannedLog | str | None] = {}
    field_log: RadioLog | ScannedLog | str | None = None
    if radio is not None:
        try:
            field_log = read(radio, opts["radio_format"], opts["radio_map"], offset_s=opts["radio_offset"])
            messages += field_log.warnings
        except RadioLogError as exc:
            messages.append(str(exc))
            field_log = f"radio log rejected: {_short(str(exc))}"
        if (isinstance(field_log, _LOGS) and carrier is not None and field_log.carriers
                and carrier not in field_log.carriers and any(i.kind != "bundle" for i in inputs)):
            # almost always a typo or the wrong log: the flows are written, unknown, and
            # the run says so (exit 3) instead of ending well
            messages.append(f"{field_log.path}: carrier {carrier} is not in the radio log, which has "
                            f"{', '.join(field_log.carriers)}: its flows are unknown (--carrier, or the "
                            f"manifest's carrier)")
    for i in inputs:
        if i.kind == "bundle":
            if i.radio_problem is not None:
                messages.append(i.radio_problem)
                logs[i.number] = f"radio log rejected: {_short(i.radio_problem)}"
                continue
            if i.radio is None:
                logs[i.number] = None
                continue
            try:
                lg = read(i.radio, "lab", t0=i.t0, run=run_of[i.number])
                messages += lg.warnings
                logs[i.number] = lg
            except RadioLogError as exc:
                messages.append(str(exc))
                logs[i.number] = f"radio log rejected: {_short(str(exc))}"
        else:
            logs[i.number] = field_log
    radio_frames, own_handoffs, scanned = [], [], []
    seen_field = False
    for i in inputs:
        lg = logs[i.number]
        if isinstance(lg, ScannedLog):
            if i.kind != "bundle":
                if seen_field:
                    continue
                seen_field = True
            scanned.append(lg)
            radio_frames.append((lg, False))
        elif isinstance(lg, RadioLog):
            if i.kind != "bundle":
                if seen_field:
                    continue
                seen_field = True
            run = pl.lit(run_of[i.number], pl.String).alias("run_id")
            radio_frames.append((lg.frame.with_columns(run), lg.handoffs is not None))
            if lg.handoffs is not None:  # the log states its handoffs (RRC signalling)
                own_handoffs.append(lg.handoffs.with_columns(run))
    # a log read block by block but not in time order: its rows are read back whole
    whole = [(f.rows() if isinstance(f, ScannedLog) else f, own) for f, own in radio_frames
             if not isinstance(f, ScannedLog) or f.windows is None]
    radio_df = (pl.concat([f for f, _ in whole], how="vertical") if whole
                else pl.DataFrame(schema=dict(RADIO_SCHEMA, run_id=pl.String)))
    derived = [f for f, own in whole if not own]
    # the logs read block by block, each its own run, and nothing else: their handoffs stay in
    # their files (what the consumers read of them is in handoff_arrays)
    spilled = sorted((lg for lg in scanned if lg.windows is not None),
                     key=lambda lg: ("" if lg.run_id is None else lg.run_id).encode())
    lazy = (bool(spilled) and not whole and not own_handoffs
            and all(lg.handoff_files is not None for lg in spilled)
            and len({lg.run_id or "" for lg in spilled}) == len(spilled))
    found = [] if lazy else [lg.derived for lg in scanned if lg.windows is not None]
    if lazy:
        ho = None
    elif not found:
        ho = find_handoffs(pl.concat(derived, how="vertical") if derived else radio_df.clear())
        if own_handoffs:
            ho = finish_handoffs(pl.concat([ho, *own_handoffs], how="vertical"))
    else:
        # each log is its own run: the handoffs of the logs side by side, finished together
        pieces = ([find_handoffs(pl.concat(derived, how="vertical"))] if derived else []) + found + own_handoffs
        ho = pieces[0] if len(pieces) == 1 else finish_handoffs(pl.concat(pieces, how="vertical"))

    carriers, presets, runs = [], [], []
    for fid, vantage, _, _, iid, path in base.iter_rows():
        lg = logs.get(iid) if iid is not None else field_log
        runs.append(run_of.get(iid))
        c, why = None, None
        if lg is None:
            why = "no radio log"
        elif isinstance(lg, str):
            why = lg
        else:
            cs = lg.carriers
            bundle = iid is not None and inputs[iid].kind == "bundle"
            # (a GPS-only log names no carrier: --carrier is then only a label)
            if carrier is not None and not bundle and cs:
                if carrier in cs:
                    c = carrier
                else:
                    why = f"carrier {carrier} not in the radio log ({', '.join(cs)})"
            elif len(cs) == 1:
                c = cs[0]
            elif not cs:
                c = None  # GPS only: speed is judged, handoffs are not
            elif bundle:
                if path is not None and 1 <= path <= len(cs):
                    c = cs[path - 1]
                else:
                    why = "flow not matched to a phone path (several carriers in the log)"
            else:
                why = "several carriers in the log (say --carrier NAME)"
        carriers.append(c)
        presets.append(why)
    base = base.with_columns(pl.Series("carrier", carriers, dtype=pl.String),
                             pl.Series("preset_reason", presets, dtype=pl.String),
                             pl.Series("run_id", runs, dtype=pl.String))
    windows = {lg.run_id: lg.windows for lg in scanned if lg.windows is not None}
    ctx = flow_context(base, radio_df, ho, windows,
                       {lg.run_id: lg.handoff_arrays for lg in spilled} if lazy else None)
    ctx = ctx.join(base.select("flow_id", "input_id"), on="flow_id", how="left")
    # a log that overlaps none of its flows is almost always a clock problem: say so
    for i_log in [field_log] + [logs[i.number] for i in inputs if i.kind == "bundle"]:
        if not isinstance(i_log, _LOGS):
            continue
        ids = [i.number for i in inputs if logs[i.number] is i_log]
        mine = ctx.filter(pl.col("input_id").is_in(ids))
        if not mine.is_empty() and mine["class_reason"].eq_missing("no overlap").all():
            lo, hi = ((i_log.lo, i_log.hi) if isinstance(i_log, ScannedLog)
                      else (i_log.frame["ts"].min(), i_log.frame["ts"].max()))
            messages.append(f"{i_log.path}: no overlap with the captures: the log covers "
                            f"{lo:.3f} … {hi:.3f} (epoch s on the capture clock), the flows "
                            f"{mine['first_ts'].min():.3f} … {mine['last_ts'].max():.3f}"
                            f" (bring the log onto the capture clock with --radio-offset)")

    phone = base.filter(pl.col("vantage") == "client")
    gaps = None
    try:
        ev = path_of("events.parquet")
    except KeyError:  # not staged in this run
        ev = None
    if ev is not None and os.path.exists(ev):
        lf = pl.scan_parquet(ev).filter(pl.col("kind") == "gap").select("flow_id", "ts", "ts_end", "class")
        gaps = lf.collect()
        if gaps.is_empty():
            # No gap at all in the whole run: an engine that does not write M24 gaps (a run
            # of busy flows crossing handoffs without one silence >= 0.2 s is not plausible).
            gaps = None
    server_of = {}
    if "server_flow_id" in flows.columns:
        pairs = flows.filter((pl.col("vantage") == "matched") & pl.col("client_flow_id").is_not_null()
                             & pl.col("server_flow_id").is_not_null())
        server_of = dict(pairs.select("client_flow_id", "server_flow_id").iter_rows())
    sus = suspensions(phone, _near_flows(phone, spilled) if lazy else ho, gaps, server_of)

    lab_rows = [dict(i.labels, input_id=i.number, source=i.source,
                     run_id=run_of[i.number]) for i in inputs]
    lab = labels_table(lab_rows, labels)
    if not scanned:
        cov = coverage(radio_df)
        return ContextResult({"radio": radio_df, "handoffs": ho, "context": ctx, "suspensions": sus,
                              "coverage": cov, "labels": lab}, messages)
    # each log is its own run: coverage log by log, the radio rows copied in the logs' order
    covs, files = [], []
    for f, _ in radio_frames:
        if isinstance(f, ScannedLog):
            covs.append(f.coverage if f.windows is not None else coverage(f.rows()))
            files.append(f.parquet)
        else:
            covs.append(coverage(f))
            files.append(f)
    cov = pl.concat(covs, how="vertical")
    _write_radio(radio_out, files)
    written = {"radio": radio_out}
    if lazy and handoffs_out is not None:
        _write_handoffs(handoffs_out, [p for lg in spilled for p in lg.handoff_files])
        written["handoffs"] = handoffs_out
    elif lazy:
        ho = pl.concat([lg.derived for lg in spilled], how="vertical")
    return ContextResult({"radio": None, "handoffs": ho, "context": ctx, "suspensions": sus,
                          "coverage": cov, "labels": lab}, messages, written)


def _near_flows(phone: pl.DataFrame, logs: list[ScannedLog]) -> pl.DataFrame:
    """The columns :func:`suspensions` reads of the handoffs of ``logs`` (their arrays), only
    those inside a phone flow of their run and carrier (the others pair with no flow), in the
    table's order."""
    out = []
    for lg in logs:
        mine = phone.filter(pl.col("run_id").eq_missing(lg.run_id) if lg.run_id is not None
                            else pl.col("run_id").is_null())
        for c in sorted(lg.handoff_arrays, key=str.encode):
            ts, inter, pp = lg.handoff_arrays[c]
            f = mine.filter((pl.col("carrier") == c) & pl.col("first_ts").is_not_null()
                            & pl.col("last_ts").is_not_null())
            lo = np.searchsorted(ts, f["first_ts"].to_numpy(), "left")
            hi = np.searchsorted(ts, f["last_ts"].to_numpy(), "right")
            lo, hi = lo[lo < hi], hi[lo < hi]
            d = np.zeros(len(ts) + 1, dtype=np.int64)
            np.add.at(d, lo, 1)
            np.add.at(d, hi, -1)
            inside = np.cumsum(d[:-1]) > 0
            if inside.any():
                out.append(pl.DataFrame({"run_id": pl.Series([lg.run_id] * int(inside.sum()), dtype=pl.String),
                                         "carrier": pl.Series([c] * int(inside.sum()), dtype=pl.String),
                                         "ts": ts[inside],
                                         "system": np.where(inter[inside], "inter", "intra"),
                                         "ping_pong": pp[inside]}))
    if not out:
        return pl.DataFrame(schema={"run_id": pl.String, "carrier": pl.String, "ts": pl.Float64,
                                    "system": pl.String, "ping_pong": pl.Boolean})
    return pl.concat(out, how="vertical")


def _write_handoffs(path: str, files: list[str]) -> None:
    """handoffs.parquet from the spill files of the logs read block by block, in order, a file
    at a time, with the schema version (polars' sink: pyarrow would add 30-35 MB to the run's
    peak; row groups of 20,000 rows: with polars' default the copy added 10-20 MB to the 1 GB
    log's, issue 32)."""
    from hsrtcp.context.stream import RowSink
    from hsrtcp.results import metadata

    sink = RowSink(path, HANDOFF_SCHEMA, metadata("handoffs"), what="the handoffs", row_group_size=20_000)
    try:
        for p in files:
            with open(p, "rb") as f:  # (polars takes no path that is not UTF-8)
                sink.write(pl.read_parquet(f))
    finally:
        sink.close()


def _write_radio(path: str, parts: list) -> None:
    """radio.parquet from the logs' rows in order (Parquet files of the logs read block by
    block, frames of the others), a row group at a time, with the schema version."""
    if len(parts) == 1 and isinstance(parts[0], str):  # one log: its file is the table
        os.replace(parts[0], path)
        return
    import pyarrow.parquet as pq  # (only here: 30-35 MB of a one-log run's peak, issue 32)

    from hsrtcp.results import metadata

    schema = pl.DataFrame(schema=dict(RADIO_SCHEMA, run_id=pl.String)).to_arrow().schema
    schema = schema.with_metadata(metadata("radio"))
    with pq.ParquetWriter(path, schema, compression="zstd") as w:
        for p in parts:
            if isinstance(p, pl.DataFrame):
                w.write_table(p.to_arrow().cast(schema))
                continue
            src = pq.ParquetFile(p)
            for k in range(src.num_row_groups):
                w.write_table(src.read_row_group(k).cast(schema))


def _parquet_to_csv(src: str, dst: str) -> None:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(src)
    with open(dst, "wb") as f:
        if pf.num_row_groups == 0:
            pl.from_arrow(pf.schema_arrow.empty_table()).write_csv(f)
        for k in range(pf.num_row_groups):
            pl.from_arrow(pf.read_row_group(k)).write_csv(f, include_header=k == 0)


def write_context(out_dir, *, captures=(), client=(), server=(), radio=None, radio_format="auto",
                  radio_map=None, radio_offset=0.0, carrier=None, labels=None,
                  csv=False, output) -> tuple[list[Path], list[str]]:
    """Compute and write the context tables next to flows.parquet; (files written, messages).

    ``output``: the run's open :class:`hsrtcp.output.OutputSet`; the flows and events are
    read from its staged files and the context tables are staged in it, so they are
    committed with the run's other tables (and listed in its manifest).

    Messages name the file and line of every problem with a radio log (the caller prints
    them and exits 3); the tables are written in any case."""
    problems: list[str] = []
    inputs = describe_inputs(captures, client, server, problems)
    res = compute_context(out_dir, inputs, radio=radio, radio_format=radio_format, radio_map=radio_map,
                          radio_offset=radio_offset, carrier=carrier, labels=labels,
                          path_of=output.staged, radio_out=output.stage("radio.parquet"),
                          handoffs_out=output.stage("handoffs.parquet"))
    from hsrtcp.results import metadata

    written: list[Path] = []
    for name in CONTEXT_TABLES:
        for suffix in (".parquet", ".csv") if csv else (".parquet",):
            if name in res.files:  # written block by block: radio.csv from it a row group at a time
                if suffix == ".csv":
                    _parquet_to_csv(res.files[name], output.stage(name + suffix))
                written.append(Path(out_dir) / (name + suffix))
                continue
            with open(output.stage(name + suffix), "wb") as f:
                if suffix == ".parquet":  # with the schema version for the readers (hsrtcp.results)
                    res.tables[name].write_parquet(f, metadata=metadata(name))
                else:
                    res.tables[name].write_csv(f)
            written.append(Path(out_dir) / (name + suffix))
    bundles = [(i.source, i.labels.get("run_id")) for i in inputs if i.kind == "bundle"]
    if bundles:  # the lab's ground truth beside the tables (docs/formats/truth.md)
        from hsrtcp.lab.truth import TRUTH_TABLES, truth_tables

        truth, truth_problems = truth_tables(bundles)
        problems += truth_problems
        for name in TRUTH_TABLES:
            for suffix in (".parquet", ".csv") if csv else (".parquet",):
                with open(output.stage(name + suffix), "wb") as f:
                    if suffix == ".parquet":
                        truth[name].write_parquet(f, metadata=metadata(name))
                    else:
                        truth[name].write_csv(f)
                written.append(Path(out_dir) / (name + suffix))
    return written, problems + res.messages
