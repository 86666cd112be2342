"""The Wireshark display filter that finds a drill-down's events in their capture (issue 31).

Events carry the capture's frame number of their packet (events.frame, Wireshark's
``frame.number``: docs/formats/packets.md). For each kind of event of a flow the report
gives one filter, ``frame.number in {312,313,...}``, to paste into Wireshark (or
``tshark -Y``) on the capture the drill-down names; a set is written with commas, the
syntax of Wireshark 4.
"""

from __future__ import annotations

import polars as pl

#: frames in one filter at most: the page's size (a flow with 50,000 retransmissions), and
#: what a filter box takes; beyond, the query that lists them all
FRAMES_MAX = 200

#: the events with a packet of their own, as the notes name them
KINDS = {"retransmission": "retransmissions", "spurious_retransmission": "spurious retransmissions",
         "spurious_timeout": "spurious timeouts", "timeout_sequence": "timeout sequences (their first re-send)",
         "zero_window": "zero-window episodes", "sack_block": "SACK blocks (their ACK)"}


def display_filters(events: pl.DataFrame | None, capture: str | None, flow_id, input_id: str | None = None) -> list[str]:
    """One note per kind (and class) of ``events`` with frame numbers: how many, the capture
    and the display filter finding each one; the first FRAMES_MAX frames, then the query for
    the rest (in a corpus, ``flow_id`` is the input's own and ``input_id`` names the input)."""
    if events is None or "frame" not in events.columns or events.is_empty():
        return []
    ev = events.filter(pl.col("frame").is_not_null() & pl.col("kind").is_in(list(KINDS)))
    notes = []
    where = f"flow_id = {flow_id}" + (f" and input = '{input_id}'" if input_id is not None else "")
    for (kind, cls), g in sorted(ev.group_by(["kind", "class"]), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        frames = g.get_column("frame").unique().sort().to_list()
        shown = frames[:FRAMES_MAX]
        what = f"{len(frames):,} {KINDS[kind]}" + (f" ({cls})" if cls else "")
        more = (f" (the first {FRAMES_MAX} of {len(frames):,} frames; all of them: hsrtcp query RESULTS "
                f"\"select frame from events where {where} and kind = '{kind}'\")"
                if len(frames) > FRAMES_MAX else "")
        notes.append(f"Wireshark, {capture or 'the capture'}: the {what}: "
                     f"frame.number in {{{','.join(str(f) for f in shown)}}}{more}")
    return notes
