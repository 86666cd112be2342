"""Progress bars for long work (rich), quiet when output is not a terminal."""

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
