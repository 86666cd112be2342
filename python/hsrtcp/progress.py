"""Progress of long work on stderr: bars (rich) on a terminal; off one, :class:`ByteProgress` is
quiet and :class:`Steps` writes a plain line per phase."""

from __future__ import annotations

import sys

from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn


class ByteProgress:
    """A bar of bytes read over all input files."""

    def __init__(self, total: int, label: str = "reading") -> None:
        self._p = Progress(
            "[progress.description]{task.description}", BarColumn(), DownloadColumn(),
            TransferSpeedColumn(), TimeRemainingColumn(), transient=True,
            disable=not sys.stderr.isatty(),
        )
        self._p.start()
        self._task = self._p.add_task(label, total=max(total, 1))

    def update(self, done: int, total: int) -> None:
        self._p.update(self._task, completed=min(done, total))

    def close(self) -> None:
        self._p.stop()


class Steps:
    """The phases of a long command, as :class:`hsrtcp.study.stream.Progress` and the model
    fit report their partitions and flows: a bar on a terminal (rich, on stderr, gone when
    done), else a plain line on stderr as each phase starts, ``<command>: <k>/<n> <phase>,
    <s> s since the start`` (a log of a run not on a terminal shows where it is); nothing
    when ``enabled`` is false. Standard output is never written."""

    def __init__(self, command: str, total: int, enabled: bool = True) -> None:
        import time

        self.command, self.total, self.done, self.enabled = command, total, 0, enabled
        self._t0 = time.monotonic()
        self._bar = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import MofNCompleteColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn(f"{command}:"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("", total=total)

    def step(self, phase: str) -> None:
        """Phase ``phase`` starts (the previous one, if any, is done)."""
        import time

        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=phase)
        else:
            print(f"{self.command}: {self.done + 1}/{self.total} {phase}, {time.monotonic() - self._t0:.1f} s",
                  file=sys.stderr, flush=True)
        self.done += 1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
