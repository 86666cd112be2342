"""``hsrtcp scenario``: generate, show and check HSR emulation scenarios.

    hsrtcp scenario generate scenarios/bt-300kmh.toml -o out/bt [--seed N] [--duration S]
    hsrtcp scenario generate --speed 300 --area urban --duration 60 -o out/u60
    hsrtcp scenario show out/bt -o out/bt/scenario.png
    hsrtcp scenario check out/bt            # self-consistency + rattan's own reading
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from hsrtcp.errors import InputError


@click.group("scenario")
def scenario() -> None:
    """HSR scenarios: compile a trip (TOML) into a Rattan config, traces and ground truth."""


@scenario.command("generate")
@click.argument("scenario_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", "outdir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (created; files in it are replaced).")
@click.option("--seed", type=int, default=None, help="Override [scenario] seed.")
@click.option("--duration", type=float, default=None, help="Emulated window length, seconds.")
@click.option("--start", type=float, default=None, help="Window start inside the trip, seconds.")
@click.option("--speed", type=float, default=None, help="Without a file: constant speed, km/h (default 300).")
@click.option("--area", type=str, default=None,
              help="Without a file: area type (dense_urban, urban, suburban, rural, farmland).")
@click.option("--carriers", type=click.IntRange(1, 8), default=None,
              help="Without a file: number of carriers = emulated paths (default 1).")
@click.option("--handoff-times", default=None, metavar="T1,T2,...",
              help="Handoffs exactly at these window seconds on every carrier ([handoff] times_s).")
@click.option("--handoff-count", type=click.IntRange(0, 10000), default=None, metavar="N",
              help="Exactly N handoffs, evenly spread over the window ([handoff] count).")
@click.option("--no-draw", is_flag=True, help="Do not draw the trip into OUTDIR/scenario.png.")
def generate(scenario_file, outdir, seed, duration, start, speed, area, carriers, handoff_times,
             handoff_count, no_draw) -> None:
    """Compile SCENARIO_FILE (or a scenario made of the options) into OUTDIR.

    Writes rattan.toml, traces/*.json, radio.csv, events.csv and scenario.json, draws the trip
    (speed, signal, capacity, handoffs, outages) into scenario.png as `scenario show` does, and
    prints the commands to run next. The same seed always gives byte-identical files.
    """
    from hsrtcp.lab import scenario as sc_mod
    from hsrtcp.lab.scenario.config import ScenarioError, check_overrides

    try:
        check_overrides("command line", seed=seed, duration_s=duration, start_s=start)
    except ScenarioError as exc:
        raise click.UsageError(str(exc).removeprefix("command line: ")) from None
    if outdir.exists() and not outdir.is_dir():
        raise click.UsageError(f"-o {outdir}: exists and is not a directory")
    if scenario_file is not None:
        if any(v is not None for v in (speed, area, carriers)):
            raise click.UsageError("--speed/--area/--carriers build a scenario without a file; "
                                   "with SCENARIO_FILE edit the file instead")
        if not scenario_file.exists():
            raise InputError(f"{scenario_file}: scenario file not found")
        sc = sc_mod.load(scenario_file)
    else:
        try:
            sc = sc_mod.load(sc_mod.from_options(speed_kmh=speed, area=area, duration_s=duration,
                                                 carriers=carriers, seed=seed))
        except ScenarioError as exc:  # a scenario of the options alone: their values are at fault
            msg = str(exc).removeprefix("<dict>: ")
            for key, opt in (("speed_kmh", "--speed"), ("area", "--area")):
                msg = msg.replace(f"[trip] key {key!r}", f"option {opt} ([trip] {key})")
            raise click.UsageError(msg) from None
    sc = sc.with_overrides(seed=seed, duration_s=duration, start_s=start)
    if handoff_times is not None or handoff_count is not None:
        sc = _fixed_handoffs(sc, handoff_times, handoff_count)
    from hsrtcp.lab.scenario import advice

    for w in advice.warnings(sc):
        click.echo(f"warning: {w}", err=True)
    cs = sc.compile(outdir)
    for w in advice.end_outages(cs.events_csv, cs.duration_s):
        click.echo(f"warning: {w}", err=True)
    doc = json.loads(cs.scenario_json.read_text())
    click.echo(f"{outdir}: scenario {sc.name!r}, seed {cs.seed}, {cs.paths} path(s), {cs.duration_s:.1f} s")
    for name, s in doc["summary"].items():
        mi = "-" if s["mean_interval_s"] is None else f"{s['mean_interval_s']:.1f} s"
        sh = "-" if s["share_intervals_le_10s"] is None else f"{100 * s['share_intervals_le_10s']:.0f} %"
        click.echo(f"  carrier {name}: {s['handoffs']} handoffs ({s['inter_system_handoffs']} inter-system), "
                   f"mean interval {mi}, intervals <= 10 s: {sh}")
    if not no_draw:
        from hsrtcp.lab.scenario.plot import show as _show

        click.echo(f"  the trip drawn: {_show(outdir, outdir / 'scenario.png')}")
    flow = max(1, int(cs.duration_s) - 2)  # ends inside the window (docs/lab.md)
    # several carriers: a single-path flow must say which one it uses (as in a campaign)
    path = " --path 1" if cs.paths > 1 else ""
    click.echo("next:")
    click.echo(f"  hsrtcp scenario show {outdir}          # draw the trip: speed, signal, capacity, handoffs"
               + (" (again)" if not no_draw else ""))
    click.echo(f"  hsrtcp emulate -s {outdir}/rattan.toml -o run -- \\\n"
               f"      hsrtcp measure client '$HSRTCP_SERVER' --cc cubic -t {flow}{path}"
               "   # one download through it (root)")
    if cs.paths > 1:
        click.echo(f"      (--path P: the flow uses carrier P of {cs.paths}; "
                   "emulate --mptcp and client --mptcp use them all)")
    click.echo("  hsrtcp campaign CAMPAIGN.toml -o runs   # many runs of the scenario file (docs/lab.md)")


def _fixed_handoffs(sc, times_text, count):
    """``sc`` with [handoff] times_s or count from the command line (checked like the keys)."""
    import copy

    from hsrtcp.lab import scenario as sc_mod
    from hsrtcp.lab.scenario.config import ScenarioError, fixed_handoffs

    times = None
    if times_text is not None:
        try:
            times = [float(x) for x in times_text.split(",") if x.strip()]
        except ValueError:
            raise click.BadParameter(f"{times_text!r}: expected window seconds separated by commas, e.g. 5,12.5,30",
                                     param_hint="--handoff-times") from None
    _, window = sc.window()
    try:
        fixed = fixed_handoffs("command line", "option", times, count, window)
    except ScenarioError as exc:
        msg = str(exc).removeprefix("command line: option ")
        msg = msg.replace("keys 'times_s' and 'count'", "--handoff-times and --handoff-count")
        raise click.UsageError(msg.replace("key 'times_s'", "--handoff-times").replace("key 'count'", "--handoff-count")) \
            from None
    params = copy.deepcopy(sc.params)
    for k in ("times_s", "count"):
        params["handoff"].pop(k, None)
    params["handoff"].update(fixed)
    return sc_mod.Scenario(params, sc.source)


@scenario.command("show")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="PNG to write (default OUTDIR/scenario.png).")
def show(outdir, png) -> None:
    """Plot speed, RSRP per carrier, bandwidth per path and handoffs/outages of a compiled OUTDIR."""
    from hsrtcp.lab.scenario.plot import show as _show

    path = _show(outdir, png or outdir / "scenario.png")
    click.echo(str(path))


@scenario.command("check")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rattan", "rattan_exe", default=None, help="rattan binary (default: from PATH or ~/.cargo/bin).")
@click.option("--no-rattan", is_flag=True, help="Only the self-consistency checks.")
def check(outdir, rattan_exe, no_rattan) -> None:
    """Check a compiled OUTDIR: traces cover the window, never 0 bit/s, outages aligned, and
    (when rattan is installed) rattan's --visualize-trace reading equals the scenario's."""
    from hsrtcp.lab.scenario import CompiledScenario
    from hsrtcp.lab.scenario.traces import check_against_rattan, rattan_binary, self_check

    from hsrtcp.lab import rattan as rattan_mod

    cs = CompiledScenario.open(outdir)
    problems = self_check(cs)
    config_ok = True
    try:  # the files rattan.toml names, relative to it (what rattan would fail on, exit 78)
        rattan_mod.validate_config(rattan_mod.load_config(cs.rattan_config), cs.rattan_config)
    except InputError as exc:
        problems.append(str(exc))
        config_ok = False
    exe = rattan_exe or rattan_binary()
    if not no_rattan and config_ok:
        if exe is None:
            click.echo("rattan not found: skipped the comparison with rattan's reading", err=True)
        else:
            problems += check_against_rattan(cs, exe)
    for p in problems[:50]:
        click.echo(f"  {p}", err=True)
    if problems:
        raise InputError(f"{outdir}: {len(problems)} problem(s)")
    click.echo(f"{outdir}: ok ({'self-consistency' + ('' if no_rattan or exe is None else ' + rattan reading')})")


@scenario.command("export-mahimahi")
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@click.option("-o", "--out", "dest", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the traces p<k>.down / p<k>.up (created).")
def export_mahimahi(outdir, dest) -> None:
    """Write the capacity of a compiled OUTDIR as Mahimahi (mm-link) traces, one per path and
    direction. Held outages become gaps; loss, dropped outages and delay are not expressible
    in a Mahimahi trace and are left out (use mm-loss / mm-delay alongside)."""
    from hsrtcp.lab.scenario import CompiledScenario
    from hsrtcp.lab.scenario.mahimahi import export

    if not outdir.is_dir():
        raise InputError(f"{outdir}: not a compiled scenario directory")
    cs = CompiledScenario.open(outdir)
    for f in export(cs, dest):
        click.echo(str(f))
