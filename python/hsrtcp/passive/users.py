"""The ``users`` table (issue 36 item 2): flows grouped by phone, seed 002's users' behaviour.

A passive trace (an operator's core, a cloud tap) holds many users at once. Each flow of the
``flows`` table is given to a user by one of these keys (``by``):

- ``client`` (default): the inner client address, the phone's (UE) address; behind a
  carrier NAT many phones share one, which only a mapping (below) can separate;
- ``bearer``: the GTP-U bearer, ``SGW address/uplink TEID`` (``tunnel_server_addr``,
  ``tunnel_id_c2s``): the uplink TEID is allocated by the SGW/UPF and stays through an X2/Xn
  handover, when the eNodeB's downlink TEID and address change (flows.tunnel_changes);
  flows captured plain fall back to their client address;
- a mapping file (``mapping``): CSV with columns ``address,user``, an address or a CIDR
  prefix per line (the longest prefix wins), for what the operator knows (IMSI ranges,
  DHCP leases); flows no line covers keep their client address.

Per user: flows, bytes each way, first and last packet, ``active_s`` (the union of its flows'
lifetimes), ``sessions`` (runs of activity separated by more than ``session_gap_s`` without
any flow open), ``gaps`` (the silences between them) and their mean, distinct servers,
bearers and handovers (summed tunnel_changes). Schema: docs/formats/users.md.
"""

from __future__ import annotations

import csv
import ipaddress
import os
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError

SCHEMA_VERSION = 1
MANIFEST = ".hsrtcp-users"
BY = ("client", "bearer")
#: default silence (s) that ends a session: no flow of the user open for this long
SESSION_GAP_S = 60.0

USERS_SCHEMA: dict[str, pl.DataType] = {
    "user": pl.String, "key": pl.String, "flows": pl.UInt64, "c2s_bytes": pl.UInt64, "s2c_bytes": pl.UInt64,
    "bytes": pl.UInt64, "first_ts": pl.Float64, "last_ts": pl.Float64, "span_s": pl.Float64,
    "active_s": pl.Float64, "sessions": pl.UInt64, "gaps": pl.UInt64, "gap_mean_s": pl.Float64,
    "servers": pl.UInt64, "bearers": pl.UInt64, "handovers": pl.UInt64,
}

_FLOW_COLUMNS = ["flow_id", "client_addr", "server_addr", "first_ts", "last_ts", "c2s_payload_bytes",
                 "s2c_payload_bytes"]
_TUNNEL_COLUMNS = ["tunnel", "tunnel_server_addr", "tunnel_id_c2s", "tunnel_changes"]


def read_mapping(path: str | os.PathLike) -> list[tuple[ipaddress._BaseNetwork, str]]:
    """``address,user`` lines (a header line naming them is skipped) as networks, longest
    prefix first. A line that is not an address or prefix is an InputError naming it."""
    out = []
    try:
        with open(path, newline="") as f:
            for n, row in enumerate(csv.reader(f), 1):
                if not row or row[0].strip().startswith("#"):
                    continue
                if n == 1 and row[0].strip().lower() == "address":
                    continue
                if len(row) < 2 or not row[1].strip():
                    raise InputError(f"{path}: line {n}: expected 'address,user', got {','.join(row)!r}")
                try:
                    net = ipaddress.ip_network(row[0].strip(), strict=False)
                except ValueError:
                    raise InputError(f"{path}: line {n}: {row[0].strip()!r} is not an address or prefix") from None
                out.append((net, row[1].strip()))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the mapping file: {exc.strerror}") from None
    return sorted(out, key=lambda x: -x[0].prefixlen)


def _mapped(addresses: list[str], mapping) -> dict[str, str]:
    out = {}
    for a in addresses:
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            continue
        for net, user in mapping:
            if ip.version == net.version and ip in net:
                out[a] = user
                break
    return out


def user_keys(flows: pl.DataFrame, by: str = "client", mapping=None) -> pl.DataFrame:
    """``flows`` with the columns ``user`` and ``key`` (how the user was found)."""
    if by not in BY:
        raise ValueError(f"by must be one of {BY}, not {by!r}")
    client = pl.col("client_addr")
    if by == "bearer" and "tunnel_id_c2s" in flows.columns:
        bearer = pl.col("tunnel_server_addr") + pl.lit("/") + pl.col("tunnel_id_c2s").cast(pl.String)
        df = flows.with_columns(
            pl.when(bearer.is_not_null()).then(bearer).otherwise(client).alias("user"),
            pl.when(bearer.is_not_null()).then(pl.lit("bearer")).otherwise(pl.lit("client")).alias("key"))
    else:
        df = flows.with_columns(client.alias("user"), pl.lit("client").alias("key"))
    if mapping:
        m = _mapped(df["client_addr"].drop_nulls().unique().to_list(), mapping)
        if m:
            mapped = pl.col("client_addr").replace_strict(m, default=None, return_dtype=pl.String)
            df = df.with_columns(
                pl.when(mapped.is_not_null()).then(mapped).otherwise(pl.col("user")).alias("user"),
                pl.when(mapped.is_not_null()).then(pl.lit("map")).otherwise(pl.col("key")).alias("key"))
    return df


def users(flows: pl.DataFrame, by: str = "client", mapping=None,
          session_gap_s: float = SESSION_GAP_S) -> pl.DataFrame:
    """The users table of a ``flows`` table (one row per user, in order of first packet)."""
    for c in _TUNNEL_COLUMNS:
        if c not in flows.columns:  # results of an hsrtcp before the tunnel columns
            flows = flows.with_columns(pl.lit(None, dtype=pl.UInt64 if c in ("tunnel_id_c2s", "tunnel_changes")
                                              else pl.String).alias(c))
    df = user_keys(flows, by, mapping).filter(pl.col("user").is_not_null())
    if df.height == 0:
        return pl.DataFrame(schema=USERS_SCHEMA)
    # Merge each user's flow lifetimes: sorted by start, a flow opens a new block of activity
    # when it starts after every earlier flow ended; a block after a silence longer than
    # session_gap_s opens a new session.
    df = df.sort(["user", "first_ts", "last_ts"])
    ended = pl.col("last_ts").cum_max().shift(1).over("user")
    df = df.with_columns(ended.alias("_ended"))
    df = df.with_columns(
        (pl.col("_ended").is_null() | (pl.col("first_ts") > pl.col("_ended"))).alias("_new_block"),
        (pl.col("first_ts") - pl.col("_ended")).alias("_silence"))
    df = df.with_columns(pl.col("_new_block").cum_sum().over("user").alias("_block"))
    blocks = (df.group_by(["user", "_block"])
              .agg(pl.col("first_ts").min().alias("start"), pl.col("last_ts").max().alias("end"),
                   pl.col("_silence").first().alias("silence"))
              .with_columns((pl.col("silence") > session_gap_s).fill_null(False).alias("gap")))
    per_block = blocks.group_by("user").agg(
        (pl.col("end") - pl.col("start")).sum().alias("active_s"),
        pl.col("gap").sum().cast(pl.UInt64).alias("gaps"),
        pl.col("silence").filter(pl.col("gap")).mean().alias("gap_mean_s"))
    bearer = pl.col("tunnel_server_addr") + pl.lit("/") + pl.col("tunnel_id_c2s").cast(pl.String)
    per_user = df.group_by("user").agg(
        pl.col("key").first(),
        pl.len().cast(pl.UInt64).alias("flows"),
        pl.col("c2s_payload_bytes").sum().cast(pl.UInt64).alias("c2s_bytes"),
        pl.col("s2c_payload_bytes").sum().cast(pl.UInt64).alias("s2c_bytes"),
        pl.col("first_ts").min(), pl.col("last_ts").max(),
        pl.col("server_addr").n_unique().cast(pl.UInt64).alias("servers"),
        bearer.drop_nulls().n_unique().cast(pl.UInt64).alias("bearers"),
        pl.col("tunnel_changes").sum().cast(pl.UInt64).alias("handovers"))
    out = (per_user.join(per_block, on="user", how="left")
           .with_columns((pl.col("c2s_bytes") + pl.col("s2c_bytes")).alias("bytes"),
                         (pl.col("last_ts") - pl.col("first_ts")).alias("span_s"),
                         (pl.col("gaps") + 1).alias("sessions"))
           .sort(["first_ts", "user"]))
    return out.select([pl.col(c).cast(t) for c, t in USERS_SCHEMA.items()])


def read_flows(results: list[str | os.PathLike]) -> pl.DataFrame:
    """The flows (checked: hsrtcp.results) of one or more results directories."""
    from hsrtcp.results import ResultsDir
    frames = []
    for r in results:
        rd = ResultsDir(r)
        frames.append(rd.read("flows", _FLOW_COLUMNS, optional=_TUNNEL_COLUMNS))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def write(table: pl.DataFrame, out_dir: str | os.PathLike) -> Path:
    """``users.parquet`` in ``out_dir`` (atomic, with the schema version in its metadata; a
    manifest of its own, so an analysis's tables there are left alone)."""
    from hsrtcp.output import OutputSet
    with OutputSet(out_dir, manifest=MANIFEST, replaces=frozenset()) as output:
        with output.file("users.parquet") as p:
            table.write_parquet(p, metadata={"hsrtcp.schema": "users", "hsrtcp.schema_version": str(SCHEMA_VERSION)})
        return Path(output.commit()[0])
