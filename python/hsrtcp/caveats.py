"""How far to trust each detector in the condition a flow is in (docs/formats/caveats.md).

The ground-truth audit (docs/accuracy.md) judges each detector per condition: the vantage
it reads (``sender``, ``receiver``, ``both`` = the matched row of a pair) and whether the
connection negotiated SACK and timestamps, or (``path_condition``) a band of the path the
analyzer measures itself: its minimum RTT and its median RTT above that minimum (the
standing queue). ``caveats.csv`` beside this module is that
verdict table, written from the committed summaries in docs/audit/ by
``python -m hsrtcp.audit.docs`` (never by hand). ``hsrtcp analyze`` copies it into the
results directory (its rows join flows.parquet on :func:`condition`) and its summary names
the detectors that are not ``good`` for the flows it printed.

Standard library only: it is on the default path of `hsrtcp analyze`, flows-level (no pass
over packets).
"""

from __future__ import annotations

import _csv
import os

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "caveats.csv")
NAME = "caveats.csv"
COLUMNS = ["detector", "column", "detector_vantage", "sack", "timestamps", "path_condition", "band", "verdict",
           "cases", "audits"]
# Path conditions a flow's own columns measure (the analyzer has no truth), the audit's breakdown
# judged by it, and the band edges (ms) both use. "min RTT": the audit bins by the analyzer's
# rtt_min of the same connection; "RTT above min": rtt_median - rtt_min stands in for the
# truth's standing queue (median data one-way delay above its minimum; the uplink's queue is
# added, nil in the lab).
MIN_RTT_BANDS = ((10, "<10 ms"), (100, "10-100 ms"), (300, "100-300 ms"), (None, ">=300 ms"))
QUEUE_BANDS = ((5, "<5 ms"), (30, "5-30 ms"), (100, "30-100 ms"), (None, ">=100 ms"))
PATH_CONDITIONS = {"min RTT": ("rtt_band", MIN_RTT_BANDS), "RTT above min": ("queue_band", QUEUE_BANDS)}
ANY = "any"
# The analyzer's column each audited detector is read from, and the vantage it needs
# (the audit's "server"/"phone" of a download are the data sender/receiver).
DETECTORS = {
    "M10 timeout": ("timeout_sequences", "sender"),
    "M12 receiver": ("spurious_timeouts_receiver", "receiver"),
    "M12 dsack": ("spurious_timeouts_dsack", "sender"),
    "M12 eifel": ("spurious_timeouts_eifel", "sender"),
    "M12 server": ("spurious_timeouts", "sender"),
    "M12 two_vantage": ("spurious_timeouts", "both"),
    "M14 two_vantage": ("spurious_timeouts_ack_loss", "both"),
}
# Most cautious first: a condition's verdict is the most cautious one of any audit.
VERDICTS = ["poor", "uncertain", "few cases", "no cases", "good", "not applicable"]
UNSURE = ("poor", "uncertain", "few cases", "no cases")


def band(ms: float | None, bands) -> str | None:
    if ms is None:
        return None
    return next(name for hi, name in bands if hi is None or ms < hi)


def path_bands(row: dict) -> dict[str, str]:
    """The band of each path condition of a flows row (seconds -> ms); none without RTTs."""
    lo, med = row.get("rtt_min"), row.get("rtt_median")
    ms = {"min RTT": None if lo is None else 1000 * lo,
          "RTT above min": None if lo is None or med is None else 1000 * (med - lo)}
    return {pc: b for pc, (_, edges) in PATH_CONDITIONS.items() if (b := band(ms[pc], edges)) is not None}


def load(path: str = TABLE) -> list[dict]:
    """The rows as csv.DictReader gives them for a table whose rows all have the header's
    width, as the one hsrtcp writes (a ragged row is cut or left short, not padded with None
    as DictReader would). Read with ``_csv``, the parser the csv module
    wraps: importing csv imports re and enum, about 6 ms of CPU on the default path of
    `hsrtcp analyze`, taken from the native threads on a two-core machine (bench/README.md, s18)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = _csv.reader(f)
        head = next(rows, [])
        return [dict(zip(head, r)) for r in rows if r]


def _flag(v) -> str:
    return "unknown" if v is None else ("true" if v else "false")


def condition(row: dict) -> tuple[str, str, str] | None:
    """(detector_vantage, sack, timestamps) of a flows row; None when the row's vantage is
    unknown (its vantage-dependent columns are null: no detector answered)."""
    if row.get("vantage") == "matched":
        dv = "both"
    else:
        dv = row.get("data_vantage")
        if dv not in ("sender", "receiver"):
            return None
    return dv, _flag(row.get("sack_permitted")), _flag(row.get("timestamps"))


def _key(t: dict) -> tuple[str, str, str]:
    """A table row's condition: (vantage, sack, timestamps), or (vantage, path condition, band)."""
    pc = t.get("path_condition", ANY) or ANY
    return (t["detector_vantage"], t["sack"], t["timestamps"]) if pc == ANY else (t["detector_vantage"], pc, t["band"])


def lookup(table: list[dict]) -> dict:
    return {(*_key(r), r["detector"]): r for r in table}


def _worse(v: str, than: str | None) -> bool:
    """Whether a path band's verdict adds to the flag condition's: more cautious, or never
    audited where the flags were."""
    if than is None:
        return True
    if than == "not applicable":  # the method cannot see a case with these flags, in any band
        return False
    return VERDICTS.index(v) < VERDICTS.index(than) or (v == "no cases" and than != "no cases")


def flow_caveats(flows: list[dict], table: list[dict] | None = None) -> list[dict]:
    """Per detector, verdict that is not ``good`` and condition: the flows in that condition
    on which the detector answered (its column is not null). A path band's verdict is named
    only where it says more than the SACK x timestamps one of the same flow."""
    table = load() if table is None else table
    unsure: dict = {}  # condition -> [(detector, column, table row)]
    flag_verdict = {}
    for t in table:
        if (t.get("path_condition", ANY) or ANY) == ANY:
            flag_verdict[(t["detector"], _key(t))] = t["verdict"]
        if t["verdict"] in UNSURE:
            unsure.setdefault(_key(t), []).append((t["detector"], t["column"], t))
    out: dict = {}
    for r in flows:
        c = condition(r)
        if c is None:
            continue
        conds = [c] + [(c[0], pc, b) for pc, b in path_bands(r).items()]
        for k in conds:
            for det, col, t in unsure.get(k, ()):
                if r.get(col) is None or (k is not c and not _worse(t["verdict"], flag_verdict.get((det, c)))):
                    continue
                e = out.get((det, k))
                if e is None:
                    e = out[(det, k)] = {"detector": det, "column": col, "verdict": t["verdict"], "condition": k,
                                         "cases": t["cases"], "flows": []}
                e["flows"].append(r.get("short_id") or f"flow {r.get('flow_id')}")
    return sorted(out.values(), key=lambda e: (VERDICTS.index(e["verdict"]), list(DETECTORS).index(e["detector"]),
                                               e["condition"]))


_SAYS = {"poor": "poor", "uncertain": "uncertain", "few cases": "audited on few cases",
         "no cases": "never audited"}


def describe(c: tuple[str, str, str]) -> str:
    dv, sack, ts = c
    if sack in PATH_CONDITIONS:
        return f"{dv} vantage, {sack} {ts}"
    word = {"true": "on", "false": "off", "unknown": "unknown"}
    return f"{dv} vantage, SACK {word[sack]}, timestamps {word[ts]}"


def _detectors(names: list[str]) -> str:
    """'M12 dsack, eifel, server': a family's name (M12) once per run of its detectors."""
    parts, last = [], None
    for n in names:
        fam, _, rest = n.partition(" ")
        parts.append(rest if fam == last else n)
        last = fam
    return ", ".join(parts)


def lines(flows: list[dict], table: list[dict] | None = None, shown: int = 6) -> list[str]:
    """The summary's caveat lines (plain text): one per condition and set of unsure detectors
    (so one per printed flow row of a pair), the detectors grouped by verdict; the columns
    and counts are in caveats.csv."""
    groups: dict = {}  # (condition, ((verdict, detector), ...)) -> flow ids
    per_flow: dict = {}
    for e in flow_caveats(flows, table):
        for f in e["flows"]:
            per_flow.setdefault((e["condition"], str(f)), []).append((e["verdict"], e["detector"]))
    for (c, f), dets in per_flow.items():
        groups.setdefault((c, tuple(dets)), []).append(f)
    out = []
    order = lambda k: (min(VERDICTS.index(v) for v, _ in k[1]), k[0])  # noqa: E731
    for key in sorted(groups, key=order):
        c, dets = key
        ids = groups[key]
        more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
        says = []
        for v in VERDICTS:
            names = [d for vv, d in dets if vv == v]
            if names:
                says.append(f"{_detectors(names)} {_SAYS[v]}")
        out.append(f"caveat: {', '.join(ids[:shown])}{more} ({describe(c)}): {'; '.join(says)}")
    if out:
        out.append("  (the ground-truth audit's verdict per detector and condition: caveats.csv, docs/accuracy.md)")
    return out
