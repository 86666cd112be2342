"""The tables of docs/accuracy.md, rewritten from the committed audit summaries.

    python -m hsrtcp.audit.docs            # rewrite the regions of docs/accuracy.md
    python -m hsrtcp.audit.docs --check    # exit 3 naming the first region that differs

It also writes the verdict table the analyzer ships, python/hsrtcp/caveats.csv
(:func:`caveat_table`; docs/formats/caveats.md), from the same summaries.

A region is ``<!-- audit:NAME -->`` … ``<!-- /audit -->``; NAME is ``SUMMARY.TABLE`` with
SUMMARY a directory under docs/audit/ (``fixtures``, ``campaign``: what ``hsrtcp audit``
wrote) and TABLE one of :data:`TABLES`. Every number comes from the summary's
``verdicts.csv`` / ``connections.csv`` (the confusion counts recomputed by
:func:`hsrtcp.audit.tables`), and the region records their sha256.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import polars as pl

from hsrtcp.audit import tables
from hsrtcp.audit.conditions import band
from hsrtcp.errors import ExitCode, InputError

ROOT = Path(__file__).resolve().parents[3]
DOC = "docs/accuracy.md"
REGION = re.compile(r"<!-- audit:(?P<name>[A-Za-z0-9_.-]+) -->\n(?P<body>.*?)<!-- /audit -->", re.S)
ORDER = ["M10 timeout", "M12 receiver", "M12 dsack", "M12 eifel", "M12 server", "M12 two_vantage",
         "M14 two_vantage", "M14 server rule"]


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _ci(lo, hi) -> str:
    return "" if lo is None else f" [{100 * lo:.1f}, {100 * hi:.1f}]"


def matrix(conf: pl.DataFrame, breakdown: str) -> str:
    rows = conf.filter(pl.col("breakdown") == breakdown)
    head = "| detector | vantage |" + (" level |" if breakdown != "all" else "") + \
        " TP | FP | FN | TN | out of reach | precision [95 % CI] | recall [95 % CI] | confidence |\n"
    head += "|---|---|" + ("---|" if breakdown != "all" else "") + "---|---|---|---|---|---|---|---|\n"
    rank = {d: i for i, d in enumerate(ORDER)}
    from hsrtcp.audit.conditions import LEVELS

    levels = {v: i for i, v in enumerate(LEVELS)}  # bands in their order, other levels by name
    rows = rows.with_columns(pl.col("detector").replace_strict(rank, default=99).alias("_r"),
                             pl.col("level").replace_strict(levels, default=99, return_dtype=pl.Int64).alias("_l")).sort(
        ["_r", "_l", "level"], nulls_last=True)
    lines = []
    for r in rows.iter_rows(named=True):
        lvl = f" {'n/a' if r['level'] is None else r['level']} |" if breakdown != "all" else ""
        lines.append(f"| {r['detector']} | {r['vantage']} |{lvl} {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} | "
                     f"{r['out_of_reach']} | {_pct(r['precision'])}{_ci(r['precision_lo'], r['precision_hi'])} | "
                     f"{_pct(r['recall'])}{_ci(r['recall_lo'], r['recall_hi'])} | {r['confidence']} |")
    return head + "\n".join(lines) + "\n"


def counts(conn: pl.DataFrame, by: str = "run") -> str:
    """Per-run (or per ``by``) sums of the counts with a truth: kernel RTOs, M13 packets, the
    receiver's undecided interval and duplicates."""
    g = (conn.group_by(by, maintain_order=True)
         .agg(pl.len().alias("n"),
              *[pl.col(c).sum() for c in ("kernel_total_rto", "truth_rto_expirations", "truth_episodes",
                                          "truth_spurious_episodes", "truth_m13_packets", "matched_m13_packets",
                                          "truth_retrans_arrived", "receiver_retransmissions",
                                          "receiver_undecided", "truth_spurious_retrans", "receiver_duplicates")],
              (pl.col("rto_check") == "n/a").any().alias("no_kernel"),
              pl.col("receiver_interval_holds").all().alias("holds"))
         .sort(by))
    out = (f"| {by} | connections | RTOs: kernel / truth | timeout sequences (spurious) | M13 packets: "
           "truth / matched | re-sends arrived: truth / receiver [+undecided] | duplicates: truth / receiver |\n"
           "|---|---|---|---|---|---|---|\n")
    for r in g.iter_rows(named=True):
        kern = "–" if r["no_kernel"] else str(r["kernel_total_rto"])
        holds = "" if r["holds"] else " **outside**"
        out += (f"| {r[by]} | {r['n']} | {kern} / {r['truth_rto_expirations']} | {r['truth_episodes']} "
                f"({r['truth_spurious_episodes']}) | {r['truth_m13_packets']} / {r['matched_m13_packets']} | "
                f"{r['truth_retrans_arrived']} / {r['receiver_retransmissions']} [+{r['receiver_undecided']}]{holds} | "
                f"{r['truth_spurious_retrans']} / {r['receiver_duplicates']} |\n")
    return out


def dupacks(conn: pl.DataFrame, by: str = "run") -> str:
    """Per run (or per ``by``): the DupACKs the phone sent (truth, and candidates lost on the
    way) against the receiver's interval, and what each undecided candidate was
    (audit.core._dupacks)."""
    cols = ("truth_dupacks", "truth_dupack_candidates_lost", "receiver_dupacks", "receiver_dupacks_undecided",
            "undecided_truth_dupack", "undecided_truth_not", "undecided_truth_lost", "undecided_truth_unmatched")
    g = (conn.group_by(by, maintain_order=True)
         .agg(*[pl.col(c).sum() for c in cols], pl.col("receiver_dupack_interval_holds").all().alias("holds"))
         .sort(by))
    out = (f"| {by} | DupACKs sent: truth [+lost candidates] | receiver [+undecided] | undecided that were: "
           "DupACKs / not / lost / unmatched |\n|---|---|---|---|\n")
    for r in g.iter_rows(named=True):
        holds = "" if r["holds"] else " **outside**"
        out += (f"| {r[by]} | {r['truth_dupacks']} [+{r['truth_dupack_candidates_lost']}] | "
                f"{r['receiver_dupacks']} [+{r['receiver_dupacks_undecided']}]{holds} | "
                f"{r['undecided_truth_dupack']} / {r['undecided_truth_not']} / {r['undecided_truth_lost']} / "
                f"{r['undecided_truth_unmatched']} |\n")
    t = {c: g[c].sum() for c in cols}
    und = t["receiver_dupacks_undecided"]
    share = "" if not und else f" ({100 * t['undecided_truth_dupack'] / und:.0f} % DupACKs)"
    out += (f"| all | {t['truth_dupacks']} [+{t['truth_dupack_candidates_lost']}] | "
            f"{t['receiver_dupacks']} [+{und}] | {t['undecided_truth_dupack']} / {t['undecided_truth_not']} / "
            f"{t['undecided_truth_lost']} / {t['undecided_truth_unmatched']}{share} |\n")
    return out


def needless(conn: pl.DataFrame, by: str = "scenario") -> str:
    """Per ``by``: the server's re-sends by the class its row gave each, with the needless ones
    by the truth in brackets (connections.csv truth_retrans_K / truth_needless_K), against the
    M13 numerator (truth / matched row)."""
    from hsrtcp.audit.core import RETRANS_CLASSES

    ks = (*RETRANS_CLASSES, "unlabelled")
    cols = [f"truth_{w}_{k}" for k in ks for w in ("retrans", "needless")]
    g = (conn.group_by(by, maintain_order=True)
         .agg(*[pl.col(c).sum() for c in (*cols, "truth_retransmissions", "truth_m13_packets")],
              pl.col("matched_m13_packets").cast(pl.Int64).sum())
         .sort(by))
    shown = [k for k in ks if g[f"truth_retrans_{k}"].sum() or k in ("rto", "tlp", "fast", "sack_refill")]
    out = (f"| {by} | " + " | ".join(k.replace("_", " ") for k in shown) +
           " | all re-sends [needless] | M13 numerator: truth / matched |\n|---|" + "---|" * (len(shown) + 2) + "\n")
    for r in g.iter_rows(named=True):
        nl = sum(r[f"truth_needless_{k}"] for k in ks)
        out += (f"| {r[by]} | " + " | ".join(f"{r[f'truth_retrans_{k}']} [{r[f'truth_needless_{k}']}]" for k in shown) +
                f" | {r['truth_retransmissions']} [{nl}] | {r['truth_m13_packets']} / {r['matched_m13_packets']} |\n")
    return out


def conditions(conn: pl.DataFrame) -> str:
    """Per run: the path conditions its truth measured (hsrtcp.audit.conditions) and their bands."""
    g = (conn.group_by("run", maintain_order=True)
         .agg(pl.len().alias("n"), *[pl.col(c).first() for c in CONDITION_COLUMNS])
         .sort("run"))
    f = lambda x: "–" if x is None else f"{x:.1f}"  # noqa: E731
    out = ("| run | connections | base RTT (ms) | queue, median (ms) | outages: dropped / all | bands: RTT, queue, "
           "outages |\n|---|---|---|---|---|---|\n")
    for r in g.iter_rows(named=True):
        outs = "–" if r["outages"] is None else f"{r['dropped_outages']} / {r['outages']}"
        out += (f"| {r['run']} | {r['n']} | {f(r['truth_base_rtt_ms'])} | {f(r['truth_queue_ms'])} | {outs} | "
                f"{r['base_rtt_band'] or 'n/a'}, {r['queue_band'] or 'n/a'}, {r['outage_band'] or 'n/a'} |\n")
    return out


def standin(conn: pl.DataFrame) -> str:
    """Per connection: the truth's standing queue against the analyzer's stand-in for it,
    rtt_median - rtt_min of each row (what caveats.csv bands a flow by), band by band."""
    from hsrtcp.caveats import QUEUE_BANDS

    f = lambda x: "–" if x is None else f"{x:.1f}"  # noqa: E731
    rows = conn.sort("run", "connection")
    out = ("| run | truth: queue, median (ms) | RTT above min (ms): server row | phone row | matched row |\n"
           "|---|---|---|---|---|\n")
    same = {v: [0, 0] for v in ("server", "phone", "matched")}
    for r in rows.iter_rows(named=True):
        tb = band(r["truth_queue_ms"], QUEUE_BANDS)
        cells = []
        for v in same:
            ms = r[f"rtt_above_min_ms_{v}"]
            b = band(ms, QUEUE_BANDS)
            if ms is None or tb is None:
                cells.append(f(ms))
                continue
            same[v][1] += 1
            same[v][0] += b == tb
            cells.append(f"{f(ms)} ({b})" if b == tb else f"{f(ms)} (**{b}**)")
        out += f"| {r['run']} | {f(r['truth_queue_ms'])} ({tb or 'n/a'}) | " + " | ".join(cells) + " |\n"
    out += "| in the truth's band | | " + " | ".join(f"{a} of {n}" for a, n in same.values()) + " |\n"
    return out


CONDITION_COLUMNS = ("truth_base_rtt_ms", "truth_queue_ms", "outages", "dropped_outages", "base_rtt_band",
                     "queue_band", "outage_band")
# the summaries pooled by the ``pooled.*`` regions: every audited run, one condition at a time
POOLED = ("campaign", "v2", "dropped", "long", "fixtures", "v5", "v6")

TABLES = {
    "all": lambda d: matrix(_conf(d), "all"),
    "base_rtt": lambda d: matrix(_conf(d), "base_rtt_band"),
    "queue": lambda d: matrix(_conf(d), "queue_band"),
    "outage": lambda d: matrix(_conf(d), "outage_band"),
    "conditions": lambda d: conditions(_read(d / "connections.csv")),
    "standin": lambda d: standin(_read(d / "connections.csv")),
    "sack": lambda d: matrix(_conf(d), "sack"),
    "timestamps": lambda d: matrix(_conf(d), "timestamps"),
    "scenario": lambda d: matrix(_conf(d), "scenario"),
    "counts": lambda d: counts(_read(d / "connections.csv")),
    "dupacks": lambda d: dupacks(_read(d / "connections.csv")),
    # per scenario: the same sums when a campaign has too many runs for a row each
    "counts_by_scenario": lambda d: counts(_read(d / "connections.csv"), "scenario"),
    "dupacks_by_scenario": lambda d: dupacks(_read(d / "connections.csv"), "scenario"),
    "needless": lambda d: needless(_read(d / "connections.csv")),
    # the radio side (hsrtcp.audit.radio): a summary of radio_verdicts.csv only
    "radio": lambda d: matrix(tables(_read(d / "radio_verdicts.csv")), "all"),
    "radio_scenario": lambda d: matrix(tables(_read(d / "radio_verdicts.csv")), "scenario"),
    "suspensions": lambda d: suspensions(_read(d / "radio_verdicts.csv")),
}


def suspensions(v: pl.DataFrame) -> str:
    """Per M24 row: the phone's silence in the handoff's impairments against the gap M24 tied."""
    rows = v.filter(pl.col("detector") == "M24 suspension").sort("run", "handoff_id")
    out = "| run | handoff | silence at the phone (s) | M24 suspension (s) | verdict |\n|---|---|---|---|---|\n"
    f = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
    for r in rows.iter_rows(named=True):
        out += f"| {r['run']} | {r['handoff_id']} | {f(r['truth_suspension_s'])} | {f(r['suspension_s'])} | {r['outcome']} |\n"
    return out


def _read(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise InputError(f"docs/audit/{path.parent.name}/{path.name}: missing (a region of {DOC} reads it)")
    return pl.read_csv(path, infer_schema_length=None)


def _conf(d: Path) -> pl.DataFrame:
    if d.name == "pooled":
        return tables(_pooled(d.parent))
    return tables(_read(d / "verdicts.csv"))


def _pooled(audit_dir: Path) -> pl.DataFrame:
    """The verdicts of every summary in :data:`POOLED`, with their columns in common."""
    frames = [_read(audit_dir / s / "verdicts.csv").with_columns(pl.lit(s).alias("summary")) for s in POOLED]
    cols = [c for c in frames[0].columns if all(c in f.columns for f in frames)]
    return pl.concat([f.select(cols) for f in frames], how="vertical_relaxed")


def _digest(d: Path, files=("verdicts.csv", "connections.csv")) -> str:
    parts = [f"docs/audit/{d.name}/{f} {hashlib.sha256((d / f).read_bytes()).hexdigest()[:16]}"
             for f in files]
    return "<!-- inputs (sha256): " + ", ".join(parts) + " -->\n"


def render(name: str, root: Path | None = None) -> str:
    summary, _, table = name.partition(".")
    d = (root or ROOT) / "docs" / "audit" / summary
    if table not in TABLES:
        raise InputError(f"{DOC}: unknown audit region {name!r} (tables: {', '.join(TABLES)})")
    radio = table in ("radio", "radio_scenario", "suspensions")
    if summary == "pooled":
        if table not in ("all", "base_rtt", "queue", "outage"):
            raise InputError(f"{DOC}: region {name!r}: the pooled summaries give only matrices")
        parts = [f"docs/audit/{s}/verdicts.csv {hashlib.sha256((d.parent / s / 'verdicts.csv').read_bytes()).hexdigest()[:16]}"
                 for s in POOLED]
        return "<!-- inputs (sha256): " + ", ".join(parts) + " -->\n" + TABLES[table](d)
    return _digest(d, ("radio_verdicts.csv",) if radio else ("verdicts.csv", "connections.csv")) + TABLES[table](d)


def regenerate(text: str, root: Path | None = None) -> str:
    return REGION.sub(lambda m: f"<!-- audit:{m['name']} -->\n{render(m['name'], root)}<!-- /audit -->", text)


CAVEATS = "python/hsrtcp/caveats.csv"
# SACK x timestamps rows: the first campaign, the fixtures, v5 and v6 (the lab campaigns audited
# with the current engine; the others' summaries are of the s13 engine: docs/accuracy.md)
SUMMARIES = ("campaign", "fixtures", "v5", "v6")
PATH_SUMMARIES = ("campaign", "fixtures", "v2", "dropped", "long", "v5", "v6")  # every summary with condition columns
_FLAGS = ("true", "false")


def _verdict(parts: list[dict]) -> str:
    """The most cautious verdict of the audits that judged cases in a condition; ``not
    applicable`` when none did and the method could not see a positive, ``no cases`` else."""
    from hsrtcp.caveats import VERDICTS

    judged = [p["confidence"] for p in parts if p["tp"] + p["fp"] + p["fn"] + p["tn"] > 0]
    if judged:
        return min(judged, key=VERDICTS.index)
    return "not applicable" if any(p["out_of_reach"] for p in parts) else "no cases"


def caveat_table(root: Path | None = None) -> str:
    """caveats.csv: per detector the analyzer has, its vantage and every SACK × timestamps
    condition (``unknown`` = either), the verdict of docs/audit/'s summaries, their counts
    and the sha256 of the verdicts they came from."""
    import csv
    import io

    from hsrtcp.audit.score import confusion
    from hsrtcp.caveats import ANY, COLUMNS, DETECTORS

    cells: dict = {}
    digests = []
    for s in SUMMARIES:
        d = (root or ROOT) / "docs" / "audit" / s
        v = _read(d / "verdicts.csv")
        digests.append(f"{s} {hashlib.sha256((d / 'verdicts.csv').read_bytes()).hexdigest()[:16]}")
        v = v.with_columns(pl.col("sack").cast(pl.String).str.to_lowercase(),
                           pl.col("timestamps").cast(pl.String).str.to_lowercase())
        for r in confusion(v, ["sack", "timestamps"]).iter_rows(named=True):
            cells.setdefault((r["detector"], r["sack"], r["timestamps"]), []).append(r | {"summary": s})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for det, (col, dv) in DETECTORS.items():
        for sack in (*_FLAGS, "unknown"):
            for ts in (*_FLAGS, "unknown"):
                parts = [p for sk in ((sack,) if sack != "unknown" else _FLAGS)
                         for tk in ((ts,) if ts != "unknown" else _FLAGS)
                         for p in cells.get((det, sk, tk), [])]
                cases = "; ".join(f"{p['summary']} {p['tp']} TP {p['fp']} FP {p['fn']} FN {p['tn']} TN"
                                  f"{' ' + str(p['out_of_reach']) + ' out of reach' if p['out_of_reach'] else ''}"
                                  for p in parts) or "no audited case"
                w.writerow([det, col, dv, sack, ts, ANY, ANY, _verdict(parts), cases, ", ".join(digests)])
    _path_rows(w, root)
    return buf.getvalue()


def _path_rows(w, root: Path | None) -> None:
    """Per detector and band of each path condition (caveats.PATH_CONDITIONS), the verdict of
    the verdicts of every summary pooled (a band gathers its cases across campaigns); SACK and
    timestamps ``any``."""
    from hsrtcp.audit.score import confusion
    from hsrtcp.caveats import ANY, DETECTORS, PATH_CONDITIONS

    frames, digests = [], []
    for s in PATH_SUMMARIES:
        d = (root or ROOT) / "docs" / "audit" / s
        digests.append(f"{s} {hashlib.sha256((d / 'verdicts.csv').read_bytes()).hexdigest()[:16]}")
        cols = ["detector", "vantage", "truth", "outcome", "applicable",
                *(b for b, _ in PATH_CONDITIONS.values())]
        frames.append(_read(d / "verdicts.csv").select(
            [pl.col(c).cast(pl.String) if c.endswith("_band") else pl.col(c) for c in cols]))
    v = pl.concat(frames, how="vertical_relaxed")
    for pc, (b, edges) in PATH_CONDITIONS.items():
        cells = {(r["detector"], r[b]): r for r in confusion(v, [b]).iter_rows(named=True)}
        for det, (col, dv) in DETECTORS.items():
            for _, level in edges:
                p = cells.get((det, level))
                parts = [p] if p else []
                cases = (f"pooled {p['tp']} TP {p['fp']} FP {p['fn']} FN {p['tn']} TN"
                         f"{' ' + str(p['out_of_reach']) + ' out of reach' if p['out_of_reach'] else ''}"
                         if p else "no audited case")
                w.writerow([det, col, dv, ANY, ANY, pc, level, _verdict(parts), cases, ", ".join(digests)])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    path = ROOT / DOC
    text = path.read_text(encoding="utf-8")
    new = regenerate(text)
    cav_path = ROOT / CAVEATS
    cav = caveat_table()
    if "--check" in argv:
        if not cav_path.is_file() or cav_path.read_text(encoding="utf-8") != cav:
            print(f"{CAVEATS}: differs from the committed summaries", file=sys.stderr)
            return ExitCode.INPUT
        for m_old, m_new in zip(REGION.finditer(text), REGION.finditer(new)):
            if m_old["body"] != m_new["body"]:
                line = text[: m_old.start()].count("\n") + 1
                print(f"{DOC}:{line}: region {m_old['name']} differs from the committed summaries", file=sys.stderr)
                return ExitCode.INPUT
        return ExitCode.OK
    if new != text:
        path.write_text(new, encoding="utf-8")
    if not cav_path.is_file() or cav_path.read_text(encoding="utf-8") != cav:
        cav_path.parent.mkdir(parents=True, exist_ok=True)
        cav_path.write_text(cav, encoding="utf-8")
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
