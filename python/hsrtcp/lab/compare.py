"""Compare the arms of lab runs: per-arm levels and paired differences with intervals.

``hsrtcp compare RUNS... --by cc|arm -o OUT`` (docs/lab.md, "Comparing arms"). RUNS are
campaign folders or single bundles (an ``emulate`` run). Every bundle is analyzed once (its
two captures; ``OUT/analyses/<run_id>``, reused while the bundle's manifest is unchanged) and
its connections are read through the study layer, as :mod:`hsrtcp.findings` does
(:func:`hsrtcp.findings.outcomes.per_run`: goodput, spurious RTOs, timeout recovery, ...).
Each run adds what only the lab knows, from the bundle's ground truth (:func:`post_outage`):
for every scheduled outage the flow crossed *on its own path* (a single-path flow's path,
every path of an MPTCP flow), how much of the offered capacity the flow used in the
:data:`WINDOW_S` seconds after the outage's end and how long it took until a
:data:`PROBE_S`-second window carried :data:`RECOVERED_SHARE` of it.

Runs pair when they ran on the same emulated path and workload: the same scenario (label and
window), trip seed, flow and repetition, differing in the arm (``--by cc``: the congestion
control; ``--by arm``: a campaign variant's name). Effects against the reference arm use
:func:`hsrtcp.findings.effects.effect` (the study layer's bootstrap over pairs): goodput as
the geometric mean of paired ratios (in %), the others as mean paired differences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.bundle import has_manifest, manifest, manifest_sha256, run_bundles
from hsrtcp.errors import InputError
from hsrtcp.findings import effects as _effects
from hsrtcp.findings.outcomes import OUTCOMES, Outcome, per_run

#: seconds after an outage's end over which the flow's use of the capacity is measured
WINDOW_S = 2.0
#: the recovery probe: the first window this long, starting every STEP_S after the outage's
#: end, in which the flow delivered at least RECOVERED_SHARE of the offered capacity
PROBE_S, STEP_S, RECOVERED_SHARE, MAX_RECOVERY_S = 0.3, 0.1, 0.8, 4.0
SERVER_ADDR = "10.2.1.1"

#: what compare reports: the findings outcomes, RTT, and the lab's post-outage numbers
COMPARE_OUTCOMES = (
    *OUTCOMES,
    Outcome("rtt_mean_s", "mean RTT (M7)", "lower", "diff", 1000.0, "ms"),
    Outcome("post_outage_use", "capacity used 2 s after an outage", "higher", "diff", 100.0, "pp"),
    Outcome("post_outage_recovery_s", "recovery after an outage", "lower", "diff", 1.0, "s"),
)
BY_NAME = {o.name: o for o in COMPARE_OUTCOMES}
#: the columns of a run's row besides the outcomes
RUN_COLUMNS = {"run_id": pl.String, "arm": pl.String, "cc": pl.String, "scenario": pl.String,
               "start_s": pl.Float64, "seed": pl.Int64, "flow": pl.String, "repetition": pl.Int64,
               "paths": pl.String, "status": pl.String, "bundle": pl.String, "outages_crossed": pl.Int64,
               "outages_unrecovered": pl.Int64}


def bundles(inputs) -> list[Path]:
    """The bundles of ``inputs``: each a bundle (``manifest.json``) or a folder of them."""
    out = []
    for i in inputs:
        p = Path(i)
        if has_manifest(p):
            out.append(p)
        elif p.is_dir():
            found = run_bundles(p)
            if not found:
                raise InputError(f"{p}: neither a bundle nor a folder of bundles (<run_id>/manifest.json)")
            out += found
        else:
            raise InputError(f"{p}: no such bundle or campaign folder")
    names = [b.resolve() for b in out]
    if len(set(names)) != len(names):
        raise InputError("a bundle is given twice: " + ", ".join(sorted({str(n) for n in names if names.count(n) > 1})))
    return out


def flow_paths(m: dict) -> list[int]:
    """The emulated paths a run's flow used: its ``path`` (single-path), every path (MPTCP)."""
    n = int((m.get("scenario") or {}).get("paths") or 1)
    flow = m.get("flow") or {}
    if m.get("mptcp") or flow.get("mptcp"):
        return list(range(1, n + 1))
    return [int(flow.get("path") or 1)]


def post_outage(bundle: Path, m: dict) -> list[dict]:
    """One row per scheduled outage the run's flow crossed on its own path(s) (events.csv,
    path column): ``path``, ``t_start``, ``t_end`` (window seconds), ``use`` (bytes the
    phone received from the server in the WINDOW_S after the end / what the path offered
    then), ``recovery_s`` (or None: not recovered within MAX_RECOVERY_S). An outage counts
    as crossed when the flow was receiving before it started and still after the window."""
    sc_dir = bundle / "scenario"
    if not (sc_dir / "scenario.json").is_file() or m.get("t0") is None:
        return []
    from hsrtcp.lab.scenario import CompiledScenario
    from hsrtcp import pcapio

    cs = CompiledScenario.open(sc_dir)
    ev = cs.events().filter(pl.col("kind") == "outage")
    seg = cs.segments().filter(pl.col("direction") == "down")
    t0 = float(m["t0"])
    rows = []
    for p in flow_paths(m):
        cap = bundle / "capture" / f"phone_p{p}.pcap"
        outs = ev.filter(pl.col("path") == p)
        if not cap.is_file() or not outs.height:
            continue
        pkts = [(x.ts - t0, x.ip_len) for x in pcapio.read_tcp(cap) if x.src == SERVER_ADDR and x.payload_len]
        if not pkts:
            continue
        s = seg.filter(pl.col("path") == p).sort("t_start")
        s_start, s_end = s["t_start"].to_numpy(), s["t_end"].to_numpy()
        bw, delay = s["bw_bps"].to_numpy().astype(float), s["delay_s"].to_numpy()
        arr = np.array(pkts)
        # arrivals onto the emulator's clock: a packet reaches the phone one path delay after
        # it left the bandwidth cell (the delay in force at the outage's end)
        for a, b in zip(outs["t_start"].to_list(), outs["t_end"].to_list()):
            k = max(int(np.searchsorted(s_start, b, "right")) - 1, 0)
            t = arr[:, 0] - delay[k]
            if not (t.min() <= a and t.max() >= b + WINDOW_S):
                continue

            def offered(x: float, y: float) -> float:
                ov = np.clip(np.minimum(s_end, y) - np.maximum(s_start, x), 0.0, None)
                return float((ov * bw).sum() / 8.0)

            def got(x: float, y: float) -> float:
                return float(arr[(t >= x) & (t < y), 1].sum())

            cap_bytes = offered(b, b + WINDOW_S)
            rec = None
            for j in range(int(round(MAX_RECOVERY_S / STEP_S))):
                x = b + j * STEP_S
                c = offered(x, x + PROBE_S)
                if c > 0 and got(x, x + PROBE_S) >= RECOVERED_SHARE * c:
                    rec = round(j * STEP_S, 3)
                    break
            rows.append({"path": p, "t_start": a, "t_end": b,
                         "use": got(b, b + WINDOW_S) / cap_bytes if cap_bytes > 0 else None, "recovery_s": rec})
    return rows


def _client_cc_flow(b: Path) -> tuple[str | None, str | None]:
    """The congestion control and the flow (without its cc, so runs of two ccs pair) that the
    measure client of an emulate run asked for, from its client.json; (None, None) without one
    or when its flows disagree."""
    try:
        res = json.loads((b / "client.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    reqs = [r.get("request") or {} for r in res if isinstance(r, dict)] if isinstance(res, list) else []
    ccs = {r.get("server_cc") or (r.get("request") or {}).get("cc") for r in res if isinstance(r, dict)} \
        if isinstance(res, list) else set()
    if len(ccs) != 1 or None in ccs or not reqs:
        return None, None
    q = reqs[0]
    what = f"{q.get('duration_s'):g} s" if q.get("duration_s") else f"{q.get('size_bytes')} bytes"
    return ccs.pop(), f"client {q.get('kind', 'tcp')} {q.get('direction', 'down')} {what} x{len(reqs)}"


def analyze(bundle: Path, out: Path) -> Path:
    """``hsrtcp analyze BUNDLE -o out`` unless ``out`` already holds the analysis of this
    very bundle (its manifest's hash, kept in ``out/compare-source.json``)."""
    stamp = out / "compare-source.json"
    sha = manifest_sha256(bundle)
    try:
        if json.loads(stamp.read_text())["manifest_sha256"] == sha and (out / "flows.parquet").is_file():
            return out
    except (OSError, ValueError, KeyError, TypeError):
        pass
    # what `hsrtcp analyze BUNDLE -o OUT -q` runs once its arguments are parsed (not the
    # command line: hsrtcp.cli is above hsrtcp.lab, docs/design.md "Layers"); its errors
    # name their file
    from hsrtcp.cli.run_analysis import run

    code = run([bundle], [None], out, False, False, None, True)
    if code != 0:
        raise InputError(f"{bundle}: hsrtcp analyze failed (exit {code}); run it alone to see why")
    stamp.write_text(json.dumps({"bundle": str(bundle), "manifest_sha256": sha}) + "\n")
    return out


@dataclass
class Comparison:
    runs: pl.DataFrame          # one row per run: identity, outcomes, outages crossed
    arms: pl.DataFrame          # one row per arm and outcome: runs, mean
    effects: pl.DataFrame       # one row per (arm vs reference, outcome)
    outages: pl.DataFrame       # one row per outage crossed (run_id, path, times, use, recovery)
    reference: str
    by: str
    notes: list[str] = field(default_factory=list)
    fairness: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FAIRNESS_COLUMNS))

    def text(self) -> str:
        """The per-arm levels and the paired effects, as printed by ``hsrtcp compare``."""
        lines = [f"{self.runs.height} runs, arms by {self.by}: "
                 + ", ".join(f"{a} ({n})" for a, n in self.runs.group_by("arm", maintain_order=True)
                             .agg(pl.len()).iter_rows())]
        for o in COMPARE_OUTCOMES:
            a = self.arms.filter(pl.col("outcome") == o.name)
            if not a.height or a["mean"].is_null().all():
                continue
            cells = []
            for r in a.iter_rows(named=True):
                v = "-" if r["mean"] is None else _show(r["mean"], o)
                cells.append(f"{r['arm']} {v} (n={r['n']})")
            lines.append(f"  {o.label}{_unit(o)}: " + " | ".join(cells))
        if self.effects.height:
            lines.append(f"paired against {self.reference} (same path, seed, flow and repetition; "
                         "95 % bootstrap interval over pairs):")
        for r in self.effects.filter(pl.col("n_pairs") > 0).iter_rows(named=True):
            o = BY_NAME[r["outcome"]]
            e = "-" if r["effect"] is None else f"{r['effect']:+.3g}"
            ci = "" if r["effect_lo"] is None else f" [{r['effect_lo']:+.3g}, {r['effect_hi']:+.3g}]"
            unit = "%" if o.effect == "ratio" else o.unit
            lines.append(f"  {r['arm']} vs {self.reference}, {o.label}: {e}{ci} {unit} "
                         f"({r['n_pairs']} pairs; {r['verdict']})")
        lines += fairness_lines(self.fairness)
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


# one row per flow of a run with concurrent flows (``fairness``)
FAIRNESS_COLUMNS = {"run_id": pl.String, "arm": pl.String, "flow": pl.String, "label": pl.String,
                    "cc": pl.String, "bytes": pl.Int64, "share": pl.Float64, "jain": pl.Float64}


def fairness_lines(f: pl.DataFrame) -> list[str]:
    """Per run with concurrent flows, each flow's share of the bytes and Jain's index; then,
    per set of congestion controls, the mean share of each and the mean index over its runs."""
    if f.is_empty():
        return []
    lines = ["fairness (concurrent flows on one bottleneck; share of the bytes the server sent, "
             "Jain's index over the flows' bytes, 1 = equal):"]
    mix = {}
    for (rid,), g in f.group_by(["run_id"], maintain_order=True):
        ccs = g["cc"].fill_null("?").to_list()
        mix.setdefault(" + ".join(sorted(ccs)), []).append(g)
        cells = " | ".join(f"{c} {100 * s:.1f} %" for c, s in zip(ccs, g["share"].to_list()))
        lines.append(f"  {rid}: {cells}; Jain {g['jain'][0]:.3f}")
    for key, gs in mix.items():
        if len(gs) < 2:
            continue
        allf = pl.concat(gs)
        share = allf.group_by("cc", maintain_order=True).agg(pl.col("share").mean())
        cells = " | ".join(f"{c} {100 * s:.1f} %" for c, s in share.iter_rows())
        jain = sum(g["jain"][0] for g in gs) / len(gs)
        lines.append(f"  {key} over {len(gs)} runs: mean share {cells}; mean Jain {jain:.3f}")
    return lines


def _unit(o: Outcome) -> str:
    if o.name == "goodput_bps":
        return " [Mbit/s]"
    if o.scale == 100.0:
        return " [%]"
    return f" [{o.unit}]" if o.unit else ""


def _show(v: float, o: Outcome) -> str:
    """A level in the unit :func:`_unit` names (shares in %, RTT in ms, goodput in Mbit/s)."""
    if o.name == "goodput_bps":
        return f"{v / 1e6:.3g}"
    return f"{v * o.scale:.3g}"


def compare(inputs, out: Path, *, by: str = "cc", reference: str | None = None, seed: int = 0,
            n_boot: int = 2000, min_pairs: int = 3) -> Comparison:
    """Read, analyze and compare the bundles of ``inputs`` (see the module docstring)."""
    if by not in ("cc", "arm"):
        raise ValueError(f"--by must be cc or arm, got {by!r}")
    out = Path(out)
    rows, outage_rows, notes, dirs, fair_rows = [], [], [], {}, []
    for b in bundles(inputs):
        m = manifest(b)
        var = m.get("variant") or {}
        flow = m.get("flow") or {}
        cc, client_flow = m.get("cc"), None
        if cc is None:  # an `hsrtcp emulate` run: its client's result says what it asked for
            cc, client_flow = _client_cc_flow(b)
            if cc is None:
                notes.append(f"{b.name}: no congestion control recorded (a command other than hsrtcp measure "
                             f"client): arm 'unknown'")
        arm = (var.get("name") if by == "arm" else None) or cc or "unknown"
        if by == "arm" and not var:
            notes.append(f"{b.name}: no campaign variant; its arm is its cc ({arm})")
        from hsrtcp.lab.campaign import flow_label

        row = {"run_id": m.get("run_id") or b.name, "arm": arm, "cc": cc,
               "scenario": var.get("scenario_label") or (m.get("scenario") or {}).get("name"),
               "start_s": var.get("scenario_start_s"), "seed": (m.get("seeds") or {}).get("scenario"),
               "flow": flow_label(flow) if flow.get("type") else
               client_flow or " ".join(m.get("command") or []) or None,
               "repetition": m.get("repetition"), "paths": ",".join(map(str, flow_paths(m))),
               "status": m.get("status"), "bundle": str(b), "outages_crossed": None, "outages_unrecovered": None}
        if m.get("status") != "ok":
            notes.append(f"{row['run_id']}: the run failed, left out ({'; '.join(m.get('errors') or [])[:200]})")
            rows.append(row)
            continue
        dirs[row["run_id"]] = analyze(b, out / "analyses" / b.name)
        fair = fairness(b)
        for x in (fair or {}).get("flows", ()):
            fair_rows.append({"run_id": row["run_id"], "arm": arm, "flow": row["flow"], "label": x["label"],
                              "cc": x["cc"], "bytes": x["bytes"], "share": x["share"], "jain": fair["jain"]})
        po = post_outage(b, m)
        for o in po:
            outage_rows.append({"run_id": row["run_id"], "arm": arm, **o})
        uses = [o["use"] for o in po if o["use"] is not None]
        recs = [o["recovery_s"] for o in po if o["recovery_s"] is not None]
        row.update(outages_crossed=len(po), outages_unrecovered=sum(1 for o in po if o["recovery_s"] is None),
                   post_outage_use=float(np.mean(uses)) if uses else None,
                   post_outage_recovery_s=float(np.mean(recs)) if recs else None)
        rows.append(row)
    if not rows:
        raise InputError("no bundles to compare")
    runs = pl.DataFrame(rows, schema={**RUN_COLUMNS, "post_outage_use": pl.Float64,
                                      "post_outage_recovery_s": pl.Float64}, orient="row")
    if dirs:
        from hsrtcp.study import study

        st = study([str(d) for d in dirs.values()], bootstrap=0, min_flows=1)
        by_dir = {str(d): rid for rid, d in dirs.items()}
        flows = st.tables["study_flows"]
        per = per_run(flows).with_columns(
            pl.col("result").replace_strict(by_dir, return_dtype=pl.String).alias("run_id"))
        rtt = flows.group_by("result").agg(pl.col("rtt_mean_s").cast(pl.Float64).mean()).with_columns(
            pl.col("result").replace_strict(by_dir, return_dtype=pl.String).alias("run_id")).drop("result")
        runs = runs.join(per.drop("result"), on="run_id", how="left").join(rtt, on="run_id", how="left")
        empty = runs.filter((pl.col("status") == "ok") & pl.col("connections").is_null())
        if empty.height:
            notes.append(f"{empty.height} run(s) whose analysis has no connection: " + ", ".join(empty["run_id"]))
    for o in COMPARE_OUTCOMES:
        if o.name not in runs.columns:
            runs = runs.with_columns(pl.lit(None, dtype=pl.Float64).alias(o.name))
    arm_order = list(dict.fromkeys(runs.sort("run_id")["arm"].to_list()))
    ref = reference or arm_order[0]
    if ref not in arm_order:
        raise ValueError(f"--reference {ref}: no such arm (arms: {', '.join(map(str, arm_order))})")
    ok = runs.filter(pl.col("status") == "ok")
    arms = pl.DataFrame([{"arm": a, "outcome": o.name,
                          "n": ok.filter(pl.col("arm") == a)[o.name].drop_nulls().len(),
                          "mean": ok.filter(pl.col("arm") == a)[o.name].mean()}
                         for a in arm_order for o in COMPARE_OUTCOMES],
                        schema={"arm": pl.String, "outcome": pl.String, "n": pl.Int64, "mean": pl.Float64})
    key = ["scenario", "start_s", "seed", "flow", "repetition"]
    # two runs of one arm with the same key (emulate runs have no repetition) pair with no
    # single run of the other arm: left out of the pairs, named
    dup = ok.filter(pl.len().over(["arm", *key]) > 1)
    if dup.height:
        notes.append("runs of one arm with the same scenario, seed, flow and repetition cannot be paired one to "
                     "one, left out of the paired effects: " + ", ".join(sorted(dup["run_id"])))
        ok_pairs = ok.filter(pl.len().over(["arm", *key]) == 1)
    else:
        ok_pairs = ok
    eff_rows = []
    for a in arm_order:
        if a == ref:
            continue
        pairs = ok_pairs.filter(pl.col("arm") == a).join(ok_pairs.filter(pl.col("arm") == ref), on=key, how="inner",
                                                   suffix="_ref", nulls_equal=True)
        for o in COMPARE_OUTCOMES:
            e = _effects.effect(pairs[o.name].to_list(), pairs[f"{o.name}_ref"].to_list(), o,
                                rng=_stats().rng_for(seed, f"compare|{a}|{ref}|{o.name}"), n_boot=n_boot,
                                min_pairs=min_pairs)
            eff_rows.append({"arm": a, "reference": ref, "outcome": o.name, **e})
    effects = pl.DataFrame(eff_rows, schema={
        "arm": pl.String, "reference": pl.String, "outcome": pl.String, "n_pairs": pl.Int64, "dropped": pl.Int64,
        "unit": pl.String, "effect_kind": pl.String, "reference_mean": pl.Float64, "treatment_mean": pl.Float64,
        "effect": pl.Float64, "effect_lo": pl.Float64, "effect_hi": pl.Float64, "pair_min": pl.Float64,
        "pair_max": pl.Float64, "verdict": pl.String}, orient="row")
    if len(arm_order) > 1 and not effects.filter(pl.col("n_pairs") > 0).height:
        notes.append("no two arms ran on the same path (scenario, window, seed, flow, repetition): nothing pairs")
    outages = pl.DataFrame(outage_rows, schema={"run_id": pl.String, "arm": pl.String, "path": pl.Int64,
                                                "t_start": pl.Float64, "t_end": pl.Float64, "use": pl.Float64,
                                                "recovery_s": pl.Float64}, orient="row")
    return Comparison(runs, arms, effects, outages, ref, by, notes,
                      pl.DataFrame(fair_rows, schema=FAIRNESS_COLUMNS, orient="row"))


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9.]+", "_", text).strip("_")[:40] or "x"


def _stats():
    from hsrtcp.study import stats

    return stats


def write(c: Comparison, out: Path, figures: bool = True) -> list[str]:
    """``runs.csv``, ``arms.csv``, ``effects.csv``, ``outages.csv`` and ``compare.txt`` into
    ``out`` and, with ``figures``, ``figures/<run_id>.svg`` (each run with its ground truth,
    :func:`hsrtcp.lab.figures.truth_overlay`), ``figures/overlay-<pair>.svg`` (the arms of
    each pair over one path) and ``figures/throughput-delay.svg``; all
    together (:class:`hsrtcp.output.OutputSet`, hsrtcp-manifest.compare.txt)."""
    from hsrtcp.output import OutputSet

    with OutputSet(out, manifest="hsrtcp-manifest.compare.txt", replaces=frozenset()) as o:
        for name, df in (("runs", c.runs), ("arms", c.arms), ("effects", c.effects), ("outages", c.outages)):
            with o.file(f"{name}.csv") as p:
                df.write_csv(p)
        if not c.fairness.is_empty():
            with o.file("fairness.csv") as p:
                c.fairness.write_csv(p)
        with o.file("compare.txt") as p:
            Path(p).write_text(c.text() + "\n", encoding="utf-8")
        if figures:
            from hsrtcp.lab import figures as figs

            for r in c.runs.filter(pl.col("status") == "ok").iter_rows(named=True):
                b = Path(r["bundle"])
                if not (b / "scenario" / "scenario.json").is_file():
                    continue  # a plain Rattan config: no ground truth to draw
                analysis = Path(out) / "analyses" / b.name
                with o.file(f"figures/{r['run_id']}.svg") as p:
                    figs.truth_overlay(b, p, analysis if analysis.is_dir() else None, fmt="svg")
            with o.file("figures/throughput-delay.svg") as p:
                figs.throughput_delay(c.runs, p, fmt="svg")
            ok = c.runs.filter(pl.col("status") == "ok").sort("run_id")
            for key, g in ok.group_by(["scenario", "start_s", "seed", "flow", "repetition"], maintain_order=True):
                if g["arm"].n_unique() < 2 or not (Path(g["bundle"][0]) / "scenario" / "scenario.json").is_file():
                    continue
                name = "overlay-" + "-".join(_slug(str(k)) for k in key if k is not None)
                with o.file(f"figures/{name}.svg") as p:
                    figs.overlay(list(zip(g["arm"].to_list(), g["bundle"].to_list())), p, fmt="svg")
        return o.commit()



def fairness(bundle: Path) -> dict | None:
    """Each flow's share of a fairness run's bytes (concurrent flows with ``ccs``, one congestion
    control each, on one bottleneck) and Jain's index (Σx)² / (n·Σx²) over the flows' bytes;
    None for a run with a single flow. Bytes are what the server sent (its flows.jsonl)."""
    path = Path(bundle) / "server_flows.jsonl"  # a campaign bundle; an emulate run below
    if not path.is_file():
        path = Path(bundle) / "server" / "flows.jsonl"
    try:
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the server's flows ({exc})") from exc
    rows = [r for r in rows if r.get("request", {}).get("kind") == "tcp"]
    if len(rows) < 2:
        return None
    x = np.array([float(r.get("bytes_sent") or 0) for r in rows])
    total = x.sum()
    flows = [{"label": r["request"].get("label"), "cc": r.get("cc"), "peer": r.get("peer"),
              "bytes": int(b), "share": float(b / total) if total else float("nan")}
             for r, b in zip(rows, x)]
    jain = float(total ** 2 / (len(x) * (x ** 2).sum())) if total else float("nan")
    return {"flows": flows, "jain": jain}
