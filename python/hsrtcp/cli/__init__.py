"""The `hsrtcp` command line.

:func:`main` is the entry point. A plain ``hsrtcp analyze CAPTURE...`` is parsed by
:mod:`hsrtcp.cli.quick` without importing click (start-up is a large part of a short run:
see docs/design.md, "Start-up"); everything else goes to the click group in
:mod:`hsrtcp.cli.group`, where each subcommand lives in its own module and is imported only
when it is run.

Exit codes: 0 success, 2 usage error, 3 input error (bad capture, bad file), 4 internal error.
"""

from __future__ import annotations

import sys

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERNAL = 4


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    from hsrtcp.errors import InputError, LabError

    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    try:
        from hsrtcp.cli.quick import quick_analyze

        code = quick_analyze(args)
        if code is not None:
            return code
        from hsrtcp.cli.group import run_group

        return run_group(args)
    except (InputError, LabError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - last line of defence, with a clear label
        import traceback

        traceback.print_exc()
        print(f"internal error: {exc!r}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
