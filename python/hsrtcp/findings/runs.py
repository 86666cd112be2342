"""The runs of a paired campaign: which arm, scenario and trip seed each bundle is.

A campaign with ``[[variants]]`` (hsrtcp.lab.campaign) writes, in every bundle's
``manifest.json``, the variant (name, cc, sysctls, route knobs, the scenario entry's label
and window start) and the repetition; the compiled scenario's seed is in ``seeds.scenario``.
Two runs of the same scenario label and trip seed ran on the same emulated path: they are a
pair. Bundles of a campaign without variants are read too, the arm being their cc.

Reproducibility (docs/findings.md, "Regenerate"): :func:`read_campaigns` refuses runs of one
scenario label and trip seed whose compiled paths differ (``scenario.compiled_sha256``: two
versions of a scenario would be paired as if they were one), and marks the runs a campaign
recorded as ``noisy`` (above its load bound, docs/lab.md), which are left out unless asked
for. :func:`declared_checks` says which checks every run named before it ran
(``[checks]`` of the campaign file); ``python -m hsrtcp.findings.runs RUNS...`` lists the
bundles a study or findings should read.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import polars as pl

from hsrtcp.bundle import MANIFEST, manifest, run_bundles
from hsrtcp.errors import ExitCode, InputError

#: one row per bundle
SCHEMA = {"run_id": pl.String, "arm": pl.String, "cc": pl.String, "scenario": pl.String,
          "start_s": pl.Float64, "seed": pl.Int64, "repetition": pl.Int64, "status": pl.String,
          "campaign": pl.String, "bundle": pl.String, "scenario_sha256": pl.String, "noisy": pl.Boolean,
          "load_1min": pl.Float64}

#: the status of a noisy run left out (its row stays, so arms.csv shows it)
NOISY = "noisy"


def _manifests(runs_dir: Path) -> list[tuple[Path, dict]]:
    if not runs_dir.is_dir():
        raise InputError(f"{runs_dir}: no such runs directory")
    out = [(b / MANIFEST, manifest(b)) for b in run_bundles(runs_dir)]
    if not out:
        raise InputError(f"{runs_dir}: no bundles (<run_id>/manifest.json) found")
    return out


def read_runs(runs_dir: str | Path) -> pl.DataFrame:
    """Every bundle under ``runs_dir`` (``<run_id>/manifest.json``; partial directories are
    skipped). A manifest that is not JSON is an input error naming the file. ``noisy`` is
    null for a bundle from before the lab recorded the host's load."""
    rows = []
    for m, man in _manifests(Path(runs_dir)):
        var = man.get("variant") or {}
        scen = man.get("scenario") or {}
        host = man.get("host") if isinstance(man.get("host"), dict) else {}
        loads = [x for x in (host.get("loadavg_1min_start"), host.get("loadavg_1min_end")) if x is not None]
        compiled = scen.get("compiled_sha256") or ((man.get("config") or {}).get("scenario") or {}).get("sha256")
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
            "scenario_sha256": compiled,
            "noisy": host.get("noisy") if isinstance(host.get("noisy"), bool) else None,
            "load_1min": max(loads) if loads else None,
        })
    return pl.DataFrame(rows, schema=SCHEMA, orient="row").sort("scenario", "seed", "arm")


def check_scenario_versions(runs: pl.DataFrame) -> None:
    """Runs of one scenario label, window and trip seed are paired as one emulated path: an
    input error when their compiled paths differ, naming both hashes and a run of each."""
    known = runs.filter(pl.col("scenario_sha256").is_not_null())
    for key, g in known.group_by(["scenario", "start_s", "seed"], maintain_order=True):
        versions = g.unique("scenario_sha256", keep="first", maintain_order=True)
        if versions.height > 1:
            a, b = versions.row(0, named=True), versions.row(1, named=True)
            raise InputError(
                f"scenario {key[0]!r} seed {key[2]} ran as two different compiled paths: sha256 "
                f"{a['scenario_sha256'][:12]} ({a['bundle']}) and {b['scenario_sha256'][:12]} ({b['bundle']}); "
                "their runs would be paired as one path. Run every campaign of the study with the same "
                "scenario files (a changed scenario is a new versioned file and a new runs directory).")


def read_campaigns(dirs, include_noisy: bool = False) -> tuple[pl.DataFrame, list[str]]:
    """The bundles of several runs directories read as one study (a campaign and, e.g., its
    A/A campaign): run ids unique, one compiled path per scenario and trip seed
    (:func:`check_scenario_versions`); a noisy run gets status ``noisy`` (left out of its
    pairs) unless ``include_noisy``. Returns the runs and notes saying what was left out."""
    runs = pl.concat([read_runs(d) for d in dirs])
    dup = runs.filter(pl.col("run_id").is_duplicated())["run_id"].unique().to_list()
    if dup:
        raise InputError(f"run ids in more than one runs directory (their analyses would collide): "
                         f"{', '.join(sorted(dup)[:5])}")
    check_scenario_versions(runs)
    notes = []
    noisy = runs.filter(pl.col("noisy").fill_null(False) & (pl.col("status") == "ok"))
    if noisy.height:
        what = ", ".join(noisy["run_id"].to_list()[:20]) + (" ..." if noisy.height > 20 else "")
        if include_noisy:
            notes.append(f"{noisy.height} noisy run(s) (above their campaign's load bound) kept as asked: {what}")
        else:
            runs = runs.with_columns(pl.when(pl.col("run_id").is_in(noisy["run_id"].to_list()))
                                     .then(pl.lit(NOISY)).otherwise(pl.col("status")).alias("status"))
            notes.append(f"{noisy.height} noisy run(s) (above their campaign's load bound) left out "
                         f"(--include-noisy keeps them): {what}")
    unhashed = runs.filter(pl.col("scenario_sha256").is_null()).height
    if unhashed:
        notes.append(f"{unhashed} run(s) recorded no compiled path hash (bundles from before it was recorded): "
                     "that their pairs ran the same path is not checked")
    unknown = runs.filter(pl.col("noisy").is_null()).height
    if unknown:
        notes.append(f"{unknown} run(s) recorded no host load (bundles from before it was recorded): "
                     "whether they ran on a quiet host is not known")
    return runs, notes


def check_name(question: str, group: str, contrast: str, outcome: str) -> str:
    """The name a campaign's ``[checks]`` gives a check, e.g.
    ``cc/all-hsr/bbr-vs-cubic/goodput_bps``."""
    def slug(s: str) -> str:
        return re.sub(r"[^a-z0-9_.+-]+", "-", s.lower()).strip("-")

    return "/".join(slug(x) for x in (question, group, contrast)) + "/" + outcome


def declared_checks(dirs) -> dict[str, int]:
    """Check name -> how many runs named it in their campaign's ``[checks]`` when they ran
    (the manifest's ``checks``), with ``""`` -> the number of runs read. A check is declared
    before the runs when every run named it."""
    counts: dict[str, int] = {"": 0}
    for d in dirs:
        for _, man in _manifests(Path(d)):
            counts[""] += 1
            for name in set(man.get("checks") or ()):
                if isinstance(name, str):
                    counts[name] = counts.get(name, 0) + 1
    return counts


def check_status(name: str, counts: dict[str, int]) -> str:
    """``declared before the runs`` (every run named it), ``added after the runs`` (no run
    did) or ``declared by n of N runs``."""
    n, total = counts.get(name, 0), counts.get("", 0)
    if total and n == total:
        return "declared before the runs"
    if n == 0:
        return "added after the runs"
    return f"declared by {n} of {total} runs"


def main(argv: list[str] | None = None) -> int:
    """``python -m hsrtcp.findings.runs RUNS... [--include-noisy]``: the bundles to read, one
    path a line (noisy ones left out unless asked), the notes on standard error. Exit 3 on
    an input error (mixed scenario versions, an unreadable manifest)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m hsrtcp.findings.runs",
                                 description="List the bundles of runs directories a study or findings should read.")
    ap.add_argument("runs", nargs="+", help="runs directories (<run_id>/manifest.json)")
    ap.add_argument("--include-noisy", action="store_true", help="keep the runs marked noisy")
    args = ap.parse_args(argv)
    try:
        runs, notes = read_campaigns(args.runs, include_noisy=args.include_noisy)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    for b in runs.filter(pl.col("status") != NOISY)["bundle"].to_list():
        print(b)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
