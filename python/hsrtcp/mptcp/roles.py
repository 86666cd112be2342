"""Which flow of an instance is which: MPTCP subflow or single-path flow, on which path.

With the core's MPTCP columns (``flows.mptcp_token``, ``flows.mptcp_subflow``, contract in
docs/formats/flows.md) subflows are grouped by token. Captures without them (an older
core, or a capture whose handshakes were missed) fall back to the lab's addressing: the
phone's address on path p is ``10.1.<p>.1`` (docs/lab.md) and ``flows.mptcp`` says whether a
connection carried MPTCP options.
"""

from __future__ import annotations

import re

import polars as pl

_LAB_ADDRESS = re.compile(r"^10\.1\.(\d+)\.1$")


def lab_path(address: str | None) -> int | None:
    """Path number p of the lab's phone address ``10.1.<p>.1``; None for any other address."""
    m = _LAB_ADDRESS.match(address or "")
    return int(m.group(1)) if m else None


def assign(flows: pl.DataFrame) -> pl.DataFrame:
    """Download flows of one capture with ``role`` (``subflow`` / ``single_path``), ``path``,
    ``subflow`` (index within its MPTCP connection), ``token`` (null in the fallback) and
    ``mapping`` (``token`` or ``address``).

    Paths come from the lab address; for a non-lab address a subflow's path is its index + 1
    and a single-path flow has no path (it cannot be paired with a carrier and is dropped).
    """
    has_tokens = "mptcp_token" in flows.columns and flows["mptcp_token"].drop_nulls().len() > 0
    mptcp = pl.col("mptcp_token").is_not_null() if has_tokens else pl.col("mptcp").fill_null(False)
    # downloads; a subflow that never carried data (a backup one) is still a subflow, R' = 0
    f = flows.filter((pl.col("data_dir") == "s2c") | (mptcp & pl.col("data_dir").is_null()))
    path = pl.col("client_addr").map_elements(lab_path, return_dtype=pl.Int64)
    if has_tokens:
        is_sub = pl.col("mptcp_token").is_not_null()
        f = f.with_columns(
            role=pl.when(is_sub).then(pl.lit("subflow")).otherwise(pl.lit("single_path")),
            token=pl.col("mptcp_token").cast(pl.Int64),
            subflow=pl.col("mptcp_subflow").cast(pl.Int64),
            mapping=pl.lit("token"),
        )
    else:
        is_sub = pl.col("mptcp").fill_null(False)
        f = f.sort("first_ts").with_columns(
            role=pl.when(is_sub).then(pl.lit("subflow")).otherwise(pl.lit("single_path")),
            token=pl.lit(None, dtype=pl.Int64),
            mapping=pl.lit("address"),
        )
        # subflow index by SYN time among the MPTCP flows, as the contract numbers them
        f = f.with_columns(subflow=pl.when(is_sub).then(pl.col("first_ts").rank("ordinal").over("role") - 1)
                           .cast(pl.Int64))
    f = f.with_columns(path=path)
    f = f.with_columns(path=pl.when(pl.col("path").is_null() & (pl.col("role") == "subflow"))
                       .then(pl.col("subflow") + 1).otherwise(pl.col("path")))
    return f.filter(pl.col("path").is_not_null())
