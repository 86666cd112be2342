"""Two-vantage analysis: a phone-side ("client") and a server-side capture read together.

:func:`analyze_pair` returns a :class:`hsrtcp.Dataset` whose ``flows`` hold, for every
connection, the single-capture row of each side (vantage ``client`` and ``server``, exactly
as :func:`hsrtcp.analyze` gives them for each file alone) plus one row with vantage
``matched``. The matched row starts from the server-side row (the vantage targets.md M2 and
M19 use; the client-side row when only the client capture has the connection) and adds the
columns only two captures can give (docs/formats/matched.md):

- ``p_d``, ``p_a`` (M8, M9), ``ack_burst_loss`` (P_a measured from rounds, M36),
  ``q`` (loss of retransmissions inside timeout sequences, M11);
- ``owd_down_*`` / ``owd_up_*`` one-way delays, ``clock_offset_s`` (server clock − client
  clock), ``clock_drift_ppm``, ``clock_offset_uncertainty_s`` (A9);
- ``spurious_timeouts_2v`` with ``spurious_timeouts_ack_loss`` and
  ``spurious_timeouts_rto_estimation`` (M12, M14), ``rto_bias_mean_s`` (M16);
- ``establishment_time_s`` (M18), ``lost_data_packets``, ``lost_ack_packets``,
  capture-loss counts per capture point, and ``pairing`` (``isn``, ``seq_proximity``,
  ``client_only``, ``server_only``).

``series`` gain the matched flows' rows (M6 per 1-s bin: ``data_sent``, ``data_lost``,
``loss_rate``; docs/formats/series.md). ``events`` gain one ``spurious_timeout`` row (class ``two_vantage``) per spurious timeout,
with ``cause`` = ``ack_loss`` | ``rto_estimation`` and ``value`` = the RTO estimation bias
t6 − t4 in seconds where defined.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.runner import ID_SHIFT, TABLES, file_progress, result
from hsrtcp.runner import native as _native

# Matched row ids live above every single-capture id (those are capture_index << ID_SHIFT).
MATCH_ID_BASE = 1 << 62

# Identity columns of a side's single-capture row, and the matched table's names for them.
_SIDE_KEYS = ("client_addr", "client_port", "server_addr", "server_port", "epoch")


def bundle_pairs(path: str | os.PathLike) -> list[tuple[Path, Path]]:
    """The (client, server) capture pairs of a run bundle directory.

    Accepts the lab's bundle layout (``capture/phone_p1.pcap`` … ``capture/server.pcap``,
    docs/formats/bundle.md) and a plain directory with ``client.pcap`` and ``server.pcap``.
    An MPTCP bundle with several phone paths gives one pair per path.
    """
    d = Path(path)
    if not d.is_dir():
        raise InputError(f"{d}: not a directory")
    cap = d / "capture"
    if (cap / "server.pcap").exists():
        phones = sorted(cap.glob("phone_p*.pcap"))
        if not phones:
            raise InputError(f"{d}: run bundle without a phone capture (capture/phone_p*.pcap)")
        return [(p, cap / "server.pcap") for p in phones]
    for c, s in (("client.pcap", "server.pcap"), ("client.pcap.gz", "server.pcap.gz"),
                 ("client.pcapng", "server.pcapng")):
        if (d / c).exists() and (d / s).exists():
            return [(d / c, d / s)]
    raise InputError(f"{d}: no client/server capture pair (expected capture/phone_p1.pcap and "
                     f"capture/server.pcap, or client.pcap and server.pcap)")


def is_bundle(path: str | os.PathLike) -> bool:
    p = Path(path)
    return p.is_dir() and ((p / "manifest.json").exists() or (p / "capture" / "server.pcap").exists()
                           or ((p / "client.pcap").exists() and (p / "server.pcap").exists()))


def match_tables(client: str | os.PathLike, server: str | os.PathLike, *, index: int = 0,
                 window_s: float = 30.0, use_ip_id: bool = False) -> dict:
    """Run only the matcher on one pair: ``{"matched", "events", "series": DataFrame,
    "stats": dict}`` (``series``: M6 per-bin loss rows of the matched flows).

    ``matched`` has one row per connection (paired or seen on one side) with the identity of
    each side (``cv_*`` as the client capture shows it, ``sv_*`` as the server capture shows
    it) and the two-vantage columns. ``index`` keeps ids of several pairs apart.
    """
    c, s = Path(client), Path(server)
    for p in (c, s):
        if not p.exists():
            raise InputError(f"{p}: no such file")
        if p.is_dir():
            raise InputError(f"{p}: is a directory, not a capture file")
    from hsrtcp.output import shown

    r = _native().analyze_pair(c, s, shown(c), shown(s), MATCH_ID_BASE + (index << ID_SHIFT),
                               window_s, use_ip_id)
    return {"matched": pl.read_ipc_stream(r["matched"]), "events": pl.read_ipc_stream(r["events"]),
            "series": pl.read_ipc_stream(r["series"]), "stats": dict(r["stats"])}


def _join_side(matched: pl.DataFrame, flows: pl.DataFrame, prefix: str, id_name: str) -> pl.DataFrame:
    """Attach the flow_id of the side's single-capture row (by 4-tuple + epoch)."""
    side = flows.select([pl.col(k).alias(f"{prefix}{k}") for k in _SIDE_KEYS]
                        + [pl.col("flow_id").alias(id_name)])
    return matched.join(side, on=[f"{prefix}{k}" for k in _SIDE_KEYS], how="left")


def matched_rows(matched: pl.DataFrame, client_flows: pl.DataFrame,
                 server_flows: pl.DataFrame) -> pl.DataFrame:
    """Build the ``flows`` rows with vantage ``matched``: the side's single-capture row
    (server side when present) with the two-vantage columns added and the identity replaced
    (``flow_id`` = matched id, ``vantage`` = "matched", ``client_flow_id`` /
    ``server_flow_id`` pointing at the single-capture rows)."""
    m = _join_side(matched, client_flows, "cv_", "client_flow_id")
    m = _join_side(m, server_flows, "sv_", "server_flow_id")
    base_id = pl.coalesce("server_flow_id", "client_flow_id")
    m = m.with_columns(base_id.alias("_base"))
    singles = pl.concat([client_flows, server_flows], how="vertical")
    own = [c for c in m.columns if c not in ("_base",)]
    keep = [c for c in singles.columns if c not in own or c == "flow_id"]
    base = singles.select(keep).rename({"flow_id": "_base"})
    out = m.join(base, on="_base", how="left").drop("_base")
    out = out.with_columns(pl.lit("matched").alias("vantage"),
                           (pl.col("client_capture") + pl.lit(" + ") + pl.col("server_capture")).alias("capture"))
    # Single-capture column order first, then the two-vantage columns.
    first = [c for c in singles.columns if c in out.columns]
    return out.select(first + [c for c in out.columns if c not in first])


def analyze_pair(client: str | os.PathLike, server: str | os.PathLike, *, index: int = 0,
                 window_s: float = 30.0, use_ip_id: bool = False):
    """Analyze one phone-side and one server-side capture of the same connections.

    Returns a :class:`hsrtcp.Dataset`: the single-capture tables of both files (unchanged by
    the pairing) plus the matched rows and the two-vantage events. See the module docstring
    for the columns; ``Dataset.extra["pair_stats"]`` holds the run facts (clock fit, pair
    counts, packets per side).

    Example
    -------
    >>> ds = hsrtcp.analyze_pair("phone.pcap", "server.pcap")                     # doctest: +SKIP
    >>> ds.flows.filter(pl.col("vantage") == "matched").select("p_d", "p_a", "q")  # doctest: +SKIP
    """
    return analyze_pairs([(client, server)], window_s=window_s, use_ip_id=use_ip_id, first_index=index)


def analyze_pairs(pairs: Sequence[tuple[str | os.PathLike, str | os.PathLike]], *,
                  window_s: float = 30.0, use_ip_id: bool = False, first_index: int = 0,
                  singles: Sequence[str | os.PathLike] = (), single_vantage=None,
                  workers: int | None = None, progress=False):
    """Several (client, server) pairs, plus optional single captures, into one Dataset.

    ``progress``: True for a progress bar, or a callback ``(bytes_done, bytes_total)``."""
    from concurrent.futures import ThreadPoolExecutor

    from hsrtcp.api import Dataset, analyze_one
    from hsrtcp.output import shown

    pairs = [(Path(c), Path(s)) for c, s in pairs]
    files: list[tuple[Path, str | None]] = []
    slots: dict[Path, int] = {}
    for c, s in pairs:
        for p, v in ((c, "client"), (s, "server")):
            if p not in slots:  # one server capture may serve several phone paths
                slots[p] = len(files)
                files.append((p, v))
    vs = single_vantage if isinstance(single_vantage, (list, tuple)) else [single_vantage] * len(singles)
    for p, v in zip(singles, vs):
        files.append((Path(p), v))
    for p, _ in files:
        if not p.exists():
            raise InputError(f"{p}: no such file")
    for c, s in pairs:
        if os.path.samefile(c, s):
            raise InputError(f"{c} and {s}: the client-side and the server-side capture are the same "
                             f"file (a pair needs the captures of both ends)")
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(files) + len(pairs)))

    def matcher(k: int):
        c, s = pairs[k]
        return match_tables(c, s, index=first_index + k, window_s=window_s, use_ip_id=use_ip_id)

    # Ctrl-C reaches the main thread only: the single-capture passes stop when their
    # progress callback raises, and the pool is not waited for (the matcher cannot be
    # stopped; the command line exits without waiting for it).
    interrupted: list[bool] = []

    def stoppable(report):
        def checked(n: int) -> None:
            if interrupted:
                raise KeyboardInterrupt
            report(n)

        return checked

    # Progress counts the bytes the single-capture passes read (the matcher reads the same
    # files alongside).
    pool = ThreadPoolExecutor(n_workers)
    try:
        with file_progress([p for p, _ in files], progress) as for_file:
            single_f = [pool.submit(analyze_one, p, vantage=v, index=i, progress=stoppable(for_file(i)))
                        for i, (p, v) in enumerate(files)]
            match_f = [pool.submit(matcher, k) for k in range(len(pairs))]
            single_r = [result(f) for f in single_f]
            match_r = [result(f) for f in match_f]
    except KeyboardInterrupt:
        interrupted.append(True)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()

    tables = {t: [r[t] for r in single_r] for t in TABLES}
    matched_frames, stats = [], []
    paired_server_keys: set[tuple] = set()
    for k, (c, s) in enumerate(pairs):
        m = match_r[k]["matched"]
        paired_server_keys |= set(m.filter(pl.col("pairing").is_in(["isn", "seq_proximity"]))
                                  .select([f"sv_{x}" for x in _SIDE_KEYS]).iter_rows())
    for k, (c, s) in enumerate(pairs):
        m = match_r[k]["matched"]
        if sum(1 for _ in pairs if _[1] == s) > 1:
            # Several phone paths share this server capture: a connection paired in another
            # path's run is not "server only".
            keys = m.select([f"sv_{x}" for x in _SIDE_KEYS]).iter_rows()
            drop = [m["pairing"][i] == "server_only" and key in paired_server_keys
                    for i, key in enumerate(keys)]
            m = m.filter(~pl.Series(drop, dtype=pl.Boolean))
        rows = matched_rows(m, single_r[slots[c]]["flows"], single_r[slots[s]]["flows"])
        matched_frames.append(rows)
        ev = match_r[k]["events"]
        if not ev.is_empty():
            tables["events"].append(ev)
        se = match_r[k]["series"]
        if not se.is_empty():
            tables["series"].append(se)
        st = dict(match_r[k]["stats"], client_capture=shown(c), server_capture=shown(s))
        stats.append(st)
    flows = pl.concat(tables["flows"] + matched_frames, how="diagonal_relaxed")
    out = {t: pl.concat(tables[t], how="diagonal_relaxed") for t in TABLES if t != "flows"}
    return Dataset(flows=flows, **out, extra={"pair_stats": pl.DataFrame(stats)})


def read_manifest(bundle: str | os.PathLike) -> dict | None:
    """The bundle's manifest.json, if any (for labels in reports)."""
    p = Path(bundle) / "manifest.json"
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: invalid JSON at line {exc.lineno} column {exc.colno}") from exc
