"""One figure per question: the paired effects with their 95 % intervals, per scenario.

Two panels side by side (two columns wide): the question's first two outcomes. A row per
scenario group, a marker per contrast (Okabe–Ito colours and distinct markers, so they stay
apart in greyscale); the vertical line is "no effect", the grey band of a row the A/A
interval of that scenario (the same arm run twice): an effect inside it is noise. Drawn in the look of hsrtcp.plot
(:mod:`hsrtcp.plot.style`): a :class:`matplotlib.figure.Figure` without pyplot, vector text,
no creation date, so the same effects give the same file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from hsrtcp.findings.outcomes import BY_NAME
from hsrtcp.findings.questions import NOISE_KEY, Question
from hsrtcp.plot import style

# 11 markers against 8 colours: every contrast of a figure (at most 11) has its own pair
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "h")


def _axis_label(name: str) -> str:
    o = BY_NAME[name]
    if o.effect == "ratio":
        return f"{o.label}: ratio treatment / reference (log)"
    unit = f" ({o.unit})" if o.unit else ""
    return f"{o.label}: difference{unit}"


@style.styled
def draw(effects: pl.DataFrame, question: Question, groups: tuple[str, ...]):
    """The figure of one question from the effects table (hsrtcp.findings.effects.table)."""
    from matplotlib.figure import Figure

    outcomes = question.outcomes[:2]
    contrasts = [c.label for c in question.contrasts]
    one_group = len(groups) == 1  # then each contrast is a row of its own, named on the axis
    height = (0.9 + 0.17 * len(contrasts)) if one_group else 0.55 + 0.2 * len(groups) * max(1, min(len(contrasts), 4)) ** 0.5
    fig = Figure(figsize=(2 * style.COLUMN_WIDTH_IN, max(style.HEIGHT_IN * 0.8, height)), layout="constrained")
    axes = fig.subplots(1, len(outcomes), sharey=True, squeeze=False)[0]
    q = effects.filter(pl.col("question") == question.key)
    step = 0.7 / max(len(contrasts), 1)
    for ax, name in zip(axes, outcomes):
        # a ratio is drawn as one (x 2 and x 1/2 equally far from "no effect"): effects
        # between arms span two orders of magnitude when one of them stalls
        ratio = BY_NAME[name].effect == "ratio"
        conv = (lambda v: 1.0 + v / 100.0) if ratio else (lambda v: v)
        ax.axvline(conv(0.0), color=style.GREY, linewidth=0.8, zorder=1)
        ends = [conv(0.0)]
        if question.key != NOISE_KEY:
            # the A/A interval of the row: what running the same arm twice gives
            labelled = False
            for g, group in enumerate(groups):
                nz = effects.filter((pl.col("question") == NOISE_KEY) & (pl.col("group") == group)
                                    & (pl.col("outcome") == name))
                if nz.height and nz["effect_lo"][0] is not None:
                    a, b = conv(nz["effect_lo"][0]), conv(nz["effect_hi"][0])
                    ax.fill_betweenx([g - 0.42, g + 0.42], a, b, color=style.GREY, alpha=0.22, linewidth=0,
                                     zorder=0, label=None if labelled else "A/A noise (95 %)")
                    labelled = True
                    ends += [a, b]
        for k, label in enumerate(contrasts):
            color = style.CYCLE[k % len(style.CYCLE)]
            marker = MARKERS[k % len(MARKERS)]
            ys, xs, lo, hi = [], [], [], []
            for g, group in enumerate(groups):
                row = q.filter((pl.col("group") == group) & (pl.col("contrast") == label) & (pl.col("outcome") == name))
                if row.height == 0 or row["effect"][0] is None:
                    continue
                y = g + (k - (len(contrasts) - 1) / 2) * step
                e, a, b = (None if v is None else conv(v) for v in
                           (row["effect"][0], row["effect_lo"][0], row["effect_hi"][0]))
                ys.append(y)
                xs.append(e)
                lo.append(e - a if a is not None else 0.0)
                hi.append(b - e if b is not None else 0.0)
                ends += [v for v in (e, a, b) if v is not None]
            if xs:
                ax.errorbar(xs, ys, xerr=[lo, hi], fmt=marker, color=color, markersize=3.5, capsize=1.5,
                            elinewidth=0.8, label=label if name == outcomes[0] else None, zorder=3)
        if ratio:
            _log_ratio_axis(ax, min(ends), max(ends))
        ax.set_xlabel(_axis_label(name))
        ax.grid(axis="y", visible=False)
        if len(groups) > 1 and groups[-1] == "static":  # the control path apart from the HSR ones
            ax.axhline(len(groups) - 1.5, color=style.GREY, linewidth=0.5, linestyle=":")
    if one_group:
        ys = [(k - (len(contrasts) - 1) / 2) * step for k in range(len(contrasts))]
        axes[0].set_yticks(ys)
        axes[0].set_yticklabels([f"{groups[0]}: {c}" for c in contrasts])
    else:
        axes[0].set_yticks(range(len(groups)))
        axes[0].set_yticklabels(groups)
    axes[0].set_ylim(len(groups) - 0.5, -0.5)
    fig.suptitle(question.title, fontsize=7.5)
    if one_group:  # the contrasts are named on the axis: the legend keeps the A/A band only
        handles, labels = axes[0].get_legend_handles_labels()
        keep = [(h, lab) for h, lab in zip(handles, labels) if lab.startswith("A/A")]
        if keep:
            fig.legend(*zip(*keep), loc="outside lower center", ncol=1)
    else:
        style.legend_below(fig, axes[0], ncol=min(5, len(contrasts) + 1))
    return fig


def _log_ratio_axis(ax, lo: float, hi: float) -> None:
    """Log x axis over [lo, hi] (and 1) with some room, labelled with plain ratios (0.5, 1, 2 ...)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(min(lo, 0.9) / 1.25, max(hi, 1.1) * 1.25)
    narrow = max(hi, 1.1) / min(lo, 0.9) < 20
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0) if narrow else (1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def write(effects: pl.DataFrame, questions, groups_of, out_dir: str | Path, formats=("svg", "png")) -> list[Path]:
    """Every question's figure as ``<out_dir>/findings-<key>.<fmt>``; returns the paths."""
    out = []
    for q in questions:
        fig = draw(effects, q, groups_of(q))
        for fmt in formats:
            out.append(Path(style.save(fig, Path(out_dir) / f"findings-{q.key}.{fmt}")))
    return out
