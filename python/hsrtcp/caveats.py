"""How far to trust each detector in the condition a flow is in (docs/formats/caveats.md).

The ground-truth audit (docs/accuracy.md) judges each detector per condition: the vantage
it reads (``sender``, ``receiver``, ``both`` = the matched row of a pair) and whether the
connection negotiated SACK and timestamps. ``caveats.csv`` beside this module is that
verdict table, written from the committed summaries in docs/audit/ by
``python -m hsrtcp.audit.docs`` (never by hand). ``hsrtcp analyze`` copies it into the
results directory (its rows join flows.parquet on :func:`condition`) and its summary names
the detectors that are not ``good`` for the flows it printed.

Standard library only: it is on the default path of `hsrtcp analyze`, flows-level (no pass
over packets).
"""

from __future__ import annotations

import csv
import os

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "caveats.csv")
NAME = "caveats.csv"
COLUMNS = ["detector", "column", "detector_vantage", "sack", "timestamps", "verdict", "cases", "audits"]
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


def load(path: str = TABLE) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


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


def lookup(table: list[dict]) -> dict:
    return {(r["detector_vantage"], r["sack"], r["timestamps"], r["detector"]): r for r in table}


def flow_caveats(flows: list[dict], table: list[dict] | None = None) -> list[dict]:
    """Per detector, verdict that is not ``good`` and condition: the flows in that condition
    on which the detector answered (its column is not null)."""
    table = load() if table is None else table
    unsure: dict = {}  # condition -> [(detector, column, table row)]
    for t in table:
        if t["verdict"] in UNSURE:
            unsure.setdefault((t["detector_vantage"], t["sack"], t["timestamps"]), []).append(
                (t["detector"], t["column"], t))
    out: dict = {}
    for r in flows:
        c = condition(r)
        for det, col, t in unsure.get(c, ()) if c else ():
            if r.get(col) is None:
                continue
            e = out.get((det, c))
            if e is None:
                e = out[(det, c)] = {"detector": det, "column": col, "verdict": t["verdict"], "condition": c,
                                     "cases": t["cases"], "flows": []}
            e["flows"].append(r.get("short_id") or f"flow {r.get('flow_id')}")
    return sorted(out.values(), key=lambda e: (VERDICTS.index(e["verdict"]), list(DETECTORS).index(e["detector"]),
                                               e["condition"]))


_SAYS = {"poor": "is poor", "uncertain": "is uncertain", "few cases": "was audited on few cases",
         "no cases": "was never audited"}


def describe(c: tuple[str, str, str]) -> str:
    dv, sack, ts = c
    word = {"true": "on", "false": "off", "unknown": "unknown"}
    return f"{dv} vantage, SACK {word[sack]}, timestamps {word[ts]}"


def lines(flows: list[dict], table: list[dict] | None = None, shown: int = 6) -> list[str]:
    """The summary's caveat lines (plain text): one per detector and condition."""
    out = []
    for e in flow_caveats(flows, table):
        ids = [str(x) for x in e["flows"]]
        more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
        out.append(f"caveat: {e['detector']} ({e['column']}) {_SAYS[e['verdict']]} with "
                   f"{describe(e['condition'])}: {', '.join(ids[:shown])}{more}")
    if out:
        out.append("  (the ground-truth audit's verdict per condition: caveats.csv, docs/accuracy.md)")
    return out
