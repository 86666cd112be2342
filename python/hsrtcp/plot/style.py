"""The look every figure shares: one-column paper size, Okabe–Ito colours, units on axes.

Figures are drawn with :class:`matplotlib.figure.Figure` directly (no pyplot: no global
state, nothing kept between figures) at 3.5 in wide, the width of one column of a
two-column paper, with 7–8 pt text so that they are readable printed at that size. Vector
formats keep text as text (SVG ``svg.fonttype`` "none", PDF TrueType fonts) and carry no
creation date, so the same tables give the same file.
"""

from __future__ import annotations

import os


# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common form of
# colour blindness, and in greyscale by lightness for the first four.
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
}
CYCLE = [OKABE_ITO[c] for c in ("blue", "orange", "green", "vermillion", "purple", "sky_blue",
                                "yellow", "black")]
GREY = "#7F7F7F"

COLUMN_WIDTH_IN = 3.5
HEIGHT_IN = 2.4
FORMATS = ("png", "svg", "pdf")

# Retransmission classes (docs/formats/events.md): a colour and a marker each, so that the
# classes stay apart in greyscale too.
RETX_STYLE = {
    "fast": (OKABE_ITO["blue"], "o"),
    "sack_refill": (OKABE_ITO["sky_blue"], "s"),
    "rto": (OKABE_ITO["vermillion"], "D"),
    "tlp": (OKABE_ITO["purple"], "^"),
    "unclassified": (GREY, "x"),
}
SPURIOUS_STYLE = (OKABE_ITO["black"], "*")
# SACK blocks (events kind sack_block): thin segments over each block's bytes, like
# tcptrace's SACK marks; D-SACK blocks (RFC 2883) in another colour, with end caps.
SACK_STYLE = {"sack": OKABE_ITO["orange"], "dsack": OKABE_ITO["purple"]}

RC = {
    "font.size": 7.5, "axes.labelsize": 7.5, "axes.titlesize": 7.5, "legend.fontsize": 6,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.linewidth": 1.0, "lines.markersize": 3,
    "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
    "axes.grid": True, "grid.linewidth": 0.4, "grid.alpha": 0.35,
    "axes.spines.top": False, "axes.spines.right": False,
    "legend.frameon": True, "legend.framealpha": 0.85, "legend.edgecolor": "none",
    "legend.handlelength": 1.6,
    "savefig.dpi": 300, "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
    "svg.hashsalt": "hsrtcp",
}


def check_format(path: str | os.PathLike) -> str:
    """The output format from the file name's suffix (png, svg or pdf); ValueError otherwise."""
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"{os.fspath(path)}: the file name must end in .png, .svg or .pdf")
    return ext


def new_figure(height: float = HEIGHT_IN, width: float = COLUMN_WIDTH_IN, nrows: int = 1):
    """A figure of one column's width and its axes (a list when ``nrows`` > 1), in the style."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, 1, sharex=True) if nrows > 1 else fig.add_subplot()
    return fig, axes


def styled(fn):
    """Run a drawing function under the style's rcParams (text and line defaults are read
    when artists are made, so the whole drawing must happen inside the context); the figure
    it returns gets plain tick labels (:func:`human_ticks`)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(RC):
            fig = fn(*args, **kwargs)
            if hasattr(fig, "axes"):
                human_ticks(fig)
            return fig

    return wrapper


def plain_formatter(scale: float = 1.0, minor_log: bool = False):
    """A tick formatter of the one human format (:mod:`hsrtcp.units`): each tick value times
    ``scale`` (100 for a share shown in %) in positional notation — never an exponent, an
    offset ("+1.7e9") or a bare SI letter; the unit belongs in the axis label. On a linear
    axis every tick gets the decimals its spacing needs (0.25, 0.5, 0.75); on a log axis each
    tick its three significant digits. ``minor_log``: for a log axis's minor ticks, labelled
    at 2 and 5 times a power of ten only while the view spans less than two decades (the
    major ticks alone would leave one label or none)."""
    import math

    from matplotlib.ticker import Formatter

    from hsrtcp.units import plain

    class Plain(Formatter):
        decimals = None

        def set_locs(self, locs):
            super().set_locs(locs)
            steps = [abs(b - a) * scale for a, b in zip(locs, locs[1:]) if b != a]
            self.decimals = None
            if steps:
                step = min(steps)
                self.decimals = next((d for d in range(13)
                                      if abs(step * 10**d - round(step * 10**d)) <= 1e-6 * step * 10**d), 12)

        def __call__(self, x, pos=None):
            log = self.axis is not None and self.axis.get_scale() in ("log", "symlog")
            if minor_log:
                lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (1.0, 1e9)
                mant = x / 10 ** math.floor(math.log10(x)) if x > 0 else 0.0
                if lo <= 0 or hi / lo >= 100 or min(abs(mant - 2), abs(mant - 5)) > 1e-6:
                    return ""
            v = x * scale
            if log or self.decimals is None:
                return plain(v)
            text = f"{v:.{self.decimals}f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            return "0" if text in ("-0", "") else text

    return Plain()


def human_ticks(fig) -> None:
    """Plain tick labels (:func:`plain_formatter`) on every axis of ``fig`` that still has
    matplotlib's default formatter (which writes 1e6 offsets, 10^6 on log axes); an axis
    given its own formatter (a share in %, none on minor ticks) keeps it."""
    from matplotlib.ticker import LogFormatter, ScalarFormatter

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_formatter(), (ScalarFormatter, LogFormatter)):
                axis.set_major_formatter(plain_formatter())
            if isinstance(axis.get_minor_formatter(), LogFormatter):
                axis.set_minor_formatter(plain_formatter(minor_log=True))


def legend_below(fig, ax, ncol: int = 2) -> None:
    """The legend under the axes (outside the data), in ``ncol`` columns."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol)


def zoom(ax, start: float | None, end: float | None) -> None:
    """Show only [start, end] of the time axis, the y axis fitted to what is drawn there."""
    import numpy as np

    lo, hi = ax.get_xlim()
    start = lo if start is None else start
    end = hi if end is None else end
    ys = []
    for line in ax.lines:
        if line.get_transform() != ax.transData:  # ticks along the top (axes coordinates)
            continue
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        if len(x) > 1:  # the line's values at the window's edges count too
            ys += [np.interp([start, end], x, y)]
        ys.append(y[(x >= start) & (x <= end)])
    for coll in ax.collections:
        if coll.get_gid() and str(coll.get_gid()).startswith(("sack-", "seg-")) and hasattr(coll, "get_segments"):
            # SACK block segments (vertical: both ends at one time) reach above the marks
            segs = [np.asarray(sg, float) for sg in coll.get_segments() if len(sg)]
            seg_xy = np.concatenate(segs) if segs else np.empty((0, 2))
            ys.append(seg_xy[(seg_xy[:, 0] >= start) & (seg_xy[:, 0] <= end), 1])
            continue
        off = np.asarray(coll.get_offsets(), float)
        if off.ndim == 2 and len(off) and coll.get_offset_transform() == ax.transData:
            ys.append(off[(off[:, 0] >= start) & (off[:, 0] <= end), 1])
    y = np.concatenate(ys) if ys else np.empty(0)
    y = y[np.isfinite(y)]
    ax.set_xlim(start, end)
    if y.size:
        pad = (y.max() - y.min()) * 0.05 or abs(y.max()) * 0.05 or 1.0
        ax.set_ylim(max(y.min() - pad, 0) if y.min() >= 0 else y.min() - pad, y.max() + pad)


def scale_for(max_value: float, unit: str, base: float = 1000.0) -> tuple[float, str]:
    """A divisor and the prefixed unit for values up to ``max_value``: (1e6, "MB") for 3e6 B."""
    for div, prefix in ((base ** 3, "G"), (base ** 2, "M"), (base, "k")):
        if max_value >= div:
            return div, prefix + unit
    return 1.0, unit


def save(fig, path: str | os.PathLike) -> str:
    """Write the figure to ``path`` (format from the suffix) with :mod:`hsrtcp.atomic`: a
    reader never sees half a picture, a link is written through, ``/dev/stdout`` works;
    returns the path."""
    import matplotlib

    from hsrtcp.atomic import write_file

    fmt = check_format(path)
    metadata = {"png": {"Software": "hsrtcp"}, "svg": {"Date": None, "Creator": "hsrtcp"},
                "pdf": {"CreationDate": None, "ModDate": None, "Creator": "hsrtcp"}}[fmt]
    def write(tmp: str) -> None:
        # a file of our own: matplotlib leaves its own open when a PDF fails half-way
        with open(tmp, "wb") as f:
            fig.savefig(f, format=fmt, metadata=metadata)

    with matplotlib.rc_context(RC):
        return write_file(path, write)
