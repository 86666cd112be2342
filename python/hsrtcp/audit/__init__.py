"""Ground-truth audit of hsrtcp's detectors (`hsrtcp audit`, docs/accuracy.md).

For every run with both captures (a lab bundle or a testbed pair) the truth of each
retransmission timeout is computed from the two captures with an independent reader
(:mod:`hsrtcp.audit.truth`), the analyzer is run on the same pair, and each detector's
answer is judged against the truth (:mod:`hsrtcp.audit.core`); :mod:`hsrtcp.audit.score`
turns the verdicts into confusion counts with Wilson intervals. Formats: docs/formats/audit.md.

    from hsrtcp.audit import audit, write
    a = audit(["tests/data/ack_blackout.client.pcap", "RUNS/campaign"])
    a.confusion()          # detector × TP/FP/FN/TN, precision, recall, intervals
    write(a, "audit-out")
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.bundle import has_manifest

FORMAT_VERSION = 1
MANIFEST = "hsrtcp-manifest.audit.txt"
# rtt_band: the analyzer's own minimum RTT; the last three: the run's truth (audit.conditions)
BREAKDOWNS = ("scenario", "sack", "timestamps", "rtt_band", "base_rtt_band", "queue_band", "outage_band")


@dataclass
class Audit:
    verdicts: pl.DataFrame
    connections: pl.DataFrame
    runs: pl.DataFrame
    errors: list[str] = field(default_factory=list)
    radio: pl.DataFrame = field(default_factory=pl.DataFrame)  # handoffs and M24 (audit.radio)

    def confusion(self, breakdowns=BREAKDOWNS) -> pl.DataFrame:
        """The overall matrix per detector, then one block per breakdown column."""
        return tables(self.verdicts, breakdowns)


def rtt_band(ms: float | None) -> str | None:
    from hsrtcp.caveats import MIN_RTT_BANDS, band

    return band(ms, MIN_RTT_BANDS)  # the analyzer bands a flow's rtt_min the same way (caveats)


def tables(verdicts: pl.DataFrame, breakdowns=BREAKDOWNS) -> pl.DataFrame:
    """Confusion rows: ``breakdown`` = "all" (level null) or a condition column with its
    ``level``; the counts are recomputable from ``verdicts`` alone."""
    from hsrtcp.audit.score import confusion

    if verdicts.is_empty():
        return pl.DataFrame()
    parts = [confusion(verdicts).with_columns(pl.lit("all").alias("breakdown"),
                                               pl.lit(None, pl.String).alias("level"))]
    for b in breakdowns:
        if b not in verdicts.columns:
            continue
        c = confusion(verdicts.with_columns(pl.col(b).cast(pl.String).alias("level")), ["level"])
        parts.append(c.with_columns(pl.lit(b).alias("breakdown")))
    cols = ["breakdown", "level", "detector", "vantage", "tp", "fp", "fn", "tn", "out_of_reach", "precision",
            "precision_lo", "precision_hi", "recall", "recall_lo", "recall_hi", "confidence"]
    return pl.concat([p.select(cols) for p in parts], how="vertical_relaxed")


def audit(paths, *, progress=None) -> Audit:
    """Audit every run named by ``paths`` (bundles, directories of bundles, ``NAME.client.pcap``)."""
    from hsrtcp.audit.core import audit_run
    from hsrtcp.audit.inputs import discover
    from hsrtcp.errors import InputError

    errors: list[str] = []
    runs = discover(list(paths), errors)
    verdicts, conns, run_rows, radio = [], [], [], []
    for i, r in enumerate(runs):
        if progress:
            progress(i, len(runs), r.name)
        row = {"run": r.name, "client": str(r.client_pcap), "server": str(r.server_pcap),
               "client_offset_s": r.client_offset_s, "rto_min_s": r.rto_min_s} | r.hashes()
        try:
            v, c, e = audit_run(r)
        except InputError as exc:  # a capture the truth cannot read whole: no verdict is trusted
            errors.append(f"{r.name}: {exc} (run left out)")
            run_rows.append(row | {"status": "left out"})
            continue
        verdicts += v
        conns += c
        if r.bundle is not None and (r.bundle / "events.csv").is_file():
            from hsrtcp.audit.radio import audit_bundle

            base = {k: c[0][k] for k in ("run", "scenario", "arm", "sack", "timestamps", "base_rtt_band",
                                         "queue_band", "outage_band") if c and k in c[0]}
            try:
                radio += audit_bundle(r.bundle, r.client_pcap, base or {"run": r.name})
            except InputError as exc:
                errors.append(f"{r.name}: {exc} (handoffs and suspensions not judged)")
        errors += [f"{r.name}: {x} (its verdicts use the packets read before it)" for x in e]
        run_rows.append(row | {"status": "error" if e else "ok"})
    v = pl.DataFrame(verdicts, infer_schema_length=None) if verdicts else pl.DataFrame()
    if not v.is_empty():
        v = v.with_columns(pl.col("rtt_ms").map_elements(rtt_band, return_dtype=pl.String).alias("rtt_band"))
    return Audit(v, pl.DataFrame(conns, infer_schema_length=None) if conns else pl.DataFrame(),
                 pl.DataFrame(run_rows), errors,
                 pl.DataFrame(radio, infer_schema_length=None) if radio else pl.DataFrame())


def relative(path: str, base: Path | None) -> str:
    """A path as written into the outputs: relative to ``base`` when under it (no machine paths)."""
    if base is None:
        return path
    p = Path(path)
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:  # outside: a bundle's run id and inner path, else the file name
        bundle = p.parent.parent
        return str(p.relative_to(bundle.parent)) if has_manifest(bundle) else p.name


def write(a: Audit, out: str | Path, *, base: Path | None = None) -> list[str]:
    """verdicts.csv, connections.csv, runs.csv, confusion.csv and audit.json into ``out``,
    all together (:class:`hsrtcp.output.OutputSet`, its own manifest)."""
    from hsrtcp.output import OutputSet

    runs = a.runs
    if not runs.is_empty():
        runs = runs.with_columns(pl.col("client").map_elements(lambda p: relative(p, base), return_dtype=pl.String),
                                 pl.col("server").map_elements(lambda p: relative(p, base), return_dtype=pl.String))
    conf = a.confusion()
    with OutputSet(out, manifest=MANIFEST, replaces=frozenset()) as o:
        for name, df in (("verdicts", a.verdicts), ("connections", a.connections), ("runs", runs),
                         ("confusion", conf)):
            with o.file(f"{name}.csv") as p:
                df.write_csv(p)
        if not a.radio.is_empty():
            for name, df in (("radio_verdicts", a.radio), ("radio_confusion", tables(a.radio))):
                with o.file(f"{name}.csv") as p:
                    df.write_csv(p)
        with o.file("audit.json") as p:
            Path(p).write_text(json.dumps({
                "audit_format_version": FORMAT_VERSION, "runs": runs.to_dicts(),
                "errors": a.errors}, indent=1) + "\n", encoding="utf-8")
        return o.commit()
