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
