"""Exceptions of hsrtcp. Each subclasses a built-in so callers can catch broadly."""


class HsrtcpError(Exception):
    """Base class of hsrtcp's own errors."""


class InputError(HsrtcpError, ValueError):
    """A file given to hsrtcp is unreadable or malformed; the message names file and position."""


class OutputError(InputError):
    """The output directory or one of its files cannot be written; the message names the path.
    (An :class:`InputError`: the command line gave a place that cannot take the results.)"""


class LabError(HsrtcpError, RuntimeError):
    """The lab could not set up or run an experiment (namespaces, emulator, tools)."""


class ModelDomainError(HsrtcpError, ValueError):
    """A throughput model was given inputs outside its domain."""


class ExitCode:
    """The exit codes of hsrtcp's commands (docs/cli.md, "Exit codes"). Plain ints in a class
    rather than an ``enum.IntEnum``: this module is on the start-up path of ``hsrtcp analyze``,
    which imports nothing it can avoid (docs/design.md, "Start-up"), and ``enum`` pulls in
    ``functools`` and ``collections``."""

    OK = 0
    #: the command ran but what it checked or ran did not all succeed: ``doctor`` (a part asked
    #: about is missing), ``measure`` (a flow failed), ``campaign`` (a run failed)
    FAILED = 1
    #: a bad option or option value (click's UsageError / BadParameter)
    USAGE = 2
    #: a file that cannot be read or written (InputError, OutputError, LabError); partial results written
    INPUT = 3
    #: a defect: the traceback is printed
    INTERNAL = 4
    #: Ctrl-C (128 + SIGINT)
    INTERRUPTED = 130
    #: SIGTERM (128 + SIGTERM), a corpus run stopped by its scheduler
    TERMINATED = 143
