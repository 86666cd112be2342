"""Handoffs: every serving-cell change of a carrier in the radio log (M23, M25), with its
3GPP type and the network generations on both sides.

A handoff is a sample whose serving cell (``rat``, ``lac``, ``cid``, ``arfcn``) or network
generation differs from the carrier's previous sample with a known cell (radio.md): its time
is that sample's ``ts``. Samples without a cell (``cid`` null: no service, or a GPS-only row)
are skipped, so a phone that loses service in cell A and comes back in cell B makes one
handoff A → B, at the first sample in B. A change of generation alone is a handoff too: a
G-NetTrack log going from ``LTE`` to ``5G`` on the same LTE cell has had an NR secondary
cell added (5G NSA).

- ``system``: ``inter`` when the RAT or the generation changes (M25, e.g. LTE → EDGE at a
  coverage hole, 4G → 5G NSA), ``intra`` otherwise.
- ``type`` (:data:`HANDOFF_TYPES`): what 3GPP calls it, as far as the log can tell. A cell
  log gives ``inter_rat`` for a change of RAT or generation, ``mcg_ho`` for a change of the
  LTE anchor cell in 5G NSA, ``sa_ho`` for an NR cell change in 5G SA, ``intra_freq`` /
  ``inter_freq`` when it has the channel numbers, else ``intra_rat``. RRC signalling
  (:mod:`hsrtcp.context.rrc`) also tells SCG additions, modifications and releases and
  re-establishments apart, the cell the command names (``target_pci``, ``target_arfcn``)
  and the execution time (``execution_s``: command to completion).
- ``ping_pong``: the handoff returns to the cell (and generation) the previous handoff left,
  at most :data:`PING_PONG_S` after it (A → B → A: the second is a ping-pong; in A → B → A → B
  the second and the third are). This is the lab generator's notion (scenario.md §3: back to
  the old cell 60–400 m later, i.e. ≤ 5 s at 300 km/h, ≤ 9 s at 160 km/h).
- ``interval_s``: time since the previous handoff of the same carrier (M23), null for the
  carrier's first handoff in the log.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.schemas import HANDOFF_SCHEMA  # (defined there, below hsrtcp.results)

PING_PONG_S = 10.0

HANDOFF_TYPES = ("intra_freq", "inter_freq", "intra_rat", "inter_rat", "mcg_ho", "sa_ho", "scg_add",
                 "scg_modify", "scg_release", "reestablishment")


_CELL = ("rat", "lac", "cid", "arfcn", "generation")


def _differs(a: str, b: str) -> pl.Expr:
    return pl.col(a).ne_missing(pl.col(b))


def cell_type() -> pl.Expr:
    """The 3GPP type of a cell-log change (columns old_/new_ rat, generation, arfcn)."""
    inter = _differs("old_rat", "new_rat") | _differs("old_generation", "new_generation")
    both = pl.col("old_arfcn").is_not_null() & pl.col("new_arfcn").is_not_null()
    return (pl.when(inter).then(pl.lit("inter_rat"))
            .when(pl.col("new_generation") == "5G NSA").then(pl.lit("mcg_ho"))
            .when(pl.col("new_generation") == "5G SA").then(pl.lit("sa_ho"))
            .when(both & (pl.col("old_arfcn") == pl.col("new_arfcn"))).then(pl.lit("intra_freq"))
            .when(both).then(pl.lit("inter_freq"))
            .otherwise(pl.lit("intra_rat")))


def finish(h: pl.DataFrame, before: pl.DataFrame | None = None) -> pl.DataFrame:
    """``system``, ``ping_pong`` and ``interval_s`` of handoff rows (any source), sorted by run,
    carrier and time, in the columns of :data:`HANDOFF_SCHEMA` (missing ones null).

    ``before``: finished rows of earlier handoffs (a carrier's last is enough), each earlier
    than ``h``'s of its carrier: ``interval_s`` and ``ping_pong`` count from them; they are
    not returned (the handoffs of a log finished block by block, hsrtcp.context.stream)."""
    h = h.with_columns([pl.lit(None, t).alias(c) for c, t in HANDOFF_SCHEMA.items() if c not in h.columns])
    if before is not None and not before.is_empty():
        h = pl.concat([before.select(list(HANDOFF_SCHEMA)).with_columns(pl.lit(True).alias("_before")),
                       h.with_columns(pl.lit(False).alias("_before"))], how="diagonal_relaxed")
    g = [pl.col("run_id").fill_null(""), "carrier"]
    h = h.sort(pl.col("run_id").fill_null(""), "carrier", "ts", maintain_order=True)
    back = pl.lit(True)
    for c in _CELL:
        back = back & pl.col(f"new_{c}").eq_missing(pl.col(f"old_{c}").shift(1).over(g))
    interval = pl.col("ts") - pl.col("ts").shift(1).over(g)
    h = h.with_columns(
        pl.when(_differs("old_rat", "new_rat") | _differs("old_generation", "new_generation"))
        .then(pl.lit("inter")).otherwise(pl.lit("intra")).alias("system"),
        interval.alias("interval_s"),
    ).with_columns((back & (pl.col("interval_s") <= PING_PONG_S)).fill_null(False).alias("ping_pong"))
    if "_before" in h.columns:
        h = h.filter(~pl.col("_before"))
    return h.select([pl.col(c).cast(t) for c, t in HANDOFF_SCHEMA.items()])


def handoffs(radio: pl.DataFrame) -> pl.DataFrame:
    """One row per serving-cell change (columns: :data:`HANDOFF_SCHEMA`, docs/formats/handoffs.md).

    ``radio``: normalized rows in time order per carrier; an optional ``run_id`` column keeps
    the logs of several runs apart."""
    df = radio if "run_id" in radio.columns else radio.with_columns(pl.lit(None, pl.String).alias("run_id"))
    for c, t in (("arfcn", pl.Int64), ("generation", pl.String)):
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, t).alias(c))
    # only the columns a handoff row takes: the sort below copies what it is given (issue 32)
    keep = ("run_id", "carrier", "ts", *_CELL, "source", "line")
    df = df.select(c for c in keep if c in df.columns)
    df = df.filter(pl.col("cid").is_not_null() & pl.col("carrier").is_not_null())
    if df.is_empty():
        return pl.DataFrame(schema=HANDOFF_SCHEMA)
    g = [pl.col("run_id").fill_null(""), "carrier"]
    df = df.sort(*g, "ts", maintain_order=True)
    df = df.with_columns(*(pl.col(c).shift(1).over(g).alias(f"old_{c}") for c in _CELL))
    changed = pl.col("old_cid").is_not_null()
    moved = pl.lit(False)
    for c in _CELL:
        moved = moved | pl.col(c).ne_missing(pl.col(f"old_{c}"))
    h = df.filter(changed & moved).rename({c: f"new_{c}" for c in _CELL})
    return finish(h.with_columns(cell_type().alias("type")))
