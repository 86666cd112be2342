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
def generate(scenario_file, outdir, seed, duration, start, speed, area, carriers) -> None:
    """Compile SCENARIO_FILE (or a scenario made of the options) into OUTDIR.

    Writes rattan.toml, traces/*.json, radio.csv, events.csv and scenario.json. The same seed
    always gives byte-identical files.
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
        sc = sc_mod.load(sc_mod.from_options(speed_kmh=speed, area=area, duration_s=duration,
                                             carriers=carriers, seed=seed))
    sc = sc.with_overrides(seed=seed, duration_s=duration, start_s=start)
    cs = sc.compile(outdir)
    doc = json.loads(cs.scenario_json.read_text())
    click.echo(f"{outdir}: scenario {sc.name!r}, seed {cs.seed}, {cs.paths} path(s), {cs.duration_s:.1f} s")
    for name, s in doc["summary"].items():
        mi = "-" if s["mean_interval_s"] is None else f"{s['mean_interval_s']:.1f} s"
        sh = "-" if s["share_intervals_le_10s"] is None else f"{100 * s['share_intervals_le_10s']:.0f} %"
        click.echo(f"  carrier {name}: {s['handoffs']} handoffs ({s['inter_system_handoffs']} inter-system), "
                   f"mean interval {mi}, intervals <= 10 s: {sh}")
    click.echo(f"  run it: rattan run -c {cs.rattan_config} --left ... --right ...")


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
