"""The labels table: one row per analyzed input (a run bundle, a capture, or a client/server
pair) with what the study groups by — from the bundle's manifest.json (docs/formats/bundle.md)
when the input is a bundle, plus the user's ``--label KEY=VALUE`` pairs (string columns)."""

from __future__ import annotations

import polars as pl

from hsrtcp.schemas import LABEL_SCHEMA  # (defined there, below hsrtcp.results)


def parse_labels(items) -> dict[str, str]:
    """``["site=Beijing", "train=G1"]`` -> dict; raises ValueError (a usage error)."""
    out: dict[str, str] = {}
    for it in items or ():
        if "=" not in it or not it.split("=", 1)[0].strip():
            raise ValueError(f"--label {it!r}: expected KEY=VALUE")
        k, v = it.split("=", 1)
        k = k.strip()
        if k in LABEL_SCHEMA:
            raise ValueError(f"--label {k}: a built-in labels column (choose another name)")
        out[k] = v
    return out


def manifest_labels(m: dict | None) -> dict:
    """The labels a bundle's manifest gives (missing keys are null)."""
    if not m:
        return {}
    flow = m.get("flow") or {}
    scen = m.get("scenario") or {}

    def num(x, t):
        try:
            return None if x is None else t(x)
        except (TypeError, ValueError):
            return None

    return {"run_id": m.get("run_id"), "scenario": scen.get("name") if isinstance(scen, dict) else None,
            "cc": m.get("cc"), "flow_type": flow.get("type"),
            "flow_size_bytes": num(flow.get("size_bytes"), int),
            "flow_duration_s": num(flow.get("duration_s"), float),
            "repetition": num(m.get("repetition"), int),
            "campaign": None if m.get("campaign") is None else str(m.get("campaign")),
            "mptcp": m.get("mptcp") if isinstance(m.get("mptcp"), bool) else None}


def labels_table(rows: list[dict], user: dict[str, str]) -> pl.DataFrame:
    schema = dict(LABEL_SCHEMA, **{k: pl.String for k in user})
    full = [{**{k: r.get(k) for k in LABEL_SCHEMA}, **user} for r in rows]
    return pl.DataFrame(full, schema=schema) if full else pl.DataFrame(schema=schema)
