"""Where instances come from: run bundles, campaign directories, or results directories.

- a run bundle (docs/formats/bundle.md): its server capture ``capture/server.pcap`` is
  analyzed at the server (sender) vantage, which gives every flow of the instance (all
  paths meet at the server), the ACK advance that is the client's received data, and the
  bytes in flight k_t needs; the manifest gives the run's identity and duration, and
  ``kernel/nstat-*.json`` the kernel's counters;
- a campaign directory: every bundle in it (sorted by run id);
- a results directory of ``hsrtcp analyze`` (docs/formats/output.md): each capture in it
  analyzed at the server vantage is one instance; the bundle around the capture, when there
  is one, gives the metadata, else ``duration_s`` must be given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.bundle import has_manifest, read_manifest, run_bundles
from hsrtcp.errors import InputError


@dataclass
class Instance:
    instance: str
    source: str
    flows: pl.DataFrame
    series: pl.DataFrame
    events: pl.DataFrame
    duration_s: float | None
    manifest: dict | None = None
    kernel: dict = field(default_factory=dict)  # side -> {counter: value}
    tables: dict = field(default_factory=dict)  # the core's mptcp tables when present
    errors: list = field(default_factory=list)  # read errors of the capture (rows before them kept)

    def meta(self, *keys, default=None):
        d = self.manifest or {}
        for k in keys:
            d = d.get(k) if isinstance(d, dict) else None
        return default if d is None else d


def _kernel(bundle: Path) -> dict:
    out = {}
    for side in ("client", "server"):
        f = bundle / "kernel" / f"nstat-{side}.json"
        if f.is_file():
            try:
                out[side] = json.loads(f.read_text())
            except ValueError as exc:
                raise InputError(f"{f}: not JSON: {exc}") from exc
    return out


def _duration(manifest: dict | None, given: float | None) -> float | None:
    if given:
        return float(given)
    flow = (manifest or {}).get("flow") or {}
    return float(flow["duration_s"]) if flow.get("duration_s") else None


def _mptcp_tables(ds, capture: str | None = None) -> dict:
    """The core's MPTCP tables of a Dataset (or a ``{name: DataFrame}``), of one capture."""
    out = {}
    for name in ("mptcp", "mptcp_subflows", "mptcp_series"):
        t = ds.get(name) if isinstance(ds, dict) else getattr(ds, name, None)
        if t is None and not isinstance(ds, dict):
            t = getattr(ds, "extra", {}).get(name)
        if isinstance(t, pl.DataFrame):
            if capture is not None and "capture" in t.columns:
                t = t.filter(pl.col("capture") == capture)
            out[name] = t
    return out


def from_bundle(bundle: Path, duration_s: float | None = None) -> Instance:
    from hsrtcp.api import analyze

    server = bundle / "capture" / "server.pcap"
    if not server.is_file():
        raise InputError(f"{bundle}: run bundle without capture/server.pcap")
    manifest = read_manifest(bundle)
    ds = analyze([server], vantage="server")
    return Instance(instance=(manifest or {}).get("run_id", bundle.name), source=str(bundle), flows=ds.flows,
                    series=ds.series, events=ds.events, duration_s=_duration(manifest, duration_s),
                    manifest=manifest, kernel=_kernel(bundle), tables=_mptcp_tables(ds), errors=ds.errors)


#: columns the instance metrics read from a results directory (M5 rates, roles, k_t)
NEEDS = {
    "flows": ("flow_id", "capture", "vantage", "first_ts", "data_dir", "client_addr", "goodput_bytes",
              "duration_s", "mptcp"),
    "series": ("flow_id", "ts", "goodput_bytes", "bin_s", "bif_max", "bif_mean"),
    "events": ("flow_id", "kind", "class", "ts"),
    "captures": ("capture", "error"),
}


def from_results(out_dir: Path, duration_s: float | None = None) -> list[Instance]:
    from hsrtcp.results import MPTCP_TABLES, ResultsDir, no_nulls

    res = ResultsDir(out_dir)  # each table checked against its versioned schema (hsrtcp.results)
    tables = {}
    for name, cols in NEEDS.items():
        optional = ("mptcp_token", "mptcp_subflow") if name == "flows" else ()
        if name == "flows" and "mptcp_token" in res.schema("flows"):
            cols = (*cols, "mptcp_subflow")  # subflows numbered within the token's connection
        tables[name] = res.read(name, cols, optional=optional)
    flows = tables["flows"].filter(pl.col("vantage") == "server")
    if flows.is_empty():
        raise InputError(f"{out_dir}: no flows analyzed at the server vantage (analyze the server capture "
                         f"with --vantage server, or give the run bundles)")
    # times place every second of an instance: a flow or bin without one cannot be placed
    no_nulls(flows, ["first_ts"], res.file("flows"))
    ids = flows["flow_id"].implode()
    series = tables["series"].filter(pl.col("flow_id").is_in(ids))
    events = tables["events"].filter(pl.col("flow_id").is_in(ids))
    no_nulls(series, ["ts"], res.file("series"))
    no_nulls(events, ["ts"], res.file("events"))
    core = {name: res.read(name) for name in MPTCP_TABLES if res.has(name)}
    out = []
    for (capture,), f in flows.group_by(["capture"], maintain_order=True):
        fids = f["flow_id"].implode()
        bundle = Path(capture).parent.parent if capture else Path(out_dir)
        manifest = read_manifest(bundle) if capture and bundle.is_dir() else None
        out.append(Instance(instance=(manifest or {}).get("run_id", capture),
                            source=str(out_dir), flows=f,
                            series=series.filter(pl.col("flow_id").is_in(fids)),
                            events=events.filter(pl.col("flow_id").is_in(fids)),
                            duration_s=_duration(manifest, duration_s), manifest=manifest,
                            kernel=_kernel(bundle) if manifest else {},
                            tables=_mptcp_tables(core, capture),
                            errors=[e for c, e in zip(tables["captures"]["capture"], tables["captures"]["error"])
                                    if c == capture and e]))
    return out


def load(paths, duration_s: float | None = None) -> list[Instance]:
    """Instances of every path (bundle, campaign directory or results directory), in order.

    Raises :class:`InputError` naming the path that is none of these."""
    out: list[Instance] = []
    for p in [Path(x) for x in paths]:
        if not p.exists():
            raise InputError(f"{p}: no such file or directory")
        if not p.is_dir():
            raise InputError(f"{p}: expected a run bundle, a campaign directory or a results directory")
        if has_manifest(p) or (p / "capture" / "server.pcap").is_file():
            out.append(from_bundle(p, duration_s))
        elif (p / "flows.parquet").is_file():
            out += from_results(p, duration_s)
        else:
            bundles = run_bundles(p)
            if not bundles:
                raise InputError(f"{p}: no run bundle (manifest.json), campaign of bundles, or results "
                                 f"directory (flows.parquet) here")
            out += [from_bundle(b, duration_s) for b in bundles]
    return out
