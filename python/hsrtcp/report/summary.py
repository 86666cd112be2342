"""The flow summary printed by `hsrtcp analyze`: plain text, standard library only.

It is on the default path of `hsrtcp analyze` (issue 18: the README's command must stay
≥ 3x tcptrace), so it imports neither rich nor polars nor pathlib; it works on plain rows
(a list of dicts, as ``DataFrame.to_dicts()`` gives them, or as :func:`hsrtcp.analyze_to`
returns them). Every cell prints what the flows row holds: counts as stored, null as "-"
(never 0). Rows are grouped by connection (a matched row with the client and server rows it
links), one block each, largest first; each row starts with its short id (f1, f1c, f1s, f1m:
:func:`hsrtcp.results.flow_names`, computed here the same way without polars), which
``hsrtcp plot --flow`` and the ``flows`` view of ``hsrtcp query`` take, and ends with the
``flow_id`` as stored.
"""

from __future__ import annotations

import os

from hsrtcp.units import human_bytes, human_duration, human_rate, human_share


def row_data_bytes(row: dict) -> int:
    """Payload bytes in a flow row's data direction (s2c unless the flow is an upload)."""
    key = "c2s_payload_bytes" if row.get("data_dir") == "c2s" else "s2c_payload_bytes"
    return row.get(key) or 0


def capture_label(row: dict) -> str:
    """File name(s) of a flow row's capture(s) and its vantage: "a.pcap + b.pcap (matched)"."""
    names = " + ".join(os.path.basename(c) for c in (row.get("capture") or "?").split(" + "))
    return f"{names} ({row.get('vantage') or 'vantage unknown'})"


def count(v) -> str:
    """A count, or '-' where the vantage cannot tell (null, never 0)."""
    return "-" if v is None else f"{v:,}"


def _pct(v) -> str:
    return human_share(v)


# (heading, right-aligned?) of the table's columns, in order.
COLUMNS = [("id", False), ("capture (vantage)", False), ("client -> server", False),
           ("data", False), ("duration", True), ("bytes", True), ("mean rate", True),
           ("packets", True), ("retx", True), ("RTOs", True), ("spurious", True), ("RTT", True),
           ("end", False), ("flow_id", True)]
_LETTER = {"client": "c", "server": "s", "matched": "m"}


def connections(flows: list[dict]) -> list[list[dict]]:
    """The rows grouped by connection, numbered by first packet, each row with its
    ``short_id`` set (the rules of :func:`hsrtcp.results.flow_names`; a test keeps both equal)."""
    by_id = {r.get("flow_id"): r for r in flows}
    conn: dict = {r.get("flow_id"): r.get("flow_id") for r in flows}
    for r in flows:
        if r.get("vantage") == "matched":
            for side in ("client_flow_id", "server_flow_id"):
                linked = r.get(side)
                if linked in by_id and (conn[linked] == linked or r["flow_id"] < conn[linked]):
                    conn[linked] = r["flow_id"]
    groups: dict = {}
    for r in flows:
        groups.setdefault(conn[r.get("flow_id")], []).append(r)
    inf = float("inf")
    ordered = sorted(groups.values(), key=lambda g: (min((x.get("first_ts") for x in g if x.get("first_ts") is not None),
                                                         default=inf), min(x.get("flow_id") or 0 for x in g)))
    order = {"client": 0, "server": 1, "matched": 2}
    out = []
    for no, g in enumerate(ordered, start=1):
        g = sorted(g, key=lambda x: (order.get(x.get("vantage"), 3), x.get("flow_id") or 0))
        for x in g:
            x["short_id"] = f"f{no}{_LETTER.get(x.get('vantage'), '')}" if len(g) > 1 else f"f{no}"
        out.append(g)
    return out


def flow_cells(r: dict) -> list[str]:
    """One table row: the cells of :data:`COLUMNS` for a flows row."""
    dur = r.get("duration_s")
    data = row_data_bytes(r)
    rate = data * 8 / dur if dur else None
    rtt = r.get("rtt_mean")
    packets = None if r.get("c2s_packets") is None and r.get("s2c_packets") is None else \
        (r.get("c2s_packets") or 0) + (r.get("s2c_packets") or 0)
    return [
        r.get("short_id") or "-",
        capture_label(r),
        f"{r.get('client_addr')}:{r.get('client_port')} -> {r.get('server_addr')}:{r.get('server_port')}"
        + ("" if r.get("roles_from_syn") else " (roles guessed: no SYN)"),
        r.get("data_dir") or "-",
        human_duration(dur),
        human_bytes(data),
        human_rate(rate),
        count(packets),
        count(r.get("retransmissions")),
        count(r.get("timeouts")),
        count(r.get("spurious_timeouts")),
        human_duration(rtt),
        (r.get("end_reason") or "-") + (" (truncated)" if r.get("truncated") else ""),
        "-" if r.get("flow_id") is None else str(r["flow_id"]),
    ]


def format_table(header: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart, a rule under the heading."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, (h, _) in enumerate(header)]

    def line(cells):
        return "  ".join(c.rjust(w) if right else c.ljust(w)
                         for c, w, (_, right) in zip(cells, widths, header)).rstrip()

    return "\n".join([line([h for h, _ in header]), line(["-" * w for w in widths])]
                     + [line(row) for row in rows])


def matched_line(r: dict) -> str:
    """What only both captures together tell about a two-vantage row (docs/formats/matched.md).
    The spurious timeouts are the two-capture count (M12) with its two causes (M14), which
    partition it; the single-capture counts are in the table's "spurious" column."""
    # p_a (per ACK) and P_a (per round, the models' input) are different quantities: named apart
    parts = [f"data loss p_d {_pct(r.get('p_d'))}", f"per-ACK loss rate p_a {_pct(r.get('p_a'))}",
             f"ACK burst loss probability P_a {_pct(r.get('ack_burst_loss'))}"]
    if r.get("q") is not None:
        parts.append(f"q {_pct(r['q'])}")
    if r.get("spurious_timeouts_2v") is not None:
        parts.append(f"spurious timeouts (both captures) {count(r['spurious_timeouts_2v'])} "
                     f"(ACK loss {count(r.get('spurious_timeouts_ack_loss'))}, "
                     f"RTO estimation {count(r.get('spurious_timeouts_rto_estimation'))})")
    if r.get("clock_offset_s") is not None:
        unc = r.get("clock_offset_uncertainty_s")
        parts.append(f"clock offset {r['clock_offset_s'] * 1e3:+.3f} ms"
                     + (f" ± {unc * 1e3:.3f}" if unc is not None else ""))
    return f"  {r.get('short_id') or 'flow ' + str(r.get('flow_id'))} (matched, both captures): " + ", ".join(parts)


def summary_text(flows: list[dict] | None, captures: list[dict], limit: int = 20) -> str:
    """One line per capture and a table of the ``limit`` largest flows (by data bytes)."""
    lines = []
    for row in captures:
        line = (f"{os.path.basename(row['capture'])}: {count(row.get('packets'))} packets, "
                f"{count(row.get('tcp_packets'))} TCP, {count(row.get('flows'))} connections")
        if row.get("malformed_packets"):
            line += f", {row['malformed_packets']:,} malformed ({row.get('malformed_reasons')})"
        lines.append(line)
        if row.get("error"):
            # a time jump alone is reported in `error` while reading went on (not truncated)
            kept = ("results before it are kept, marked truncated" if row.get("truncated")
                    else "reading went on, nothing truncated")
            lines.append(f"  error: {row['error']} ({kept})")
    if not flows:
        lines.append("no TCP connections found")
        return "\n".join(lines)
    flows = [dict(r) for r in flows]  # (short ids are set on copies)
    groups = connections(flows)
    top = sorted(groups, key=lambda g: (-max(row_data_bytes(r) for r in g), int(g[0]["short_id"][1:].rstrip("csm"))))
    top = top[:limit]
    lines.append(f"TCP connections ({len(groups):,} connections in {len(flows):,} rows; largest {len(top)} shown, "
                 f"one block each)")
    table = format_table(COLUMNS, [flow_cells(r) for g in top for r in g]).split("\n")
    lines += table[:2]
    i = 2
    for g in top:
        lines += table[i:i + len(g)]
        i += len(g)
        lines += [matched_line(r) for r in g if r.get("vantage") == "matched"]
    return "\n".join(lines)
