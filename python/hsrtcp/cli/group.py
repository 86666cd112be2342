"""The click group behind `hsrtcp`: every subcommand, its help and its usage errors.

Each subcommand lives in its own module of this package and is imported only when it is
run, so `hsrtcp --help` stays fast and a broken optional dependency of one subcommand
does not break the others.
"""

from __future__ import annotations

import importlib

import click

from hsrtcp.errors import ExitCode

# name -> "module:attribute" (a click.Command), relative to this package.
SUBCOMMANDS: dict[str, str] = {
    "analyze": "analyze:analyze",
    "demo": "analyze:demo",
    "doctor": "doctor:doctor",
    "model": "model:model",
    "scenario": "lab_scenario:scenario",
    "measure": "lab:measure",
    "emulate": "lab:emulate",
    "campaign": "lab:campaign",
    "plot": "plot:plot",
    "query": "query:query",
    "study": "study:study",
    "report": "report:report",
    "mptcp": "mptcp:mptcp",
    "compare": "compare:compare",
    "users": "users:users",
    "apps": "apps:apps",
    "congestion": "congestion:congestion",
    "figures": "figures:figures",
    "audit": "audit:audit",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(f"hsrtcp.cli.{module}"), attr)
        except (ImportError, AttributeError) as exc:  # a subcommand not built yet
            return click.Command(name, help=f"(unavailable: {exc})", callback=_unavailable(name, exc))


def _unavailable(name: str, exc: Exception):
    def callback() -> None:
        raise click.ClickException(f"subcommand {name!r} is unavailable: {exc}")

    return callback


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=lambda ctx, p, v: _version(ctx, v),
              help="Show the version, the commit and the built parts, and exit.")
def cli() -> None:
    """hsrtcp: TCP and MPTCP under high-speed mobility: analyze captures, model, emulate."""


def _version(ctx: click.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from hsrtcp.cli.doctor import version_text

        click.echo(version_text())
        ctx.exit()


def run_group(args: list[str]) -> int:
    """Run ``args`` through the click group; click's own errors become exit codes here,
    hsrtcp's errors are left to :func:`hsrtcp.cli.main`."""
    try:
        cli.main(args=args, prog_name="hsrtcp", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # Ctrl-C: reported by hsrtcp.cli.main
        click.echo("aborted", err=True)
        return ExitCode.INTERRUPTED
    except click.UsageError as exc:
        exc.show()
        return ExitCode.USAGE
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code if exc.exit_code != 1 else ExitCode.INPUT
    except SystemExit as exc:  # a command's own exit code (`raise SystemExit(run(...))`)
        return exc.code if isinstance(exc.code, int) else ExitCode.OK
    return ExitCode.OK
