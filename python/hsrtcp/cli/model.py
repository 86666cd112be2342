"""`hsrtcp model`: throughput models (PFTK, seed-001 enhanced model) from the command line.

    hsrtcp model predict --p-d 0.007526 --ack-burst-loss 0.001 --q 0.2726 --rtt 0.2 --rto 2 --wm 1000
    hsrtcp model predict --p-d 0.0075 --ack-loss-rate 0.0066 --q 0.27 --rtt 0.2 --rto 2
    hsrtcp model fit results/ --group-by class -o results/model
    hsrtcp model sweep --param P_a --param q -o sweeps/

Units: probabilities as fractions (0.01 = 1 %), times in seconds, windows in packets,
throughput in packets/s (bit/s with --mss). See docs/models.md.

Two ACK losses with two names (issue 31): the ACK burst loss probability P_a (all ACKs of a
round lost: the models' input, flows.ack_burst_loss) is ``--ack-burst-loss``; the per-ACK
loss rate p_a (flows.p_a, what the analyze summary prints as "per-ACK loss rate p_a") is
``--ack-loss-rate``. The old ``--P-a``/``--p-a`` still mean P_a, with a warning: p_a was
pasted into them.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from hsrtcp.cli.options import Number, count
from hsrtcp.errors import ModelDomainError


class ModelInput(click.ParamType):
    """A model input within its domain (:data:`hsrtcp.models.sweeping.DOMAIN`): the one check
    of ``predict`` and ``sweep``, with the model functions' words (NaN refused; +inf only
    for W_m, "no limit")."""

    name = "float"

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol

    def convert(self, value, param, ctx):
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        from hsrtcp.models.sweeping import domain_problem

        problem = domain_problem(self.symbol, v)
        if problem:
            self.fail(problem, param, ctx)
        return v


INPUT = {k: ModelInput(k) for k in ("p_d", "P_a", "p_a", "q", "rtt", "T", "b", "W_m")}
_INPUT_HELP = {
    "p_d": "data loss rate p_d (fraction, e.g. 0.007526)",
    "P_a": "ACK burst loss probability P_a: probability that all ACKs of a round are lost (fraction; "
    "flows.ack_burst_loss); default 0. Not the per-ACK loss rate p_a: that is --ack-loss-rate",
    "ack_loss_rate": "per-ACK loss rate p_a (fraction; flows.p_a): derive P_a = p_a^w under independent ACK "
    "losses (fixed point, w = re-derived E[W]); ignored if --ack-burst-loss is given",
    "q": "loss rate of retransmissions during a timeout sequence (fraction); default: p_d (PFTK's assumption)",
    "rtt": "mean round-trip time (s)",
    "rto": "first retransmission timeout T of a timeout sequence (s)",
    "b": "packets acknowledged per ACK (2 with delayed ACKs)",
    "wm": "receiver window limit W_m (packets); default: none",
}


def _old_P_a(P_a, old):  # noqa: N802, N803
    """--P-a/--p-a: P_a under its former name, kept working with a warning (the lower-case
    spelling invited the per-ACK loss rate p_a)."""
    if old is None:
        return P_a
    if P_a is not None:
        raise click.UsageError("--ack-burst-loss and its deprecated name --P-a/--p-a were both given")
    click.echo("warning: --P-a/--p-a is deprecated: it is the ACK burst loss probability P_a, now "
               "--ack-burst-loss; the per-ACK loss rate p_a (the summary's \"per-ACK loss rate p_a\", "
               "flows.p_a) goes to --ack-loss-rate", err=True)
    return old


def _console():
    from rich.console import Console

    # Wide enough for the table when not writing to a terminal (pipes, tests).
    con = Console()
    return con if con.is_terminal else Console(width=140)


@click.group("model")
def model() -> None:
    """Throughput models: PFTK (full, approximate) and the seed-001 enhanced model.

    The enhanced model comes in three variants: as_printed (seed 001's formulas with their
    typos), corrected (typos fixed) and rederived (nests PFTK; recommended).
    """


@model.command()
@click.option("--p-d", "p_d", type=INPUT["p_d"], required=True, help=_INPUT_HELP["p_d"])
@click.option("--ack-burst-loss", "P_a", type=INPUT["P_a"], default=None, help=_INPUT_HELP["P_a"])
@click.option("--P-a", "--p-a", "old_P_a", type=INPUT["P_a"], default=None, hidden=True)
@click.option("--ack-loss-rate", "ack_loss_rate", type=INPUT["p_a"], default=None, help=_INPUT_HELP["ack_loss_rate"])
@click.option("--q", "q", type=INPUT["q"], default=None, help=_INPUT_HELP["q"])
@click.option("--rtt", type=INPUT["rtt"], required=True, help=_INPUT_HELP["rtt"])
@click.option("--rto", "--T", "rto", type=INPUT["T"], required=True, help=_INPUT_HELP["rto"])
@click.option("--b", "b", type=INPUT["b"], default=2.0, show_default=True, help=_INPUT_HELP["b"])
@click.option("--wm", "--W-m", "wm", type=INPUT["W_m"], default=math.inf, help=_INPUT_HELP["wm"])
@click.option("--mss", type=count(1), default=None, help="segment payload size in bytes: also print the rate (kbit/s, Mbit/s)")
@click.option("--allow-any-b", is_flag=True, help="evaluate the as_printed variant also for b != 2")
def predict(p_d, P_a, old_P_a, ack_loss_rate, q, rtt, rto, b, wm, mss, allow_any_b) -> None:  # noqa: N803
    """Predict throughput with every model and variant, side by side.

    \b
    --ack-burst-loss is P_a, the probability that all ACKs of a round are lost;
    --ack-loss-rate is p_a, the share of single ACKs lost (the summary's "per-ACK loss rate").
    """
    from rich.table import Table

    from hsrtcp.models import MODEL_KEYS, MODEL_LABELS, evaluate_all, independent_ack_burst_loss
    from hsrtcp.units import human_rate, plain

    P_a = _old_P_a(P_a, old_P_a)
    notes = []
    if q is None:
        q = p_d
        notes.append(f"q not given: q = p_d = {p_d:g} (retransmissions as lossy as other packets)")
    if P_a is None:
        if ack_loss_rate is not None:
            try:
                P_a = independent_ack_burst_loss(ack_loss_rate, p_d, b)
            except ModelDomainError as exc:
                raise click.BadParameter(str(exc), param_hint="--ack-loss-rate") from None
            notes.append(f"P_a = {plain(P_a, 4)} from p_a = {ack_loss_rate:g} under independent ACK losses")
        else:
            P_a = 0.0
    res = evaluate_all(p_d, P_a, q, rtt, rto, b, wm, allow_any_b=allow_any_b)
    if all(math.isnan(float(res[k].throughput)) for k in MODEL_KEYS):
        raise click.UsageError(f"no model is defined for these inputs: {res['enh_rederived'].reasons.item() or res['pftk_full'].reasons.item()}")

    wm_txt = "none" if math.isinf(wm) else f"{wm:g}"
    table = Table(
        title=f"p_d={p_d:g}  P_a={plain(P_a, 4)}  q={q:g}  RTT={rtt:g} s  T={rto:g} s  b={b:g}  W_m={wm_txt}",
        title_justify="left",
    )
    table.add_column("model")
    table.add_column("key", style="dim")
    table.add_column("packets/s", justify="right")
    if mss is not None:
        table.add_column("rate", justify="right")  # in kbit/s or Mbit/s, as the summary prints rates
    table.add_column("regime")
    table.add_column("note", overflow="fold")
    for key in MODEL_KEYS:
        r = res[key]
        tp = float(r.throughput)
        row = [MODEL_LABELS[key], key, "—" if math.isnan(tp) else plain(tp, 6)]
        if mss is not None:
            row.append("—" if math.isnan(tp) else human_rate(tp * mss * 8))
        row.append("" if math.isnan(tp) else ("window-limited" if bool(r.window_limited) else "loss-limited"))
        row.append(r.reasons.item() or "")
        table.add_row(*row)
    con = _console()
    con.print(table)
    for n in notes:
        con.print(f"note: {n}")


@model.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=None,
              help="output directory (default: RESULTS/model, or next to a flows file)")
@click.option("--group-by", default=None, help="flows column to summarise by, e.g. class")
@click.option("--allow-any-b", is_flag=True, help="evaluate the as_printed variant also where b != 2")
@click.option("--pa-fallback", is_flag=True,
              help="where ack_burst_loss is null, derive P_a from p_a under independent ACK losses")
def fit(results: Path, out: Path | None, group_by: str | None, allow_any_b: bool, pa_fallback: bool) -> None:
    """Compare every model with the measured throughput of each flow.

    RESULTS is a results directory with flows.parquet, or a flows Parquet file. Writes
    model_fit_flows.{parquet,csv}, model_fit_summary.csv and model_fit.png.
    """
    from rich.table import Table

    from hsrtcp.models.fitting import fit_flows

    res = fit_flows(results, group_by=group_by, allow_any_b=allow_any_b, pa_fallback=pa_fallback, progress=True)
    if out is None:
        out = (results if results.is_dir() else results.parent) / "model"
    paths = res.write(out)
    table = Table(title=f"Model deviation D per {'group' if group_by else 'data set'} "
                  f"({res.flows.height} flows)", title_justify="left")
    for c in (res.summary.columns[0], "model", "n_flows", "n_with_d", "mean_d", "median_d"):
        table.add_column(c, justify="right" if c.startswith(("n_", "mean", "median")) else "left")
    for row in res.summary.iter_rows(named=True):
        table.add_row(
            str(row[res.summary.columns[0]]), row["model"], str(row["n_flows"]), str(row["n_with_d"]),
            _pct(row["mean_d"]), _pct(row["median_d"]),
        )
    con = _console()
    con.print(table)
    n_missing = res.flows.filter(res.flows.get_column("missing_inputs").list.len() > 0).height
    if n_missing:
        con.print(f"{n_missing} flow(s) lack inputs (see column missing_inputs)")
    for p in paths.values():
        con.print(f"wrote {p}")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f} ({100 * x:.2f} %)"


@model.command()
@click.option("--param", "params", multiple=True,
              help="input to sweep: P_a, q, p_d, rtt, rto, b or wm (repeatable; default: P_a and q)")
@click.option("--from", "start", type=Number(), default=None, help="first value (with one --param)")
@click.option("--to", "stop", type=Number(), default=None, help="last value (with one --param)")
@click.option("--steps", type=click.IntRange(2, 100000), default=None, help="number of values (with --from/--to)")
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=Path("model_sweep"), show_default=True,
              help="output directory")
@click.option("--p-d", "p_d", type=INPUT["p_d"], default=None, help="base p_d (default 0.007526)")
@click.option("--ack-burst-loss", "P_a", type=INPUT["P_a"], default=None,
              help="base ACK burst loss probability P_a (default 0.001)")
@click.option("--P-a", "--p-a", "old_P_a", type=INPUT["P_a"], default=None, hidden=True)
@click.option("--q", "q", type=INPUT["q"], default=None, help="base q (default 0.2726)")
@click.option("--rtt", type=INPUT["rtt"], default=None, help="base RTT in s (default 0.2)")
@click.option("--rto", "--T", "rto", type=INPUT["T"], default=None, help="base T in s (default 2.0)")
@click.option("--b", "b", type=INPUT["b"], default=None, help="base b (default 2)")
@click.option("--wm", "--W-m", "wm", type=INPUT["W_m"], default=None, help="base W_m in packets (default 1000)")
@click.option("--allow-any-b", is_flag=True, help="evaluate the as_printed variant also for b != 2")
def sweep(params, start, stop, steps, out, p_d, P_a, old_P_a, q, rtt, rto, b, wm, allow_any_b) -> None:  # noqa: N803
    """Sweep one input at a time and plot throughput per model and variant (PNG + CSV).

    Base point: seed 001's averages (models.md E2) unless overridden.
    """
    import numpy as np

    P_a = _old_P_a(P_a, old_P_a)
    from hsrtcp.models.sweeping import canonical_param, plot_sweep
    from hsrtcp.models.sweeping import sweep as run_sweep

    params = params or ("P_a", "q")
    try:
        canon = [canonical_param(p) for p in params]
    except ModelDomainError as exc:
        raise click.BadParameter(str(exc), param_hint="--param") from None
    values = None
    if start is not None or stop is not None or steps is not None:
        if len(canon) != 1 or start is None or stop is None:
            raise click.UsageError("--from/--to/--steps need exactly one --param and both --from and --to")
        from hsrtcp.models.sweeping import domain_problem

        for hint, v in (("--from", start), ("--to", stop)):  # the domain is an interval: so is every value between
            if domain_problem(canon[0], v):
                raise click.BadParameter(domain_problem(canon[0], v), param_hint=hint)
        values = np.linspace(start, stop, steps or 50)
    base = {k: v for k, v in (("p_d", p_d), ("P_a", P_a), ("q", q), ("rtt", rtt), ("T", rto), ("b", b),
                              ("W_m", wm)) if v is not None}
    out.mkdir(parents=True, exist_ok=True)
    con = _console()
    from hsrtcp.models.fitting import _atomic

    for p in canon:
        table = run_sweep(p, values, base=base, allow_any_b=allow_any_b)
        csv = out / f"sweep_{p}.csv"
        png = out / f"sweep_{p}.png"
        _atomic(csv, lambda f, t=table: t.write_csv(f))
        plot_sweep(table, png, base=base)
        n_undef = table.get_column("throughput_pkts").null_count()
        con.print(f"wrote {csv} and {png} ({table.height} rows, {n_undef} undefined)")
