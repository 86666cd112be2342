"""Findings of the mitigation study (issue 21): paired effect sizes from a campaign's bundles.

Pipeline (docs/findings.md; ``make findings``)::

    hsrtcp campaign campaigns/mitigations.toml -o RUNS          # the lab runs (root)
    hsrtcp analyze RUNS/<run_id> -o RESULTS/<run_id>            # each bundle, phone + server
    python -m hsrtcp.findings RUNS RESULTS -o OUT               # this package

- :mod:`.runs`: which arm, scenario and trip seed each bundle is (its manifest),
- :mod:`.outcomes`: the analyzer's per-connection metrics through the study layer
  (:func:`hsrtcp.study.study`), one row per run,
- :mod:`.questions`: the questions and the paired contrasts answering them,
- :mod:`.effects`: paired differences / ratios with the study layer's bootstrap intervals,
- :mod:`.figures`, :mod:`.markdown`: one figure and one table per question.

``OUT`` receives ``arms.csv`` (a row per run with its outcomes), ``effects.csv`` (a row per
question, scenario group, contrast and outcome), ``causes.csv`` (M14 per arm),
``findings-<question>.svg|png`` and ``tables.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.findings import effects as _effects
from hsrtcp.findings import markdown, outcomes, questions

#: arms in table order (campaigns/mitigations.toml)
ARM_ORDER = ["cubic", "reno", "bbr", "hsrbbr", "cubic-frto-off", "cubic-quickack", "cubic-rtomin50",
             "cubic-rtomin1000", "cubic-tlp-rack-off", "bbr-frto-off", "bbr-quickack", "cubic-aa"]


def group_members(group: str) -> tuple[str, ...]:
    """The scenarios of a group: the pooled HSR group or one scenario."""
    return questions.HSR_SCENARIOS if group == questions.ALL_HSR else (group,)


@dataclass
class Findings:
    arms: pl.DataFrame
    effects: pl.DataFrame
    causes: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    #: the headline checks (hsrtcp.findings.multiplicity) and whether the runs named them
    #: before they ran (runs.check_status)
    checks: pl.DataFrame | None = None

    def tables_markdown(self) -> str:
        parts = []
        for q in questions.QUESTIONS:
            parts.append(f"### {q.title}\n\n" + markdown.question_table(self.effects, q, questions.groups_of(q)))
        parts.append("### Levels per arm (means over runs)\n\n"
                     + markdown.arms_table(self.arms, questions.GROUPS, group_members, self._arm_order()))
        parts.append("### Causes of spurious RTOs (M14)\n\n" + markdown.causes_table(self.causes))
        if self.checks is not None:
            parts.append("### Checks\n\n| check | when named |\n|---|---|\n"
                         + "".join(f"| {r['check']} | {r['status']} |\n" for r in self.checks.iter_rows(named=True)))
        if self.notes:
            parts.append("### Notes\n\n" + "\n".join(f"- {n}" for n in self.notes) + "\n")
        return "\n".join(parts)

    def _arm_order(self) -> list[str]:
        present = self.arms["arm"].unique().to_list()
        return [a for a in ARM_ORDER if a in present] + sorted(a for a in present if a not in ARM_ORDER)

    def write(self, out_dir: str | os.PathLike, figures: bool = True) -> list[Path]:
        from hsrtcp.findings import figures as figs

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        tables = (("arms", self.arms), ("effects", self.effects), ("causes", self.causes))
        for name, df in tables + ((("checks", self.checks),) if self.checks is not None else ()):
            df.write_csv(out / f"{name}.csv")
            written.append(out / f"{name}.csv")
        (out / "tables.md").write_text(self.tables_markdown(), encoding="utf-8")
        written.append(out / "tables.md")
        if figures:
            written += figs.write(self.effects, questions.QUESTIONS, questions.groups_of, out)
        return written


def build(runs_dir: str | os.PathLike, results_root: str | os.PathLike, *, seed: int = 0, n_boot: int = 2000,
          min_pairs: int = 3, also_runs: list[str | os.PathLike] = (), include_noisy: bool = False) -> Findings:
    """Read the campaign's bundles (``runs_dir``, and the campaigns in ``also_runs``, e.g. the
    A/A campaign) and their analyses (``results_root/<run_id>``, written by ``hsrtcp
    analyze``); compute every effect. A failed run, a noisy one (unless ``include_noisy``) or
    one not analyzed is left out of its pairs and named in the notes; runs of one scenario
    and trip seed that ran different compiled paths are an input error (runs.read_campaigns)."""
    # imported here: python -m hsrtcp.findings.runs must not find it imported by the package
    from hsrtcp.findings import runs as _runs

    runs, notes = _runs.read_campaigns((runs_dir, *also_runs), include_noisy=include_noisy)
    failed = runs.filter(~pl.col("status").is_in(["ok", _runs.NOISY]))
    if failed.height:
        notes.append(f"{failed.height} run(s) failed and are left out of their pairs: "
                     + ", ".join(failed["run_id"].to_list()))
    root = Path(results_root)
    dirs, missing = [], []
    for run_id in runs.filter(pl.col("status") == "ok")["run_id"].to_list():
        d = root / run_id
        (dirs if (d / "flows.parquet").is_file() else missing).append(str(d))
    if missing:
        notes.append(f"{len(missing)} run(s) without an analysis under {root} (left out): "
                     + ", ".join(Path(m).name for m in missing))
    if not dirs:
        raise InputError(f"{root}: no analyzed run (RESULTS/<run_id>/flows.parquet) of {runs_dir}")
    from hsrtcp.study import study

    st = study(dirs, bootstrap=0, min_flows=1)
    per = outcomes.per_run(st.tables["study_flows"]).with_columns(
        pl.col("result").map_elements(lambda p: Path(p).name, return_dtype=pl.String).alias("run_id"))
    arms = runs.join(per.drop("result"), on="run_id", how="left")
    analyzed = {Path(d).name for d in dirs}
    arms = arms.with_columns(
        pl.when(pl.col("run_id").is_in(list(analyzed)) | (pl.col("status") != "ok"))
        .then(pl.col("status")).otherwise(pl.lit("not analyzed")).alias("status"))
    no_conn = arms.filter((pl.col("status") == "ok") & pl.col("connections").is_null())
    if no_conn.height:
        notes.append(f"{no_conn.height} run(s) whose analysis has no connection: " + ", ".join(no_conn["run_id"]))
    eff = _effects.table(arms, questions.QUESTIONS, questions.groups_of, group_members, seed=seed,
                         n_boot=n_boot, min_pairs=min_pairs, noise_key=questions.NOISE_KEY)
    cau = _effects.causes(arms, group_members, (*questions.HSR_SCENARIOS, questions.ALL_HSR), seed=seed,
                          n_boot=n_boot)
    from hsrtcp.findings.multiplicity import HEADLINES

    counts = _runs.declared_checks((runs_dir, *also_runs))
    names = [_runs.check_name(h.question, h.group, h.contrast.label, h.outcome) for h in HEADLINES]
    checks = pl.DataFrame({"check": names, "status": [_runs.check_status(n, counts) for n in names]})
    late = checks.filter(pl.col("status") != "declared before the runs").height
    if late:
        notes.append(f"{late} of {checks.height} headline checks were not named in [checks] before the runs "
                     "(checks.csv: added after the runs)")
    unknown = sorted(set(counts) - {""} - set(names))
    if unknown:
        notes.append(f"[checks] names no check this report makes: {', '.join(unknown[:10])}")
    return Findings(arms=arms, effects=eff, causes=cau, notes=notes, checks=checks)
