"""Items drawn from the packets table of RESULTS (``hsrtcp analyze --packets``,
docs/formats/packets.md): the one-way delay of every data segment and ACK of a captured pair
(seed 001 Fig. 1) and time–sequence graphs around a timeout (seed 000 Fig. 5, seed 001 Fig. 2).
"""

from __future__ import annotations

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.figures import draw
from hsrtcp.figures.inputs import Inputs, Missing
from hsrtcp.figures.made import data_gap

#: what identifies one transmission in both captures (docs/two-vantage.md, "Per-packet fate":
#: Linux gives a re-send a new TSval and IP ID, so it never takes its original's key)
KEY = ["dir", "seq", "ack", "len", "flags", "window_raw", "tsval", "tsecr", "sack", "ip_id"]
DOWN = "data: server -> phone"
UP = "ACKs: phone -> server"


def _matched(inp: Inputs, what: str) -> pl.DataFrame:
    res = inp.results(what)
    f = res.flows
    need = ("client_flow_id", "server_flow_id", "clock_offset_s", "matched_data_dir")
    if "vantage" not in f.columns or not all(c in f.columns for c in need):
        raise Missing(f"flows.parquet of RESULTS: no matched rows (a pair analyzed with --client and --server)")
    m = f.filter((pl.col("vantage") == "matched") & pl.col("client_flow_id").is_not_null()
                 & pl.col("server_flow_id").is_not_null())
    if m.is_empty():
        raise Missing("flows.parquet of RESULTS: no matched row with both captures' flows "
                      "(a pair analyzed with --client and --server)")
    return m


def _keyed(p: pl.DataFrame, down: pl.Expr) -> pl.DataFrame:
    """Data segments of the data direction and pure ACKs of the other, with their key; a key
    seen twice in one capture's flow is left out (it cannot be told apart)."""
    p = p.filter((down & (pl.col("len") > 0))
                 | (~down & (pl.col("len") == 0) & pl.col("ack").is_not_null()
                    & ((pl.col("flags") & 7) == 0)))  # pure ACKs: no SYN, FIN or RST
    p = p.with_columns(pl.col("sack").fill_null(""), pl.col("tsval").fill_null(-1).cast(pl.Int64),
                       pl.col("tsecr").fill_null(-1).cast(pl.Int64), pl.col("ip_id").fill_null(-1).cast(pl.Int64),
                       pl.col("ack").fill_null(-1))
    return p.filter(pl.len().over("pair", *KEY) == 1)


def one_way_delays(inp: Inputs) -> pl.DataFrame:
    """Per transmission seen in both captures of a pair: its one-way delay, corrected by the
    matched row's clock offset (θ = server clock − client clock: down = t_phone − t_server + θ,
    up = t_server − t_phone − θ). One pass per results directory (no per-flow scan)."""
    m = _matched(inp, "packets.parquet (per-packet one-way delays)")
    pk = inp.extra("packets", "packets.parquet (per-packet one-way delays)")
    m = m.select("result", pl.col("flow_id").alias("pair"), "client_flow_id", "server_flow_id",
                 pl.col("clock_offset_s").fill_null(0.0).alias("theta"),
                 pl.col("matched_data_dir").fill_null("s2c").alias("down_dir"))
    parts = []
    for result in m["result"].unique(maintain_order=True).to_list():
        mr = m.filter(pl.col("result") == result)
        p = pk.filter(pl.col("result") == result).collect()
        sides = {}
        for side in ("client", "server"):
            q = p.join(mr.select(pl.col(f"{side}_flow_id").alias("flow_id"), "pair", "down_dir"), on="flow_id")
            q = _keyed(q, pl.col("dir") == pl.col("down_dir"))
            sides[side] = q.select("pair", *KEY, pl.col("ts").alias(f"ts_{side}"), pl.col("frame").alias(f"frame_{side}"))
        j = sides["client"].join(sides["server"], on=["pair", *KEY], how="inner").join(mr, on="pair")
        if j.is_empty():
            continue
        name = result.rstrip("/").rsplit("/", 1)[-1]
        down = pl.col("dir") == pl.col("down_dir")
        j = j.with_columns(  # one curve per results directory and direction: a lab trip and a netns pair apart
            pl.when(down).then(pl.lit(f"{DOWN} ({name})")).otherwise(pl.lit(f"{UP} ({name})")).alias("group"),
            pl.when(down).then(pl.col("ts_client") - pl.col("ts_server") + pl.col("theta"))
            .otherwise(pl.col("ts_server") - pl.col("ts_client") - pl.col("theta")).alias("value"))
        parts.append(j.select("result", pl.col("pair").alias("flow_id"), "group", "dir", "seq", "ack", "len",
                              "frame_client", "frame_server", "ts_client", "ts_server", "value"))
    if not parts:
        raise Missing("packets.parquet of RESULTS: no transmission found in both captures of a pair")
    return pl.concat(parts).sort("result", "flow_id", "ts_server")


def s001_fig_1(inp: Inputs):
    from hsrtcp.figures.items import Made

    data = one_way_delays(inp)
    order = sorted(set(data["group"].to_list()), key=lambda g: (not g.startswith(DOWN), g))
    n_pairs = data.select("result", "flow_id").unique().height
    # packets of one connection are not independent: quantiles and counts, no interval
    lines = []
    for g in order:
        v = data.filter(pl.col("group") == g)["value"]
        lines.append(f"{g}: median {draw.fmt(v.median(), 's')}, 5th-95th percentile "
                     f"{draw.fmt(v.quantile(0.05, 'linear'), 's')}-{draw.fmt(v.quantile(0.95, 'linear'), 's')} "
                     f"({v.len():,} packets)")
    fig = draw.cdf(data, order, "one-way delay", "s", f"every segment of {n_pairs} captured pair(s)", logx=True)
    gaps = [] if any(g.startswith(UP) for g in order) else [data_gap("no ACK seen in both captures")]
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def _server_rows(inp: Inputs, what: str) -> pl.DataFrame:
    res = inp.results(what)
    f = res.flows
    if "vantage" in f.columns:
        f = f.filter(pl.col("vantage") == "server")  # the sender's capture: what it sent, when
    if f.is_empty():
        raise Missing(f"flows.parquet of RESULTS: no server-side row (a capture at the sender)")
    return f.select("result", "flow_id", "first_ts", "last_ts")


def _tsg_example(inp: Inputs, what: str, pick, pad_s: float, key: str):
    """A time–sequence graph (``hsrtcp plot tsg`` from the packets table) of the window
    around the timeout ``pick`` chooses among the server-side flows' events; the CSV is the
    flow's packets rows in that window."""
    from hsrtcp.figures.items import Made
    from hsrtcp.plot import figure

    flows = _server_rows(inp, what)
    res = inp.results(what)
    ev = (res.events.join(flows.lazy(), on=["result", "flow_id"], how="inner")
          .select("result", "flow_id", "first_ts", "last_ts", "kind", "class", "cause", "ts", "ts_end",
                  "seq_start", "seq_end", "count").collect())
    chosen = pick(ev)
    if chosen is None:
        raise Missing(f"events.parquet of RESULTS: {what}")
    r, t0, t1, label = chosen
    pk = inp.extra("packets", f"packets.parquet ({what})")
    lo, hi = max(t0 - pad_s, r["first_ts"]), min(t1 + pad_s, r["last_ts"])
    data = (pk.filter((pl.col("result") == r["result"]) & (pl.col("flow_id") == r["flow_id"])
                      & (pl.col("ts") >= lo) & (pl.col("ts") <= hi))
            .select("result", "flow_id", "frame", "ts", (pl.col("ts") - r["first_ts"]).alias("t_rel"), "dir", "seq",
                    "len", "ack", "window", "retrans").collect().sort("frame"))
    if data.is_empty():
        raise Missing(f"packets.parquet of RESULTS: no packet of flow {r['flow_id']} of {r['result']} "
                      f"in {lo:.3f}-{hi:.3f} s")
    try:
        fig = figure("tsg", r["result"], r["flow_id"], start=lo - r["first_ts"], end=hi - r["first_ts"])
    except InputError as exc:  # the graph's own reason (nothing to draw): the item is not made
        raise Missing(str(exc)) from None
    name = r["result"].rstrip("/").rsplit("/", 1)[-1]
    return Made(data=data, figure=fig,
                lab=[f"flow {r['flow_id']} of {name} (server capture), {hi - lo:.2f} s around the timeout at "
                     f"{t0 - r['first_ts']:.3f} s: {label}; {data.height} packets drawn"])


def _spurious(ev: pl.DataFrame):
    sp = ev.filter(pl.col("kind") == "spurious_timeout").sort("result", "flow_id", "ts")
    if sp.is_empty():
        return None
    first = sp.row(0, named=True)
    same = sp.filter((pl.col("result") == first["result"]) & (pl.col("flow_id") == first["flow_id"])
                     & ((pl.col("ts") - first["ts"]).abs() < 1.0))
    seqs = ev.filter((pl.col("result") == first["result"]) & (pl.col("flow_id") == first["flow_id"])
                     & (pl.col("kind") == "timeout_sequence") & (pl.col("ts") <= first["ts"])).sort("ts")
    t0 = seqs["ts"][-1] if seqs.height else first["ts"]
    how = ", ".join(sorted(set(same["class"].drop_nulls().to_list())))
    return first, t0, first["ts"], f"declared spurious by {how}"


def _recovery(ev: pl.DataFrame):
    seqs = ev.filter((pl.col("kind") == "timeout_sequence") & pl.col("ts_end").is_not_null())
    if seqs.is_empty():
        return None
    r = seqs.sort(["count", "result", "flow_id", "ts"], descending=[True, False, False, False]).row(0, named=True)
    return r, r["ts"], r["ts_end"], (f"a timeout sequence of {r['count']} timeout(s), {r['class']}, "
                                     f"{r['ts_end'] - r['ts']:.3f} s")


def s000_fig_5(inp: Inputs):
    return _tsg_example(inp, "no spurious timeout in a server-side flow", _spurious, 0.5, "s000-fig-5")


def s001_fig_2(inp: Inputs):
    return _tsg_example(inp, "no timeout sequence in a server-side flow", _recovery, 0.5, "s001-fig-2")


def s003_fig_12(inp: Inputs):
    """Seed 003 Fig. 12: one flow's sequence numbers over its life with its suspensions (the
    seed's: 450 s, 71.08 s suspended, 15.8 %). The phone-side flow of RESULTS with the most
    suspended time (suspensions.parquet, M24), drawn whole by ``hsrtcp plot tsg``; the text
    gives the suspended share of its life. The CSV is the flow's packets rows."""
    from hsrtcp.figures.items import Made
    from hsrtcp.plot import figure

    what = "suspensions.parquet and packets.parquet (one flow's sequence numbers and suspensions)"
    res = inp.results(what)
    s = res.suspensions
    if s is None or s.is_empty():
        raise Missing("suspensions.parquet of RESULTS: no handoff inside a phone-side flow (a radio log with cells)")
    f = res.flows
    if "vantage" in f.columns:
        f = f.filter(pl.col("vantage") == "client")
    per = (s.group_by("result", "flow_id").agg(pl.col("suspension_s").fill_null(0.0).sum().alias("suspended_s"),
                                               pl.len().alias("handoffs"))
           .join(f.select("result", "flow_id", "first_ts", "last_ts"), on=["result", "flow_id"])
           .sort(["suspended_s", "handoffs", "result", "flow_id"], descending=[True, True, False, False]))
    if per.is_empty():
        raise Missing("flows.parquet of RESULTS: no phone-side row for the suspensions' flows")
    r = per.row(0, named=True)
    pk = inp.extra("packets", what)
    data = (pk.filter((pl.col("result") == r["result"]) & (pl.col("flow_id") == r["flow_id"]))
            .select("result", "flow_id", "frame", "ts", (pl.col("ts") - r["first_ts"]).alias("t_rel"), "dir", "seq",
                    "len", "ack", "window", "retrans").collect().sort("frame"))
    if data.is_empty():
        raise Missing(f"packets.parquet of RESULTS: no packet of flow {r['flow_id']} of {r['result']}")
    try:
        fig = figure("tsg", r["result"], r["flow_id"])
    except InputError as exc:  # the graph's own reason (nothing to draw): the item is not made
        raise Missing(str(exc)) from None
    life = r["last_ts"] - r["first_ts"]
    name = r["result"].rstrip("/").rsplit("/", 1)[-1]
    return Made(data=data, figure=fig,
                lab=[f"flow {r['flow_id']} of {name} (phone capture): {r['suspended_s']:.2f} s suspended at "
                     f"{r['handoffs']} handoff(s) in {life:.1f} s ({draw.pct(r['suspended_s'] / life)} of its life); "
                     f"{data.height} packets drawn"])


def flight(packets: pl.DataFrame) -> pl.DataFrame:
    """Per packet of each flow (sender-side capture; ``data_dir`` a column), in capture order:
    the data outstanding (highest sequence sent + its length − highest cumulative ACK: the
    sender's window in use, SWND as the seed draws it) and the receiver's advertised window
    (AWND, the last ACK's), sampled at every ACK arrival after processing it (A13, as
    flows.bif_* and awnd_* are: their mean and extremes are these rows')."""
    p = packets.sort("result", "flow_id", "frame")
    fwd = pl.col("dir") == pl.col("data_dir")
    by = ["result", "flow_id"]
    p = p.with_columns(
        pl.when(fwd & (pl.col("len") > 0)).then(pl.col("seq") + pl.col("len")).otherwise(None)
        .cum_max().forward_fill().over(by).alias("snd_max"),
        pl.when(~fwd).then(pl.col("ack")).otherwise(None).cum_max().forward_fill().over(by).alias("snd_una"),
        pl.when(~fwd).then(pl.col("window")).otherwise(None).forward_fill().over(by).alias("awnd"))
    p = p.filter(~fwd & ((pl.col("flags") & 2) == 0) & pl.col("ack").is_not_null())
    return p.select("result", "flow_id", "frame", "ts", (pl.col("ts") - pl.col("first_ts")).alias("t_rel"),
                    (pl.col("snd_max") - pl.col("snd_una")).clip(lower_bound=0).alias("swnd_bytes"),
                    pl.col("awnd").alias("awnd_bytes"))


def _flows_packets(inp: Inputs, flows: pl.DataFrame) -> pl.DataFrame | None:
    """The packets rows of ``flows`` (result, flow_id, data_dir, first_ts), or None without a
    packets table in RESULTS."""
    try:
        pk = inp.extra("packets", "packets.parquet")
    except Missing:
        return None
    keys = flows.select("result", "flow_id", pl.col("data_dir").fill_null("s2c"), "first_ts")
    return pk.join(keys.lazy(), on=["result", "flow_id"], how="inner").collect()


def at_acks(inp: Inputs, result: str, flow_id: int, data_dir: str, first_ts: float) -> pl.DataFrame | None:
    """:func:`flight` of one flow, or None without its packets rows."""
    one = pl.DataFrame({"result": [result], "flow_id": [flow_id], "data_dir": [data_dir], "first_ts": [first_ts]},
                       schema_overrides={"flow_id": pl.UInt64})
    p = _flows_packets(inp, one)
    return None if p is None or p.is_empty() else flight(p)


def bif_samples(inp: Inputs) -> pl.DataFrame | None:
    """Bytes in flight at every ACK arrival of every server-side flow with packets rows
    (the samples whose mean is flows.bif_mean), with the flow's class when RESULTS have a
    context table; None when no RESULTS directory has a packets table."""
    res = inp.results("packets.parquet (bytes in flight at each ACK)")
    f = res.flows.filter(pl.col("vantage") == "server") if "vantage" in res.flows.columns else res.flows
    p = _flows_packets(inp, f)
    if p is None or p.is_empty():
        return None
    x = flight(p)
    cls = (res.context.select("result", "flow_id", "flow_class") if res.context is not None
           else pl.DataFrame(schema={"result": pl.String, "flow_id": pl.UInt64, "flow_class": pl.String}))
    x = x.join(cls, on=["result", "flow_id"], how="left")
    return x.with_columns(pl.col("flow_class").fill_null("(none)").alias("group"),
                          pl.col("swnd_bytes").cast(pl.Float64).alias("value"))


def s000_fig_13(inp: Inputs, fallback):
    from hsrtcp.figures.items import Made

    data = bif_samples(inp)
    if data is None:
        made = fallback(inp)
        made.gaps.append(data_gap("the seed's CDF is over samples: with hsrtcp analyze --packets every ACK's bytes in flight "
                         "is drawn; here: the mean of each flow (flows.bif_mean)"))
        return made
    data = data.select("result", "flow_id", "frame", "group", "value")
    order = sorted(set(data["group"].to_list()))
    lines = []
    for g in order:
        v = data.filter(pl.col("group") == g)
        lines.append(f"{g}: median {v['value'].median():.0f} B, 95th percentile {v['value'].quantile(0.95, 'linear'):.0f} B "
                     f"({v.height:,} ACKs of {v.select('result', 'flow_id').unique().height} flows)")
    return Made(data=data, figure=draw.cdf(data, order, "bytes in flight at an ACK", "B", "every ACK, server captures"),
                lab=lines)


def s004_fig_3(inp: Inputs):
    """Seed 004 Fig. 3: one MPTCP connection (the one with the most subflows, then the longest)
    — for each subflow, the highest byte of new data the server had sent on it (packets, down
    direction, relative sequence numbers), and their sum, against time."""
    from hsrtcp.figures.items import Made

    sub = inp.extra("mptcp_subflows", "mptcp_subflows.parquet (an MPTCP capture)").collect()
    if sub.is_empty():
        raise Missing("mptcp_subflows.parquet of RESULTS: no MPTCP subflow in any RESULTS directory given")
    conns = (sub.group_by("result", "capture", "connection_id")
             .agg(pl.len().alias("n"), (pl.col("last_ts").max() - pl.col("first_ts").min()).alias("span"))
             .sort(["n", "span", "result", "capture"], descending=[True, True, False, False]))
    c = conns.row(0, named=True)
    if c["n"] < 2:
        raise Missing("mptcp_subflows.parquet of RESULTS: no MPTCP connection with two subflows or more")
    s = sub.filter((pl.col("result") == c["result"]) & (pl.col("capture") == c["capture"])
                   & (pl.col("connection_id") == c["connection_id"])).sort("subflow")
    pk = (inp.extra("packets", "packets.parquet (hsrtcp analyze --packets)")
          .filter((pl.col("result") == c["result"]) & pl.col("flow_id").is_in(s["flow_id"].to_list())
                  & (pl.col("dir") == "s2c") & (pl.col("len") > 0))
          .select("flow_id", "ts", (pl.col("seq") + pl.col("len") - 1).alias("top")).collect())
    if pk.is_empty():
        raise Missing(f"packets.parquet of RESULTS: no data packet of the subflows of {c['result']}")
    t0 = float(s["first_ts"].min())
    names = {r["flow_id"]: f"subflow {r['subflow']} ({r['client_addr']})" for r in s.iter_rows(named=True)}
    per = (pk.sort("ts").with_columns(pl.col("top").cum_max().over("flow_id").alias("value"))
           .with_columns(pl.col("flow_id").replace_strict(names, return_dtype=pl.String).alias("group"),
                         (pl.col("ts") - t0).alias("t_rel")))
    # the sum at every packet: each subflow's last value so far
    wide = per.pivot(on="group", index="ts", values="value", aggregate_function="max").sort("ts")
    cols = [g for g in names.values() if g in wide.columns]
    total = wide.select("ts", pl.sum_horizontal(pl.col(cols).forward_fill().fill_null(0)).alias("value")).with_columns(
        pl.lit("all subflows").alias("group"), (pl.col("ts") - t0).alias("t_rel"))
    data = pl.concat([per.select("group", "ts", "t_rel", "value"), total.select("group", "ts", "t_rel", "value")])
    order = cols + ["all subflows"]
    ends = per.group_by("group").agg(pl.col("value").max())
    end = dict(zip(ends["group"].to_list(), ends["value"].to_list()))
    name = c["result"].rstrip("/").rsplit("/", 1)[-1]
    cap = c["capture"].rsplit("/", 1)[-1]
    span = float(per["t_rel"].max())
    lines = [f"connection {c['connection_id']} of {cap} ({name}): {len(cols)} subflows over {span:.3f} s; "
             + ", ".join(f"{g} {end[g]:,} B" for g in cols) + f"; sum {sum(end[g] for g in cols):,} B"]
    fig = draw.progress(data, order, f"one MPTCP connection, {cap}")
    return Made(data=data, figure=fig, lab=lines,
                gaps=[data_gap("the seed's carriers are two operators' cells; here the subflows cross two emulated paths "
                      "of one machine (tests/data/mptcp)")])
