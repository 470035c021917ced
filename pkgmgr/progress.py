"""Progress events from the core to whoever displays them (resolvelib's reporter idea).

The core calls a `Reporter`; the default does nothing. The CLI passes a rich-backed reporter
(`pkgmgr.cli.progress_bars.RichReporter`) when stderr is a terminal, so the core never imports rich.
"""

from __future__ import annotations


class Reporter:
    def download_started(self, key: str, label: str, total: int | None) -> None:
        """A download of `total` bytes (None when unknown) begins."""

    def download_answered(self, key: str, total: int | None) -> None:
        """The server answered: the body (`total` bytes, None when unknown) starts now, and what
        an earlier attempt counted is dropped. Until then the download waited for its first byte."""

    def download_advanced(self, key: str, amount: int) -> None:
        """`amount` more bytes arrived."""

    def download_finished(self, key: str) -> None:
        """The download ended (successfully or not)."""

    def step(self, message: str) -> None:
        """A step of a longer operation (extracting, validating, committing)."""
