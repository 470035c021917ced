"""Download progress bars on stderr: the `Reporter` the CLI hands the core when a person
watches a terminal (`install_common.reporter_for`). rich is imported only when one is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pkgmgr.progress import Reporter

if TYPE_CHECKING:
    from rich.progress import TaskID


class RichReporter(Reporter):
    """Progress bars on stderr (imported only when stderr is a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._labels: dict[str, str] = {}
        self._started = False

    def download_started(self, key: str, label: str, total: int | None) -> None:
        if not self._started:
            self._progress.start()
            self._started = True
        self._labels[key] = label
        self._tasks[key] = self._progress.add_task(f"{label} (waiting for the server)", total=total)

    def download_answered(self, key: str, total: int | None) -> None:
        task = self._tasks.get(key)
        if task is not None:
            self._progress.reset(task, total=total, description=self._labels.get(key, ""))

    def download_advanced(self, key: str, amount: int) -> None:
        task = self._tasks.get(key)
        if task is not None:
            self._progress.advance(task, amount)

    def download_finished(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        self._labels.pop(key, None)
        if task is not None:
            self._progress.remove_task(task)
        if not self._tasks and self._started:
            self._progress.stop()
            self._started = False

    def step(self, message: str) -> None:
        self._progress.console.print(message, markup=False, highlight=False)
