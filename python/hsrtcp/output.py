"""A results directory written all at once: :class:`OutputSet` (docs/formats/output.md).

A run's files (Parquet tables, CSVs, ``pair_stats``, the plot) appear together or not at
all, and never mix with another run's:

1. **open**: create the directory and take its lock (``.hsrtcp.lock``, an advisory
   ``flock`` the kernel drops when the process ends, even on SIGKILL). A second run into
   the same directory is refused at once with the holder's pid rather than made to wait:
   runs are long, and waiting silently looks like a hang. Holding the lock also proves
   that temporary files found in the directory belong to dead runs: they are removed.
2. **stage**: every file is written under a temporary name in the directory itself
   (``.hsrtcp-new.NAME``; the same file system, so renames are atomic).
3. **commit**: every target is checked first (a directory in the way stops the commit
   before anything moves); the previous run's files (those its manifest lists, and any
   of hsrtcp's own output names) are moved aside, the new files renamed in, and the
   manifest ``hsrtcp-manifest.txt`` written. If any rename fails, what moved is moved back:
   the directory is as before. Only then are the previous files deleted.
4. **abort**: the staged files are removed, the directory is as before.

Other commands that write a set of files (``model fit``, ``scenario generate``) use the same
protocol with a manifest of their own (``manifest=``), so that writing them into an
analysis directory never touches the analysis's files. Their names may reach one
subdirectory down (``traces/bw_down_p1.json``): such a file is staged, and moved aside, in
its own subdirectory.

Like :mod:`hsrtcp.runner` this module is on the command line's start-up path: it imports
only ``os`` and ``fcntl`` (a few tens of microseconds).
"""

from __future__ import annotations

import os

from hsrtcp.errors import HsrtcpError, OutputError

LOCK = ".hsrtcp.lock"
MANIFEST = "hsrtcp-manifest.txt"
MANIFEST_HEADER = "# hsrtcp results: the files of the last run (docs/formats/output.md), format 1"
NEW = ".hsrtcp-new."
OLD = ".hsrtcp-old."
TMP = ".hsrtcp-tmp."  # a single file being written (hsrtcp.atomic)
# Output names of runs from before the manifest existed (a table, its CSV, the plot).
KNOWN = frozenset([f"{t}.{ext}" for t in ("flows", "events", "rtt", "series", "captures", "pair_stats")
                   for ext in ("parquet", "csv")] + ["throughput.png"])


def shown(path: str | bytes | os.PathLike) -> str:
    """``path`` as text that can always be printed: bytes that are not UTF-8 become U+FFFD."""
    p = os.fsdecode(path)
    try:
        p.encode("utf-8")
        return p
    except UnicodeEncodeError:
        return os.fsencode(p).decode("utf-8", "replace")


# -- why a write failed (single files, hsrtcp.atomic, and the files of a set) ------------
# how writers that drop the errno (Rust, DuckDB, Arrow) still spell it, by errno name
_SPELLED = (
    ("ENOSPC", r"No space left on device|os error 28\b|errno\W+28\b"),
    ("EDQUOT", r"Disk quota exceeded|os error 122\b"),
    ("EROFS", r"Read-only file system|os error 30\b"),
    ("EFBIG", r"File too large|os error 27\b"),
)


def _chain(exc: BaseException):
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]


def disk_full(where: str | os.PathLike) -> bool:
    """The file system holding ``where`` has no block or no inode left for anyone."""
    try:
        st = os.statvfs(where)
    except OSError:
        return False
    return st.f_bavail == 0 or (st.f_files > 0 and st.f_favail == 0)


def failure_reason(exc: BaseException, where: str | os.PathLike | None = None) -> str | None:
    """Why writing failed, as the system says it ("No space left on device"), or None when
    ``exc`` is not an I/O failure (a defect, Ctrl-C, an hsrtcp error). Looks through the
    exception's chain (an error while cleaning up after a full disk still names the disk),
    the text of writers that drop the errno, and last the free space of the file system
    holding ``where`` (call it while the failed file still takes its space)."""
    import errno
    import re  # (here, not at the top: this module is on the start-up path, see above)

    if not isinstance(exc, Exception) or isinstance(exc, HsrtcpError):
        return None
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno:
            return os.strerror(e.errno)  # (Arrow puts its whole message in strerror)
        text = str(e)
        for code, pattern in _SPELLED:
            if re.search(pattern, text):
                return os.strerror(getattr(errno, code))
    # Writers that lose the errno on the way (polars: "Invalid thrift: transport error"):
    # a writer that failed on a full disk failed because of it.
    if where is not None and disk_full(where):
        return os.strerror(errno.ENOSPC)
    return None


# ---------------------------------------------------------------- the lock (.hsrtcp.lock)
#
# One protocol for every writer of a directory (OutputSet here, a corpus run's
# hsrtcp.scale.lock.ResultsLock): an advisory flock on the file, which holds the holder's pid.

class LockHeld(Exception):
    """Another process holds the lock; ``holder``: the pid its file names."""

    def __init__(self, holder: str):
        super().__init__(holder)
        self.holder = holder


def lock_file(path: str) -> int:
    """``path`` opened (created) and flocked, without waiting: its fd. OSError when it cannot
    be opened; :class:`LockHeld` when another process holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise LockHeld(holder) from None
    return fd


def claim(fd: int) -> None:
    """Write this process's pid into the locked file (OSError when the disk refuses)."""
    # Fixed width instead of truncating first: on ext4 truncating the file to zero took
    # 7 ms (a flush of the file's data), a tenth of a whole run.
    os.pwrite(fd, f"{os.getpid():<20}\n".encode(), 0)


def unlock_file(fd: int) -> None:
    """Blank the pid (the file left behind names no process once this one ends), then close:
    the flock goes; the file stays (unlinking it would race)."""
    try:
        os.pwrite(fd, b" " * 20 + b"\n", 0)
    except OSError:
        pass
    os.close(fd)


def output_error(exc: BaseException, path: str | os.PathLike,
                 where: str | os.PathLike | None = None) -> OutputError | None:
    """:class:`OutputError` "PATH: cannot write: REASON" for a failure writing ``path``
    (``where``: a place on its file system, for the free-space check), or None when ``exc``
    is not an I/O failure (then it must go on as it is)."""
    reason = failure_reason(exc, where)
    if reason is None:
        if isinstance(exc, OSError):  # an I/O error that says nothing more ("lseek failed")
            reason = str(exc)
        else:
            return None
    return OutputError(f"{shown(path)}: cannot write: {reason}")


def _leftover(name: str) -> bool:
    """A temporary file of an hsrtcp run (this version's staging names, a single file's
    ``.hsrtcp-tmp.PID.*`` of a process that is gone, and the ``.TABLE.parquet.tmpPID``
    names earlier versions used)."""
    if name.startswith((NEW, OLD, "." + NEW)):  # (the last: a plot's own temporary file)
        return True
    if name.startswith(TMP):  # hsrtcp.atomic's: another process may be writing it now
        pid = name[len(TMP):].partition(".")[0]
        return pid.isdigit() and not _alive(int(pid))
    head, sep, pid = name.rpartition(".tmp")
    return bool(sep) and pid.isdigit() and head.startswith(".") and head[1:] in KNOWN


class OutputSet:
    """The files of one run in directory ``out_dir``, committed together (see the module
    docstring). Raises :class:`hsrtcp.errors.OutputError` (naming the path) when the
    directory cannot be used. Use as a context manager: leaving it without
    :meth:`commit` (an error, Ctrl-C) aborts."""

    def __init__(self, out_dir: str | os.PathLike, *, manifest: str = MANIFEST,
                 replaces: frozenset[str] | set[str] = KNOWN) -> None:
        """``manifest``: the file that lists this kind of run's files (``MANIFEST``: an
        analysis); ``replaces``: names a previous run may have left without a manifest,
        removed at the commit unless this run writes them again."""
        d = os.fspath(out_dir)
        self._manifest = manifest
        self._replaces = frozenset(replaces)
        if d in ("", b""):
            raise OutputError("the output directory is an empty string")
        self.dir = d
        self._staged: dict[str, str] = {}  # final name -> staged path
        self._lock_fd = None
        if os.path.lexists(d) and not os.path.isdir(d):
            raise OutputError(f"{shown(d)}: exists and is not a directory")
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{shown(d)}: cannot create the output directory: {exc.strerror}") from None
        self._lock()
        self._clean()

    # -- opening ---------------------------------------------------------------------------
    def _lock(self) -> None:
        path = os.path.join(self.dir, LOCK)
        try:
            fd = lock_file(path)
        except LockHeld as held:
            raise OutputError(f"{shown(self.dir)}: another hsrtcp run (pid {held.holder}) is writing to this "
                              f"directory; wait for it to end or choose another output directory") from None
        except OSError as exc:
            raise OutputError(f"{shown(self.dir)}: cannot write in the output directory: {exc.strerror}") from None
        try:
            claim(fd)
        except OSError as exc:  # on a disk with no block left this is the run's first write
            os.close(fd)
            raise output_error(exc, path) from None
        self._lock_fd = fd

    def _clean(self) -> None:
        """Remove temporary files of dead runs (the lock says no live run owns them), in the
        directory and in the subdirectories its manifest names."""
        subdirs = {n.rpartition("/")[0] for n in _read_manifest(self.dir, self._manifest) if "/" in n}
        for sub in ["", *sorted(subdirs)]:
            where = os.path.join(self.dir, sub)
            try:
                names = os.listdir(where)
            except OSError:
                continue
            for name in names:
                if _leftover(name):
                    try:
                        os.unlink(os.path.join(where, name))
                    except (IsADirectoryError, PermissionError, FileNotFoundError):
                        pass

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            unlock_file(self._lock_fd)
            self._lock_fd = None

    # -- staging ---------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """The staging prefix: a file to become ``NAME`` is written as ``prefix + NAME``."""
        return NEW

    def stage(self, name: str) -> str:
        """The path to write the file that becomes ``out_dir/name`` at commit (``name`` may
        name one subdirectory: ``traces/x.json``; it is created)."""
        if not _plain(name):
            raise ValueError(f"not a name inside the output directory: {name!r}")
        path = _beside(self.dir, name, NEW)
        if "/" in name:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            except OSError as exc:
                raise OutputError(f"{shown(os.path.dirname(path))}: cannot create: {exc.strerror}") from None
        self._staged[name] = path
        return path

    def file(self, name: str) -> _Staging:
        """``with output.file(NAME) as path:`` write the staged file ``NAME`` at ``path``; a
        failure of the disk is an :class:`OutputError` naming ``DIR/NAME`` and the reason."""
        return _Staging(self, name)

    def error(self, exc: BaseException) -> OutputError:
        """:func:`writer_error` for this directory."""
        return writer_error(exc, self.dir)

    def holding(self) -> Holding:
        """:class:`Holding` for this directory."""
        return Holding(self.dir)

    def add(self, name: str, staged_path: str | os.PathLike) -> None:
        """A file written under the staging prefix by someone else (the Rust Parquet writer)."""
        self._staged[name] = os.fspath(staged_path)

    def add_tables(self, staged, commit: bool) -> list[str]:
        """The Rust writer's staged tables (``[(table, path)]``) as ``<table>.parquet``, then
        :meth:`commit` when ``commit``; else (a caller's set, committed by the caller) the
        paths they will have."""
        for table, path in staged:
            self.add(f"{table}.parquet", path)
        if commit:
            return self.commit()
        return [os.path.join(self.dir, f"{t}.parquet") for t, _ in staged]

    def staged(self, name: str) -> str:
        """Where the staged file ``name`` is (to read it back before the commit)."""
        return self._staged[name]

    def discard(self, name: str) -> None:
        """Drop a staged file (a plot that was not drawn, ...)."""
        path = self._staged.pop(name, None)
        if path is not None and os.path.lexists(path):
            os.unlink(path)

    # -- commit / abort --------------------------------------------------------------------
    def commit(self) -> list[str]:
        """Put every staged file in place at once; returns their final paths (in staging
        order). Raises :class:`OutputError` naming the path; then the directory is as it was."""
        try:
            return self._commit()
        finally:
            self.abort()  # staged files that are left (after a failure); releases the lock

    def _commit(self) -> list[str]:
        d, names = self.dir, list(self._staged)
        targets = [os.path.join(d, n) for n in names]
        others = _other_manifests(d, self._manifest)
        for n, t in zip(names, targets):
            if os.path.isdir(t):
                raise OutputError(f"{shown(t)}: is a directory, so {n} cannot be written; nothing of this "
                                  f"run was written")
            kind = _special(t)
            if kind:
                raise OutputError(f"{shown(t)}: is {kind}; hsrtcp replaces only regular files in an output "
                                  f"directory (remove it or choose another directory); nothing of this run "
                                  f"was written")
            if n in others and os.path.lexists(t):
                raise OutputError(f"{shown(t)}: belongs to the files of another command in {shown(d)} (listed in "
                                  f"{others[n]}); choose another output directory; nothing of this run was "
                                  f"written")
        man = self._manifest
        old = (_read_manifest(d, man) | self._replaces) - set(names) - {man} - set(others)
        aside = [n for n in [*names, *sorted(old), man] if os.path.lexists(os.path.join(d, n))
                 and not os.path.isdir(os.path.join(d, n))]
        moved: list[tuple[str, str]] = []  # (target, where it was moved)
        placed: list[str] = []
        try:
            for n in aside:
                t, b = os.path.join(d, n), _beside(d, n, OLD)
                os.replace(t, b)
                moved.append((t, b))
            for n, t in zip(names, targets):
                os.replace(self._staged[n], t)
                placed.append(t)
            manifest = os.path.join(d, NEW + man)
            with open(manifest, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write("\n".join([MANIFEST_HEADER, *names, ""]))
            os.replace(manifest, os.path.join(d, man))
        except OSError as exc:
            for t in placed:
                _quiet_unlink(t)
            for t, b in reversed(moved):
                try:
                    os.replace(b, t)
                except OSError:
                    pass
            where = exc.filename if exc.filename is not None else d
            raise OutputError(f"{shown(where)}: {exc.strerror or exc}; nothing of this run was written, "
                              f"the previous files are back in place") from None
        self._staged.clear()
        for _, b in moved:
            _quiet_unlink(b)
        return targets

    def abort(self) -> None:
        """Remove the staged files and release the directory (idempotent)."""
        for path in self._staged.values():
            _quiet_unlink(path)
        self._staged.clear()
        if self._lock_fd is not None:
            # files staged by a writer that stopped half-way (the Rust writer's spools); the
            # lock says they are this run's
            try:
                names = [n for n in os.listdir(self.dir) if n.startswith(NEW)]
            except OSError:
                names = []
            for n in names:
                _quiet_unlink(os.path.join(self.dir, n))
        self._unlock()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc) -> None:
        self.abort()


class _Staging:
    """:meth:`OutputSet.file`."""

    def __init__(self, output: OutputSet, name: str) -> None:
        self.output, self.name = output, name

    def __enter__(self) -> str:
        self.path = self.output.stage(self.name)
        return self.path

    def __exit__(self, typ, exc, tb) -> bool:
        if exc is None:
            return False
        final = os.path.join(self.output.dir, self.name)
        if isinstance(exc, OutputError) and str(exc).startswith(shown(self.path) + ":"):
            # (a writer of its own, hsrtcp.atomic, named the staged file)
            raise OutputError(shown(final) + str(exc)[len(shown(self.path)):]) from None
        err = output_error(exc, final, self.output.dir)
        if err is None:
            return False
        raise err from None


def writer_error(exc: BaseException, d: str | os.PathLike) -> OutputError:
    """The :class:`OutputError` for a failure of a writer that stages in directory ``d``
    (the Rust Parquet writer: ``OSError(errno, strerror, "D/.hsrtcp-new.flows.parquet")``,
    or a text "D/.hsrtcp-new.flows.parquet: reason"): it names the final file and the reason;
    for a writer that lost the errno, a full disk (call it while :class:`Holding` keeps the
    staged files' space taken)."""
    d = os.fspath(d)
    text = str(exc)
    where, detail = d, text
    if _staged(exc):  # the native writer's OSError(errno, strerror, staged file)
        head, sep, rest = os.fsdecode(exc.filename), ": ", exc.strerror or text
    else:
        head, sep, rest = text.partition(": ")
    if sep and os.path.basename(head).startswith(NEW):
        name = os.path.basename(head)[len(NEW):]
        if name.startswith("spool") and name.endswith(".arrows"):  # spoolN.TABLE.arrows
            name = name.split(".")[1] + ".parquet"
        where, detail = os.path.join(os.path.dirname(head), name), rest
    reason = failure_reason(exc, d) or detail
    return OutputError(f"{shown(where)}: cannot write: {reason}")


#: what the native writer says when it stopped without an error of its own (closed)
WRITER_STOPPED = "the Parquet writer stopped"


def _staged(exc: BaseException) -> bool:
    """``exc`` names a staged file (the native writer's error: OSError(errno, strerror, file))."""
    return (isinstance(exc, OSError) and exc.filename is not None
            and os.path.basename(os.fsdecode(exc.filename)).startswith(NEW))


def stopped_writer(exc: BaseException, d: str | os.PathLike, close) -> OutputError | None:
    """For an OSError of a native analysis into ``d``: the :class:`OutputError` naming the
    file and the reason when the writer stopped (the error of one of its files, or
    ``close``, the writer's close(), tells why), or None for another error."""
    if WRITER_STOPPED not in str(exc) and not _staged(exc):
        return None
    with Holding(d):
        try:
            close()
        except OSError as real:
            exc = real
        return writer_error(exc, d)


class Holding:
    """``with Holding(d):`` the staged files of directory ``d`` keep their space on the
    disk even if a writer removes them, so that a full disk still looks full when its
    error is read (they are open for reading until the block ends)."""

    def __init__(self, d: str) -> None:
        self.fds: list[int] = []
        try:
            names = [n for n in os.listdir(d) if n.startswith(NEW)]
        except OSError:
            names = []
        for n in names:
            try:
                self.fds.append(os.open(os.path.join(d, n), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
            except OSError:
                pass

    def __enter__(self) -> Holding:
        return self

    def __exit__(self, *exc) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _special(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return {stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device", stat.S_IFIFO: "a FIFO",
            stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(mode), "not a regular file")


def _other_manifests(d: str, own: str) -> dict[str, str]:
    """{file name: manifest} for the files other kinds of runs (analysis, model fit, study,
    ...) list in their manifests in ``d``: never overwritten by this kind."""
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith("hsrtcp-manifest") and n.endswith(".txt")
                       and n != own)
    except OSError:
        return {}
    return {f: m for m in names for f in _read_manifest(d, m)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (someone else's process)
        pass
    return True


def _quiet_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _plain(name: str) -> bool:
    """A file name inside the output directory, at most one subdirectory down, with no part
    hidden, empty or ``..``: a manifest never moves files outside its directory."""
    parts = name.split("/")
    return 1 <= len(parts) <= 2 and all(p and not p.startswith(".") for p in parts)


def _beside(d: str, name: str, prefix: str) -> str:
    """``d/name`` with ``prefix`` before its last part (a staged or moved-aside copy in the
    same directory, so renames stay atomic)."""
    head, _, tail = name.rpartition("/")
    return os.path.join(d, head, prefix + tail)


def _read_manifest(d: str, name: str = MANIFEST) -> set[str]:
    """The file names the manifest ``name`` of directory ``d`` lists (empty without one)."""
    try:
        with open(os.path.join(d, name), encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return set()
    return {n for n in lines if not n.startswith("#") and _plain(n)}


def manifest(out_dir: str | os.PathLike) -> list[str] | None:
    """The files the last run wrote to ``out_dir`` (its manifest), or None without one."""
    d = os.fspath(out_dir)
    if not os.path.isfile(os.path.join(d, MANIFEST)):
        return None
    return sorted(_read_manifest(d))
