"""Radio/GPS context of flows: reading radio and position logs, handoffs (M23, M25), flow
classes (M21, A2), suspensions (M24, A12), signal categories (M26, M27), coverage (M28),
U-rate (M22) and the labels of each analyzed input. docs/context.md teaches it; the tables
are in docs/formats/{radio,handoffs,context,suspensions,coverage,labels}.md.

Imported only when a run involves a radio log, a bundle or labels (the plain analysis path
stays free of it).
"""

from hsrtcp.context.classes import flow_context, u_rate
from hsrtcp.context.coverage import coverage
from hsrtcp.context.enrich import CONTEXT_TABLES, write_context
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import RadioLog, read_radio
from hsrtcp.context.schema import RadioLogError
from hsrtcp.context.suspension import suspensions

__all__ = ["CONTEXT_TABLES", "RadioLog", "RadioLogError", "coverage", "flow_context", "handoffs",
           "read_radio", "suspensions", "u_rate", "write_context"]
