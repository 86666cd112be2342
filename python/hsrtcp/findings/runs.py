"""The runs of a paired campaign: which arm, scenario and trip seed each bundle is.

A campaign with ``[[variants]]`` (hsrtcp.lab.campaign) writes, in every bundle's
``manifest.json``, the variant (name, cc, sysctls, route knobs, the scenario entry's label
and window start) and the repetition; the compiled scenario's seed is in ``seeds.scenario``.
Two runs of the same scenario label and trip seed ran on the same emulated path: they are a
pair. Bundles of a campaign without variants are read too, the arm being their cc.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError

#: one row per bundle
SCHEMA = {"run_id": pl.String, "arm": pl.String, "cc": pl.String, "scenario": pl.String,
          "start_s": pl.Float64, "seed": pl.Int64, "repetition": pl.Int64, "status": pl.String,
          "campaign": pl.String, "bundle": pl.String}


def read_runs(runs_dir: str | Path) -> pl.DataFrame:
    """Every bundle under ``runs_dir`` (``<run_id>/manifest.json``; partial directories are
    skipped). A manifest that is not JSON is an input error naming the file."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise InputError(f"{runs_dir}: no such runs directory")
    rows = []
    for m in sorted(runs_dir.glob("*/manifest.json")):
        if m.parent.name.startswith("."):
            continue
        try:
            man = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{m}: not a readable bundle manifest ({exc})") from exc
        var = man.get("variant") or {}
        scen = man.get("scenario") or {}
        rows.append({
            "run_id": man.get("run_id", m.parent.name),
            "arm": var.get("name") or man.get("cc"),
            "cc": man.get("cc"),
            "scenario": var.get("scenario_label") or scen.get("name"),
            "start_s": var.get("scenario_start_s"),
            "seed": (man.get("seeds") or {}).get("scenario"),
            "repetition": man.get("repetition"),
            "status": man.get("status"),
            "campaign": man.get("campaign"),
            "bundle": str(m.parent),
        })
    if not rows:
        raise InputError(f"{runs_dir}: no bundles (<run_id>/manifest.json) found")
    return pl.DataFrame(rows, schema=SCHEMA, orient="row").sort("scenario", "seed", "arm")
