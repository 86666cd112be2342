"""The `hsrtcp` command line.

:func:`main` runs a command line and returns its exit code; :func:`entry` is the ``hsrtcp``
program (the console script and ``python -m hsrtcp``). A plain ``hsrtcp analyze CAPTURE...``
is parsed by :mod:`hsrtcp.cli.quick` without importing click (start-up is a large part of a
short run: see docs/design.md, "Start-up"); everything else goes to the click group in
:mod:`hsrtcp.cli.group`, where each subcommand lives in its own module and is imported only
when it is run.

Exit codes: 0 success, 2 usage error, 3 input error (bad capture, bad file), 4 internal error
(:class:`hsrtcp.errors.ExitCode`, docs/cli.md).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, *, exit_when_quick: bool = False) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    ``exit_when_quick`` (for :func:`entry` only): after a command line the quick parser
    ran, end the process at once (:func:`_exit_now`) instead of returning.
    """
    from hsrtcp.errors import ExitCode, InputError, LabError
    from hsrtcp.output import shown

    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    try:
        from hsrtcp.cli.quick import quick_analyze

        code = quick_analyze(args)
        if code is not None:
            if exit_when_quick:
                _exit_now(code)
            return code
        from hsrtcp.cli.group import run_group

        return run_group(args)
    except (InputError, LabError) as exc:
        print(f"error: {shown(str(exc))}", file=sys.stderr)
        return ExitCode.INPUT
    except OSError as exc:  # a file or directory the system refused (output side mostly)
        where = f"{shown(exc.filename)}: " if exc.filename is not None else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return ExitCode.INPUT
    except UnicodeError as exc:  # a name or a text file that is not UTF-8
        print(f"error: {shown(str(exc))}", file=sys.stderr)
        return ExitCode.INPUT
    except KeyboardInterrupt:
        # Whatever was staged is gone by now (the output set aborted on the way out).
        print("interrupted", file=sys.stderr)
        if exit_when_quick:
            # Threads still in native code that cannot be stopped (the two-vantage matcher)
            # must not hold the exit up.
            sys.stderr.flush()
            import os

            os._exit(ExitCode.INTERRUPTED)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - last line of defence, with a clear label
        import traceback

        traceback.print_exc()
        print(f"internal error: {exc!r}", file=sys.stderr)
        return ExitCode.INTERNAL


def entry() -> int:
    """The ``hsrtcp`` program: :func:`main` on ``sys.argv``, for the console script."""
    import os

    # polars' own jemalloc reads _RJEM_MALLOC_CONF (not MALLOC_CONF) once, when polars loads,
    # so only the program can set it: one arena, no thread caches keep 20-30 MB less of a
    # long radio log's scan at the same CPU (issue 32, bench/README.md). An option the value
    # already holds wins: the user's, or polars' own defaults, which its import writes into
    # the environment of a Python process that then starts this one.
    conf = os.environ.get("_RJEM_MALLOC_CONF", "")
    have = {kv.split(":")[0] for kv in conf.split(",")}
    ours = [kv for kv in ("narenas:1", "tcache:false") if kv.split(":")[0] not in have]
    if ours:
        os.environ["_RJEM_MALLOC_CONF"] = ",".join([*ours, conf] if conf else ours)
    return main(exit_when_quick=True)


def _exit_now(code: int) -> None:
    """End the process the way the interpreter would, minus its teardown.

    What a quick run loaded (the native module, a few small modules; rich or polars for the
    summary and the plot) needs nothing from the interpreter's teardown: the tables are
    closed and renamed by then. The teardown itself (the final garbage collection, clearing
    every module) took 2-3 ms of a 75 ms run on a million-packet capture. Everything a
    program can observe still happens in the usual order: waiting for non-daemon threads,
    the ``atexit`` handlers, flushing stdout and stderr.
    """
    import os

    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # noqa: SLF001 - what Py_FinalizeEx calls first
    import atexit

    atexit._run_exitfuncs()  # noqa: SLF001 - what Py_FinalizeEx calls next
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or broken pipe: nothing more can be said
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    sys.exit(entry())
