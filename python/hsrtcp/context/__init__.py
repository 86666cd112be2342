"""Radio/GPS context of flows: reading radio and position logs, handoffs (M23, M25), flow
classes (M21, A2), suspensions (M24, A12), signal categories (M26, M27), coverage (M28),
U-rate (M22) and the labels of each analyzed input. docs/context.md teaches it; the tables
are in docs/formats/{radio,handoffs,context,suspensions,coverage,labels}.md.

Imported only when a run involves a radio log, a bundle or labels (the plain analysis path
stays free of it).
"""

from hsrtcp.context.classes import flow_context, u_rate
from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import RadioLog, read_radio
from hsrtcp.context.schema import RadioLogError
from hsrtcp.context.suspension import suspensions

__all__ = ["CONTEXT_TABLES", "RadioLog", "RadioLogError", "coverage", "flow_context", "handoffs",
           "read_radio", "suspensions", "u_rate", "write_context"]


def __getattr__(name: str):
    # enrich (the analysis side: pairs, the lab's ground truth) loads on first use, so that
    # reading a radio log does not import it: hsrtcp.lab.scenario reads logs, and
    # hsrtcp.lab.truth, which enrich calls, needs hsrtcp.lab.scenario (docs/design.md, "Layers")
    if name in ("CONTEXT_TABLES", "write_context"):
        from hsrtcp.context.enrich import CONTEXT_TABLES, write_context

        return {"CONTEXT_TABLES": CONTEXT_TABLES, "write_context": write_context}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
