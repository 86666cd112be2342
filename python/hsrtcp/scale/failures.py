"""The ``failures`` table of a corpus run: ``RESULTS/failures.parquet`` (docs/scale.md).

One row per problem, so a corpus run goes on and the user sees at the end what to fix:

- ``input``: the input id (its partition ``input=<id>``, when one was written);
- ``source``: the file (or files) concerned;
- ``kind``: ``unreadable`` (no partition: the input could not be analyzed at all),
  ``broken`` (the capture stopped at an error; the flows read before it are in the
  partition), ``context`` (a radio log / manifest problem; flows kept), ``duplicate``
  (the same content as another input, which is analyzed instead), ``internal``
  (a bug or a worker that died: please report);
- ``reason``: the message, naming file and position;
- ``offset``: the byte offset in the file where reading stopped, null when not known.

The table is rebuilt at the end of every run from the partitions' records (so skipped
inputs keep their rows) and this run's unreadable and duplicate inputs.
"""

from __future__ import annotations

import os
import re

_OFFSET = re.compile(r"\bat byte (\d+)")
COLUMNS = ("input", "source", "kind", "reason", "offset")


def offset_of(message: str) -> int | None:
    """The byte offset a core error message names ("... at byte 574 ..."), or None."""
    m = _OFFSET.search(message)
    return int(m.group(1)) if m else None


def row(input_id: str, source: str, kind: str, reason: str) -> dict:
    return {"input": input_id, "source": source, "kind": kind, "reason": reason, "offset": offset_of(reason)}


def write_failures(results: str, rows: list[dict]) -> str:
    """Write ``failures.parquet`` (atomically; an empty table when nothing failed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("input", pa.string()), ("source", pa.string()), ("kind", pa.string()),
                        ("reason", pa.string()), ("offset", pa.int64())])
    table = pa.Table.from_pylist(sorted(rows, key=lambda r: (r["input"], r["kind"], r["reason"])), schema=schema)
    from hsrtcp.atomic import write_file

    return write_file(os.path.join(results, "failures.parquet"), lambda tmp: pq.write_table(table, tmp))
