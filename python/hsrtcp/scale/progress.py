"""The one progress display of a corpus run (rich, on stderr, only on a terminal and
without -q): inputs done of all, bytes, rate, time left, failures so far."""

from __future__ import annotations

import sys


class CorpusProgress:
    def __init__(self, inputs: int, total_bytes: int, enabled: bool) -> None:
        self.failed = 0
        self.done = 0
        self.inputs = inputs
        self._p = None
        if not enabled or not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self._p = Progress(TextColumn("inputs {task.fields[done]}/{task.fields[inputs]}"), BarColumn(),
                           DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                           TextColumn("{task.fields[failed]} failed"), console=Console(stderr=True),
                           transient=True)
        self._p.start()
        self._task = self._p.add_task("corpus", total=max(total_bytes, 1), done=0, inputs=inputs, failed=0)

    def skip(self, nbytes: int, failed: int = 0) -> None:
        """An input that will not be analyzed (skipped, duplicate, unreadable): it leaves the
        totals (they start as every input found, before the inputs are keyed)."""
        self.inputs -= 1
        self.failed += failed
        if self._p is not None:
            task = self._p.tasks[0]
            self._p.update(self._task, total=max(int(task.total or 0) - nbytes, 1), inputs=self.inputs,
                           failed=self.failed)

    def advance(self, nbytes: int, failed: int) -> None:
        """One input ended: its bytes, and how many failure rows it gave."""
        self.done += 1
        self.failed += failed
        if self._p is not None:
            self._p.update(self._task, advance=nbytes, done=self.done, failed=self.failed)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()
            self._p = None
