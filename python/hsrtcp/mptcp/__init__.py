"""Seed 004's MPTCP instance metrics (S4 §IV-A) from hsrtcp's tables.

An *instance* is one MPTCP transfer over N carriers and, at the same time, one single-path
TCP transfer on each carrier (the lab's ``conjunction`` flow type, docs/mptcp.md). From the
flows/series/events tables of the sender (server) capture it computes:

- M29 conjunction efficiency U_c, M30 total utilization U_t (:mod:`.utilization`),
- M32 subflow utilization R'_n / R_n (:mod:`.utilization`),
- M31 instance classes with a configurable barrier (:mod:`.classes`),
- M33 subflow degradation by A25's rule, with its onset (:mod:`.degradation`),
- M34 k_t between loss events, A26 primary and literal (:mod:`.kt`),

and joins the kernel's MPTcpExt counters the lab recorded (:mod:`.kernel`). Use
:func:`instance_metrics` (polars frames) or ``hsrtcp mptcp`` (Parquet + a printed summary);
the tables are specified in docs/formats/mptcp-metrics.md.
"""

from hsrtcp.mptcp.metrics import SCHEMA_VERSION, TABLES, instance_metrics, write

__all__ = ["SCHEMA_VERSION", "TABLES", "instance_metrics", "write"]
