"""The kernel's own MPTCP counters of a lab run (``kernel/nstat-<side>.json`` of a bundle).

Each run has new namespaces, so the absolute MPTcpExt* values the agents record at the end
are that run's counts. They witness what the captures show: joins (server MPJoinSynRx /
MPJoinAckRx = joined subflows), and data-level retransmissions (server MPTCPRetrans:
reinjections and data-level re-sends; client DuplicateData: data that arrived twice).
"""

from __future__ import annotations

from hsrtcp.schemas import MPTCP_KERNEL_COUNTERS as COUNTERS  # (defined there, below hsrtcp.results)


def columns(kernel: dict) -> dict[str, int | None]:
    """The counters of :data:`COUNTERS`; null when the bundle has no such record."""
    return {col: (kernel.get(side) or {}).get(name) for col, (side, name) in COUNTERS.items()}
