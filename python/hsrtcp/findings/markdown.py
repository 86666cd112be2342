"""The findings' tables as Markdown (docs/findings.md includes them as written).

One table per question: a row per scenario group and contrast, a column per outcome of the
question with ``effect [lo, hi]`` and the verdict's mark, the number of pairs, and for a ratio
the range of the single pairs' effects (the smallest and the largest, "up to"). Marks:
``+`` helps, ``−`` hurts (the interval excludes no effect), doubled (``++``, ``−−``) when the
interval also lies wholly outside the A/A interval of the same scenario and outcome, ``~``
within noise, ``n/a`` too few pairs or no value.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.findings.outcomes import BY_NAME

MARK = {"helps": "+", "hurts": "−", "within noise": "~"}


def _num(v: float | None, digits: int) -> str:
    return "—" if v is None else f"{v:+.{digits}f}"


def _digits(name: str) -> int:
    o = BY_NAME[name]
    return 1 if o.effect == "ratio" or o.unit == "pp" else 2


def cell(row: dict, name: str) -> str:
    if row is None or row["effect"] is None:
        return "n/a" + (f" (n={row['n_pairs']})" if row is not None else "")
    d = _digits(name)
    unit = "%" if BY_NAME[name].effect == "ratio" else ""
    mark = MARK.get(row["verdict"], "")
    if mark in ("+", "−") and row.get("beyond_noise"):
        mark *= 2
    return f"{_num(row['effect'], d)}{unit} [{_num(row['effect_lo'], d)}, {_num(row['effect_hi'], d)}] {mark}".strip()


def _header(name: str) -> str:
    o = BY_NAME[name]
    if o.effect == "ratio":
        return f"{o.label} Δ%"
    return f"{o.label} Δ" + (f" ({o.unit})" if o.unit else "")


def question_table(effects: pl.DataFrame, question, groups: tuple[str, ...]) -> str:
    """The Markdown table of one question."""
    q = effects.filter(pl.col("question") == question.key)
    ratio_first = BY_NAME[question.outcomes[0]].effect == "ratio"
    head = ["scenario", "contrast", "pairs", *[_header(n) for n in question.outcomes[:1]],
            *(["pairs' range Δ%"] if ratio_first else []), *[_header(n) for n in question.outcomes[1:]]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in groups:
        for c in question.contrasts:
            sub = q.filter((pl.col("group") == group) & (pl.col("contrast") == c.label))
            by_outcome = {r["outcome"]: r for r in sub.iter_rows(named=True)}
            n = by_outcome.get(question.outcomes[0], {}).get("n_pairs") if by_outcome else 0
            cells = [cell(by_outcome.get(name), name) for name in question.outcomes]
            if ratio_first:
                r = by_outcome.get(question.outcomes[0])
                span = ("—" if r is None or r["pair_min"] is None
                        else f"{r['pair_min']:+.1f} … {r['pair_max']:+.1f}")
                cells.insert(1, span)
            lines.append("| " + " | ".join([group, c.label, str(n or 0), *cells]) + " |")
    return "\n".join(lines) + "\n"


def arms_table(arms: pl.DataFrame, groups: tuple[str, ...], group_members, arm_order: list[str]) -> str:
    """Per group and arm: runs, mean goodput (Mbit/s), mean RTO sequences and spurious RTOs per
    flow, mean timeout recovery (s): the levels the effects are differences of."""
    head = ["scenario", "arm", "runs ok", "goodput (Mbit/s)", "RTO seq./flow", "spurious RTOs/flow",
            "timeout recovery (s)", "p_d (%)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in groups:
        sub = arms.filter(pl.col("scenario").is_in(list(group_members(group))), pl.col("status") == "ok")
        for arm in arm_order:
            a = sub.filter(pl.col("arm") == arm)
            if a.height == 0:
                continue

            def m(c, scale=1.0, d=2):
                v = a[c].drop_nulls()
                return "—" if v.len() == 0 else f"{v.mean() * scale:.{d}f}"

            lines.append("| " + " | ".join([group, arm, str(a.height), m("goodput_bps", 1e-6), m("timeouts", d=1),
                                             m("spurious_timeouts", d=1), m("timeout_recovery_s"),
                                             m("p_d", 100.0)]) + " |")
    return "\n".join(lines) + "\n"


def causes_table(causes: pl.DataFrame) -> str:
    head = ["scenario", "arm", "runs", "spurious RTOs", "ACKL share [95 % CI]", "RTOEI share"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in causes.iter_rows(named=True):
        if r["ackl_share"] is None:
            share, rtoei = (r["note"] or "—"), "—"
        else:
            share = f"{r['ackl_share'] * 100:.1f} % [{r['ackl_share_lo'] * 100:.1f}, {r['ackl_share_hi'] * 100:.1f}]"
            rtoei = f"{(1 - r['ackl_share']) * 100:.1f} %"
        lines.append("| " + " | ".join([r["group"], r["arm"], str(r["runs"]), str(r["spurious_rtos"]), share, rtoei])
                     + " |")
    return "\n".join(lines) + "\n"
