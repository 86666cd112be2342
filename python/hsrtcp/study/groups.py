"""Flow classes and ``--by`` dimensions: what each study row is grouped by.

Classes come from ``context.flow_class`` (docs/metrics.md M21 with A2's bands; the context layer
decides them, docs/formats/context.md). The study adds seed 000's coarser grouping of
Tables VII-IX: ``high_1_16`` = ``high_1_8`` ∪ ``high_9_16`` (280-310 km/h with 1-16
handoffs), and ``all``. A flow therefore sits in several class groups: its own class, the
union class when it applies, and ``all`` (:func:`explode_classes`).

Dimensions (``--by``): any column of the study frame: flows-derived (``result``,
``capture``, ...), context (``carrier``, ``speed_class``, ``signal_s3`` ...), labels
(``cc``, ``scenario``, ``flow_type``, ``flow_size_bytes`` ...) and the study's own
``workload`` (the object size as "50KB" / "2MB" when the workload is sized, else the flow
type, e.g. "duration"). A labels column whose name a flows or context column already has,
or one the study computes or writes (:data:`COMPUTED`, :data:`RESERVED`), is kept as ``labels.<name>`` (a context column
as ``context.<name>``); the study's own columns (:data:`RESERVED`) are never dimensions.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.schemas import class_rank  # (with the one CLASS_ORDER and FLOW_CLASSES)
from hsrtcp.study.load import Results, join
from hsrtcp.study.samples import FLOW_COLUMNS, SAMPLE_COLUMNS
from hsrtcp.study.stats import Cell

#: what the study computes into its frame (a context or labels column of one of these names, or
#: of RESERVED's, is kept as ``context.<name>`` / ``labels.<name>``, as one a flows column has)
COMPUTED = (*FLOW_COLUMNS, "failed", "failed_value", "workload", "fine_class")
#: columns the study writes itself (a cell's statistics, docs/formats/study.md; the 1-s samples;
#: the per-flow values): never a dimension
RESERVED = ("table", "metric", "unit", "statistic", *Cell.__dataclass_fields__, *SAMPLE_COLUMNS,
            *(c for c in COMPUTED if c != "workload"))

#: seed 000's classes of Tables VII-IX: always given a row, with "no flows" when empty
SEED_CLASSES = ("static", "high_0", "high_1_16")
#: readable names of the class groups, printed beside the ids (the speed bands are M21/A2's)
CLASS_NAMES = {
    "static": "standing (<= 5 km/h), no handoff",
    "low": "5-150 km/h, no handoff",
    "high_0": "280-310 km/h, no handoff",
    "high_1_16": "280-310 km/h, 1-16 handoffs",
    "high_1_8": "280-310 km/h, 1-8 handoffs",
    "high_9_16": "280-310 km/h, 9-16 handoffs",
    "high_17+": "280-310 km/h, 17 or more handoffs",
    "other": "in no seed class (speed outside the bands, handoffs while slow, or a RAT change)",
    "unknown": "not classed (no radio log, or a gap in it)",
    "all": "all flows",
}
#: classes that count as usable for the U-rate (M22, A2: "flows in no class are excluded")
USABLE_CLASSES = ("static", "low", "high_0", "high_1_8", "high_9_16", "high_17+")
#: columns the contract promises in context / labels: asking --by for one of them when the
#: table is absent gives a null dimension and a note, not an error
CONTRACT_DIMENSIONS = ("run_id", "carrier", "speed_class", "flow_class", "rats", "rat_change", "signal_s3",
                       "handoffs", "handoffs_intra", "handoffs_inter", "source", "capture", "client_capture",
                       "server_capture", "scenario", "cc", "flow_type", "flow_size_bytes",
                       "flow_duration_s", "repetition", "campaign", "mptcp")

NO_CONTEXT_REASON = "no radio log (results analyzed without context)"


def seed_class_groups(frame: pl.DataFrame, keys: list[str]) -> list[tuple]:
    """The group keys seed 000's classes get even without a flow when ``flow_class`` leads
    ``keys``: each class with every combination of the other keys that ``frame`` holds (nulls
    when it holds none), combinations in their first order."""
    if not keys or keys[0] != "flow_class":
        return []
    rest = frame.select(keys[1:]).unique(maintain_order=True).rows() if len(keys) > 1 else [()]
    if not rest:
        rest = [(None,) * (len(keys) - 1)]
    return [(cls, *combo) for combo in rest for cls in SEED_CLASSES]


def attach_context(conns: pl.DataFrame, res: Results) -> pl.DataFrame:
    """Join context (by result, flow_id) and labels (by result, input_id or run_id) to the connections;
    flows without a context row are classed ``unknown`` with the reason."""
    out = conns
    if res.context is not None:
        ctx = res.context
        clash = [c for c in ctx.columns if c in {*out.columns, *COMPUTED, *RESERVED} and c not in ("result", "flow_id")]
        ctx = ctx.rename({c: f"context.{c}" for c in clash})
        out = join(out, ctx, ["result", "flow_id"], "left", res.one_result)
    for name, dtype in (("flow_class", pl.String), ("class_reason", pl.String), ("run_id", pl.String)):
        if name not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=dtype).alias(name))
    with_ctx = res.with_context
    out = out.with_columns(
        pl.when(pl.col("flow_class").is_null() & ~pl.col("result").is_in(with_ctx))
        .then(pl.lit(NO_CONTEXT_REASON))
        .when(pl.col("flow_class").is_null())
        .then(pl.lit("no context row for this flow"))
        .otherwise(pl.col("class_reason")).alias("class_reason"),
        pl.col("flow_class").fill_null("unknown"),
    )
    if res.labels is not None:
        # context rows name their input (input_id, and run_id for bundles): join on input_id
        # when both tables have it, else on run_id
        labels = res.labels
        key = "input_id" if "input_id" in labels.columns and "input_id" in out.columns else "run_id"
        if key in labels.columns and labels.schema[key] != out.schema[key]:
            labels = labels.with_columns(pl.col(key).cast(out.schema[key], strict=False))
        clash = [c for c in labels.columns if c in {*out.columns, *COMPUTED, *RESERVED} and c not in ("result", key)]
        labels = labels.rename({c: f"labels.{c}" for c in clash})
        if key not in labels.columns:
            labels = labels.with_columns(pl.lit(None, dtype=out.schema[key]).alias(key))
        by_key = join(out.filter(pl.col(key).is_not_null()), labels, ["result", key], "left", res.one_result)
        # no key (no context for this flow): a directory with a single labels row is one input
        single = labels.filter(pl.len().over("result") == 1).drop(key)
        no_key = out.filter(pl.col(key).is_null()).join(single, on="result", how="left")
        out = pl.concat([by_key, no_key], how="diagonal_relaxed")
    if "flow_size_bytes" in out.columns:
        size = pl.col("flow_size_bytes").cast(pl.Int64, strict=False)
        flow_type = pl.col("flow_type").cast(pl.String) if "flow_type" in out.columns else pl.lit(None, pl.String)
        out = out.with_columns(pl.coalesce(_human_size(size), flow_type).alias("workload"))
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.String).alias("workload"))
    return out.sort("result", "flow_id")


def _human_size(size: pl.Expr) -> pl.Expr:
    """50000 -> "50KB", 2000000 -> "2MB" (decimal units, as the campaign files write them)."""
    return (pl.when(size.is_null()).then(pl.lit(None, pl.String))
            .when((size % 1_000_000 == 0) & (size > 0)).then((size // 1_000_000).cast(pl.String) + "MB")
            .when((size % 1000 == 0) & (size > 0)).then((size // 1000).cast(pl.String) + "KB")
            .otherwise(size.cast(pl.String) + "B"))


def flows_dimensions(frame: pl.DataFrame, flows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Bring the flows columns named in ``by`` (and not yet in the study frame) from each
    connection's row: the matched row, or the single-capture row."""
    wanted = [b.strip() for b in by if b.strip() in flows.columns and b.strip() not in frame.columns]
    if not wanted:
        return frame
    return frame.join(flows.select("result", "flow_id", *wanted), on=["result", "flow_id"], how="left")


#: the key columns of a per-flow row: a ``--by`` naming one of them groups by it, never adds it twice
ROW_KEYS = ("result", "flow_id", "flow_class")


def row_columns(dims) -> list[str]:
    """The key columns then the ``--by`` dimensions, each name once (``--by result`` is a key)."""
    return list(dict.fromkeys([*ROW_KEYS, *dims]))


def resolve_by(frame: pl.DataFrame, by: list[str], available: list[str] | None = None,
               ) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Check the ``--by`` names against the study frame. Returns the frame (contract columns
    absent from this data added as nulls), the dimension names and notes. Raises
    ``ValueError`` naming the unknown dimension and the available ones."""
    notes = []
    dims = []
    for name in by:
        name = name.strip()
        if not name or name in dims:
            continue
        if name == "flow_class":
            raise ValueError("--by flow_class: the tables are always per flow class")
        if name in RESERVED:
            raise ValueError(f"--by {name}: a column the study writes itself ({', '.join(RESERVED)}); "
                             "a labels or context column of that name cannot be a dimension: rename it")
        if name not in frame.columns:
            if name in CONTRACT_DIMENSIONS:
                frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(name))
                notes.append(f"--by {name}: no context/labels table carries it here; the dimension is null")
            else:
                avail = available or sorted(c for c in frame.columns if not c.startswith("_"))
                raise ValueError(f"--by {name}: no such column; available: {', '.join(avail)}")
        dims.append(name)
    return frame, dims, notes


def explode_classes(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per (flow, class group): its class, ``high_1_16`` for 1-16 handoffs at high
    speed, and ``all``; the fine class stays in ``fine_class``."""
    fine = pl.col("flow_class")
    groups = pl.concat_list(
        fine,
        pl.when(fine.is_in(["high_1_8", "high_9_16"])).then(pl.lit("high_1_16")),
        pl.lit("all"),
    ).list.drop_nulls()
    return (frame.with_columns(fine.alias("fine_class"), groups.alias("flow_class"))
            .explode("flow_class"))

