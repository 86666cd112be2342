"""The one writer of single output files: :func:`output_path`, :func:`write_file`,
:func:`write_text`, :func:`open_output` (docs/formats/output.md, "Single files").

Every ``-o FILE`` of hsrtcp (query, report, plot, model figures) goes through here, and every
file the lab and the docs generator replace in place (bundle manifests, Rattan configs,
readiness markers, generated docs):

- a **regular file** (or a new name) is written under a temporary name beside it
  (``.hsrtcp-tmp.PID.XXXXXXXX.NAME``), flushed to disk, then renamed over it: a reader sees
  the old file or the new one, never half of one; the file keeps its permission bits;
- a **symbolic link** is followed, the file it points to is written as above (the link
  stays a link);
- a **character device or FIFO** (``/dev/null``, a named pipe, a terminal) is written
  through, never replaced: the file is made in the temporary directory (many writers seek,
  which a pipe cannot), then its bytes are copied in. ``/dev/stdout``, ``/dev/stderr`` and
  ``/dev/fd/N`` write to this process's own descriptor, as a shell redirection would
  (``>>`` appends);
- a directory, a block device or a socket is refused.

Whatever happens (an error, Ctrl-C), the temporary file is removed. A failure that comes
from the disk (full, quota, read-only, permission) is an :class:`OutputError` naming the
file and the reason ("No space left on device"), exit 3; the previous file is untouched.

``reads``: the results directories the command reads. A file there that is a table or
belongs to one (``*.parquet``, ``*.arrows``, ``*.csv``, ``*.json``, a manifest) is never
overwritten, and no new ``*.parquet`` is added: the command would change its own input.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from hsrtcp.errors import OutputError
from hsrtcp.output import TMP, _quiet_unlink, output_error, shown

# what a results directory's tables are made of: never written by a command that reads it
TABLES = (".parquet", ".arrows")
PROTECTED = (*TABLES, ".csv", ".json")


# -- where the bytes go -------------------------------------------------------------------
_OWN_FD = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd/(\d+)")


class _Target:
    """What ``path`` is: ``kind`` "file" (a regular file or a new one, at ``real``), "stream"
    (a character device or FIFO: written through at ``real``) or "fd" (this process's own
    descriptor ``fd``)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.given = os.fsdecode(path)  # (bytes that are not UTF-8 survive as surrogates)
        if not self.given:
            raise OutputError("the output file name is empty")
        self.shown = shown(self.given)
        self.fd: int | None = None
        self.mode: int | None = None
        self.named: list[str] = []  # every link on the way, and where it ends
        cur = self.given
        for _ in range(40):
            loc = os.path.join(os.path.realpath(os.path.dirname(cur) or os.curdir), os.path.basename(cur))
            self.named.append(loc)
            m = _OWN_FD.fullmatch(loc)
            if m and int(m.group(1)) == os.getpid():
                self.fd, self.kind, self.real = int(m.group(2)), "fd", loc
                return
            try:
                st = os.lstat(loc)
            except FileNotFoundError:
                self.kind, self.real = "file", loc
                return
            except OSError as exc:
                raise OutputError(f"{self.shown}: cannot write: {exc.strerror}") from None
            if not stat.S_ISLNK(st.st_mode):
                break
            cur = os.path.join(os.path.dirname(loc), os.readlink(loc))
        else:
            raise OutputError(f"{self.shown}: cannot write: {os.strerror(errno.ELOOP)}")
        self.real, self.mode, self.st = loc, st.st_mode, st
        if stat.S_ISREG(st.st_mode):
            self.kind = "file"
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            self.kind = "stream"
        else:
            what = ("a directory" if stat.S_ISDIR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise OutputError(f"{self.shown}: is {what}; hsrtcp writes a regular file, a character device "
                              f"or a FIFO")

    def check_reads(self, reads: Iterable[str | os.PathLike]) -> None:
        """Refuse a table of a results directory the command reads (see the module docstring)."""
        if self.kind != "file":
            return
        tops = [(d, os.path.realpath(os.fsdecode(d))) for d in reads]
        for loc in self.named:  # the name given, and a table a link there points to
            name = os.path.basename(loc)
            # an existing table or manifest; a new Parquet file would join the tables
            if not (name.endswith(TABLES) or (os.path.lexists(loc) and (name.endswith(PROTECTED)
                                                                        or name.startswith("hsrtcp-manifest")))):
                continue
            for d, top in tops:
                if os.path.isdir(top) and os.path.commonpath([top, os.path.dirname(loc)]) == top:
                    raise OutputError(f"{self.shown}: would {'overwrite' if os.path.lexists(loc) else 'add'} a "
                                      f"table of the results directory {shown(d)}, which this command reads; "
                                      f"write the output elsewhere")


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _temporary(directory: str, name: str) -> str:
    """A new empty file in ``directory`` named after ``name`` (which stays at the end: some
    writers look at the suffix)."""
    import tempfile

    tail = os.fsdecode(os.fsencode(name)[-120:])
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP}{os.getpid()}.", suffix=f".{tail}", dir=directory)
    os.close(fd)
    return tmp


def _copy_out(tmp: str, target: _Target) -> None:
    """The bytes of ``tmp`` into the stream or descriptor ``target``."""
    import sys

    if target.kind == "fd":
        for s in (sys.stdout, sys.stderr):  # what was printed before comes first
            try:
                s.flush()
            except (OSError, ValueError, AttributeError):
                pass
        out, close = target.fd, False
    else:
        out, close = os.open(target.real, os.O_WRONLY | os.O_CLOEXEC), True
    try:
        with open(tmp, "rb") as src:
            while chunk := src.read(1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
    finally:
        if close:
            os.close(out)


def check_output(path: str | os.PathLike, *, reads: Iterable[str | os.PathLike] = ()) -> None:
    """Refuse ``path`` now, before a long build, for what :func:`output_path` would refuse at
    the end (a table of a directory read, a directory, a socket): no work is done for an
    output that cannot be written. Raises :class:`OutputError` naming ``path``."""
    _Target(path).check_reads(reads)


@contextmanager
def output_path(path: str | os.PathLike, *, reads: Iterable[str | os.PathLike] = (),
                make_parents: bool = True) -> Iterator[str]:
    """The path to write the file that becomes ``path`` when the block ends without error
    (see the module docstring). Raises :class:`OutputError` naming ``path``."""
    target = _Target(path)
    target.check_reads(reads)
    if target.kind == "file":
        parent = os.path.dirname(target.real) or os.curdir
        if len(target.named) > 1 and not os.path.isdir(parent):
            # a link is written through as a shell would: its target's directories are not made
            raise OutputError(f"{target.shown}: cannot write: links to {shown(target.real)}, whose "
                              f"directory does not exist")
        if make_parents and not os.path.isdir(parent):
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"{shown(parent)}: cannot create the directory: {exc.strerror}") from None
        where = parent
    else:
        import tempfile

        where = tempfile.gettempdir()
    tmp = None
    try:
        try:
            tmp = _temporary(where, os.path.basename(target.real) if target.kind == "file" else "out")
            mode = stat.S_IMODE(target.mode) if target.kind == "file" and target.mode is not None \
                else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError as exc:
            raise OutputError(f"{target.shown}: cannot write in {shown(where)}: {exc.strerror}") from None
        try:
            yield tmp
            if target.kind == "file":
                _finish_file(tmp, target)
            else:
                _copy_out(tmp, target)
        except BaseException as exc:
            err = output_error(exc, target.given, where)
            _quiet_unlink(tmp)
            tmp = None
            if err is None:
                raise
            raise err from None
    finally:
        if tmp is not None:
            _quiet_unlink(tmp)


def _finish_file(tmp: str, target: _Target) -> None:
    fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)  # a late write error (quota, NFS) shows here, before the old file goes
        if target.mode is not None and os.geteuid() == 0:
            try:  # root replacing someone's file keeps it theirs
                os.fchown(fd, target.st.st_uid, target.st.st_gid)
            except OSError:
                pass
    finally:
        os.close(fd)
    os.replace(tmp, target.real)


def write_file(path: str | os.PathLike, write: Callable[[str], object], *,
               reads: Iterable[str | os.PathLike] = (), make_parents: bool = True) -> str:
    """``write(tmp)`` writes the file at the path it is given; it becomes ``path`` (see
    :func:`output_path`). Returns ``path``."""
    with output_path(path, reads=reads, make_parents=make_parents) as tmp:
        write(tmp)
    return os.fspath(path)


def write_text(path: str | os.PathLike, text: str, *, make_parents: bool = True) -> str:
    """``text`` (UTF-8) as the file ``path``, written as :func:`write_file` writes."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return write_file(path, write, make_parents=make_parents)


@contextmanager
def open_output(path: str | os.PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
                newline: str | None = None, reads: Iterable[str | os.PathLike] = ()) -> Iterator:
    """An open file (``mode`` "w" or "wb") that becomes ``path`` when the block ends."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    with output_path(path, reads=reads) as tmp:
        if mode == "wb":
            with open(tmp, "wb") as f:
                yield f
        else:
            with open(tmp, "w", encoding=encoding, newline=newline) as f:
                yield f
