"""The headline contrasts of docs/findings.md ("In short") with tests that hold up to the
lab's design (issue 34): one pair per trip seed, a permutation p-value by trip (sign flips of
the paired differences, exact), the exact sign test beside it, and Holm and Benjamini–Hochberg
adjusted over the family of headline claims. The A/A interval of the same group and outcome
stands beside every effect.

The family is fixed here, before looking at the p-values: every claim the summary of
docs/findings.md makes with a number (15 contrasts). Per-scenario cells are not in it: with 5
pairs the smallest permutation p-value is 2/32 = 0.0625, so no single-scenario cell can be
significant at 5 % whatever the correction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from hsrtcp.findings import effects as _effects
from hsrtcp.findings import questions as q
from hsrtcp.findings.outcomes import BY_NAME
from hsrtcp.study import stats


@dataclass(frozen=True)
class Headline:
    question: str
    group: str
    contrast: q.Contrast
    outcome: str


def _c(label: str) -> q.Contrast:
    for question in q.QUESTIONS:
        for c in question.contrasts:
            if c.label == label:
                return c
    raise KeyError(label)


#: the claims of docs/findings.md's summary, in its order
HEADLINES = (
    Headline("cc", q.ALL_HSR, _c("bbr vs cubic"), "goodput_bps"),
    Headline("cc", q.ALL_HSR, _c("hsrbbr vs cubic"), "goodput_bps"),
    Headline("cc", q.STATIC, _c("bbr vs cubic"), "goodput_bps"),
    Headline("tlp_rack", q.ALL_HSR, _c("TLP+RACK on vs off"), "goodput_bps"),
    Headline("tlp_rack", q.ALL_HSR, _c("TLP+RACK on vs off"), "timeouts"),
    Headline("cc", q.ALL_HSR, _c("hsrbbr vs bbr"), "goodput_bps"),
    Headline("frto", q.ALL_HSR, _c("F-RTO on vs off"), "goodput_bps"),
    Headline("frto", q.ALL_HSR, _c("F-RTO on vs off"), "spurious_timeouts"),
    Headline("quickack", q.ALL_HSR, _c("no delayed ACK vs delayed"), "goodput_bps"),
    Headline("quickack", q.ALL_HSR, _c("no delayed ACK vs delayed"), "dupack_rate"),
    Headline("rto_min", q.ALL_HSR, _c("rto_min 1 s vs 200 ms"), "goodput_bps"),
    Headline("rto_min", q.ALL_HSR, _c("rto_min 50 ms vs 200 ms"), "goodput_bps"),
    Headline("rto_min", q.ALL_HSR, _c("rto_min 50 ms vs 200 ms"), "timeouts"),
    Headline("rto_min", q.ALL_HSR, _c("rto_min 50 ms vs 200 ms"), "spurious_rto_rate"),
    Headline("cc", q.ALL_HSR, _c("reno vs cubic"), "goodput_bps"),
)

#: the family's level (Holm: family-wise error; BH: false discovery rate)
ALPHA = 0.05


def _diffs(pairs: pl.DataFrame, outcome: str) -> list[float]:
    """One paired difference per trip: log ratio for goodput, plain difference otherwise."""
    o = BY_NAME[outcome]
    out = []
    for t, r in zip(pairs[f"{outcome}_t"].to_list(), pairs[f"{outcome}_r"].to_list()):
        if t is None or r is None or not (math.isfinite(t) and math.isfinite(r)):
            continue
        if o.effect == "ratio":
            if t > 0 and r > 0:
                out.append(math.log(t / r))
        else:
            out.append(t - r)
    return out


def table(arms: pl.DataFrame, effects: pl.DataFrame, group_members, *, headlines=HEADLINES) -> pl.DataFrame:
    """A row per headline: the effect and its interval (from ``effects``, the pairs-resampled
    bootstrap of hsrtcp.findings.effects), the A/A interval, the permutation and sign-test
    p-values by trip, and both adjustments over the family."""
    rows = []
    for h in headlines:
        e = effects.filter((pl.col("question") == h.question) & (pl.col("group") == h.group)
                           & (pl.col("contrast") == h.contrast.label) & (pl.col("outcome") == h.outcome))
        if e.height != 1:
            raise ValueError(f"{h}: {e.height} rows in the effects table")
        e = e.row(0, named=True)
        aa = effects.filter((pl.col("question") == q.NOISE_KEY) & (pl.col("group") == h.group)
                            & (pl.col("outcome") == h.outcome))
        aa = aa.row(0, named=True) if aa.height else None
        d = _diffs(_effects.paired(arms, h.contrast.treatment, h.contrast.reference, group_members(h.group)), h.outcome)
        aa_d = _diffs(_effects.paired(arms, q.NOISE[0].treatment, q.NOISE[0].reference, group_members(h.group)),
                      h.outcome)
        rows.append({"question": h.question, "group": h.group, "contrast": h.contrast.label, "outcome": h.outcome,
                     "n_pairs": len(d), "effect": e["effect"], "effect_lo": e["effect_lo"],
                     "effect_hi": e["effect_hi"], "unit": e["unit"],
                     "aa_effect": aa["effect"] if aa else None, "aa_lo": aa["effect_lo"] if aa else None,
                     "aa_hi": aa["effect_hi"] if aa else None, "aa_p": stats.paired_permutation(aa_d),
                     "p_perm": stats.paired_permutation(d), "p_sign": stats.sign_test(d)})
    p = [r["p_perm"] for r in rows]
    for r, h, b in zip(rows, stats.holm(p), stats.benjamini_hochberg(p)):
        r["p_holm"], r["q_bh"] = h, b
        r["holds"] = b is not None and b <= ALPHA
    return pl.DataFrame(rows, schema={
        "question": pl.String, "group": pl.String, "contrast": pl.String, "outcome": pl.String,
        "n_pairs": pl.Int64, "effect": pl.Float64, "effect_lo": pl.Float64, "effect_hi": pl.Float64,
        "unit": pl.String, "aa_effect": pl.Float64, "aa_lo": pl.Float64, "aa_hi": pl.Float64, "aa_p": pl.Float64,
        "p_perm": pl.Float64, "p_sign": pl.Float64, "p_holm": pl.Float64, "q_bh": pl.Float64, "holds": pl.Boolean})


def aa_rejections(arms: pl.DataFrame, group_members, level: float = 0.05) -> tuple[int, int]:
    """(A/A cells with a permutation p-value <= level, A/A cells with a value): how often the
    test calls noise an effect. Expected: at most ``level`` of them."""
    hits = total = 0
    for group in q.GROUPS:
        pairs = _effects.paired(arms, q.NOISE[0].treatment, q.NOISE[0].reference, group_members(group))
        for outcome in q.BY_KEY[q.NOISE_KEY].outcomes:
            d = _diffs(pairs, outcome) if pairs.height else []
            p = stats.paired_permutation(d) if d else None
            if p is None or not any(x != 0 for x in d):
                continue
            total += 1
            hits += p <= level
    return hits, total


def significant_cells(effects: pl.DataFrame) -> tuple[int, int]:
    """(effect cells whose 95 % bootstrap interval excludes no effect, cells with an
    interval), A/A cells excluded: what the tables call + or − without any correction."""
    e = effects.filter((pl.col("question") != q.NOISE_KEY) & pl.col("effect_lo").is_not_null())
    return int(e.filter(pl.col("verdict").is_in(["helps", "hurts"])).height), int(e.height)


def _fmt(v, unit: str) -> str:
    return "—" if v is None else (f"{v:+.1f}%" if unit == "%" else f"{v:+.2f}" + (f" {unit}" if unit else ""))


def _p(v) -> str:
    return "—" if v is None else (f"{v:.1e}" if v < 0.001 else f"{v:.3f}")


def markdown(t: pl.DataFrame) -> str:
    head = ["claim", "scenarios", "pairs", "effect [95 % CI, pairs resampled]", "A/A [95 % CI]",
            "p (permutation by trip)", "p (sign test)", "Holm", "BH q", f"holds at {ALPHA:g} (BH)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t.iter_rows(named=True):
        unit = r["unit"] or ""
        eff = f"{_fmt(r['effect'], unit)} [{_fmt(r['effect_lo'], unit)}, {_fmt(r['effect_hi'], unit)}]"
        aa = ("—" if r["aa_lo"] is None else f"[{_fmt(r['aa_lo'], unit)}, {_fmt(r['aa_hi'], unit)}]")
        lines.append("| " + " | ".join([f"{r['contrast']}: {BY_NAME[r['outcome']].label}", r["group"],
                                         str(r["n_pairs"]), eff, aa, _p(r["p_perm"]), _p(r["p_sign"]),
                                         _p(r["p_holm"]), _p(r["q_bh"]), "yes" if r["holds"] else "**no**"]) + " |")
    return "\n".join(lines) + "\n"




def question_families(arms: pl.DataFrame, effects: pl.DataFrame, group_members) -> pl.DataFrame:
    """Every question's pooled cells as one family per question (its contrasts × outcomes on
    "all HSR"; the static question on the static path), permutation p-values by trip, Holm
    and Benjamini–Hochberg within the question."""
    rows = []
    for question in q.QUESTIONS:
        if question.key == q.NOISE_KEY:
            continue
        group = q.STATIC if question.key == "static" else q.ALL_HSR
        fam = []
        for c in question.contrasts:
            for outcome in question.outcomes:
                e = effects.filter((pl.col("question") == question.key) & (pl.col("group") == group)
                                   & (pl.col("contrast") == c.label) & (pl.col("outcome") == outcome)).row(0, named=True)
                d = _diffs(_effects.paired(arms, c.treatment, c.reference, group_members(group)), outcome)
                fam.append({"question": question.key, "group": group, "contrast": c.label, "outcome": outcome,
                            "n_pairs": len(d), "effect": e["effect"], "effect_lo": e["effect_lo"],
                            "effect_hi": e["effect_hi"], "unit": e["unit"], "verdict": e["verdict"],
                            "p_perm": stats.paired_permutation(d) if len(d) >= 3 else None})
        p = [r["p_perm"] for r in fam]
        for r, h, b in zip(fam, stats.holm(p), stats.benjamini_hochberg(p)):
            r["p_holm"], r["q_bh"] = h, b
        rows += fam
    return pl.DataFrame(rows, schema={
        "question": pl.String, "group": pl.String, "contrast": pl.String, "outcome": pl.String,
        "n_pairs": pl.Int64, "effect": pl.Float64, "effect_lo": pl.Float64, "effect_hi": pl.Float64,
        "unit": pl.String, "verdict": pl.String, "p_perm": pl.Float64, "p_holm": pl.Float64, "q_bh": pl.Float64})


def families_markdown(t: pl.DataFrame) -> str:
    head = ["question", "scenarios", "contrast: outcome", "pairs", "effect [95 % CI]", "uncorrected mark",
            "p (permutation by trip)", "Holm", "BH q"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    mark = {"helps": "+", "hurts": "−", "within noise": "~"}
    for r in t.iter_rows(named=True):
        unit = r["unit"] or ""
        eff = ("—" if r["effect"] is None else
               f"{_fmt(r['effect'], unit)} [{_fmt(r['effect_lo'], unit)}, {_fmt(r['effect_hi'], unit)}]")
        q_txt = _p(r["q_bh"]) + (" **holds**" if r["q_bh"] is not None and r["q_bh"] <= ALPHA else "")
        lines.append("| " + " | ".join([r["question"], r["group"], f"{r['contrast']}: {BY_NAME[r['outcome']].label}",
                                         str(r["n_pairs"]), eff, mark.get(r["verdict"], "n/a"), _p(r["p_perm"]),
                                         _p(r["p_holm"]), q_txt]) + " |")
    return "\n".join(lines) + "\n"
