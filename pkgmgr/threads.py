"""Work fanned out over a few threads: registry reads, downloads, extractions, directory flushes.

Every such fan-out in pkgmgr is the same shape — call one function on each item of a short list,
a bounded number at a time, keep the results in order, raise the first failure once every
thread is done — which is `concurrent.futures.ThreadPoolExecutor.map` without its futures. Its
import costs what this module avoids: `concurrent.futures` imports `logging`, ~5 ms of every
install that reads more than one registry entry (issue 30: start-up is most of a small install).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_in_threads(work: Callable[[T], R], items: Sequence[T], *, workers: int, name: str) -> list[R]:
    """`[work(item) for item in items]`, run by at most `workers` threads named `name-N`, each
    taking the next item when it is done with one. Returns once every thread has finished;
    if any call raised, raises the exception of the first such item instead."""
    results: list[R | None] = [None] * len(items)
    failures: list[BaseException | None] = [None] * len(items)
    taken = iter(range(len(items)))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                index = next(taken, None)
            if index is None:
                return
            try:
                results[index] = work(items[index])
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
                failures[index] = exc

    threads = [threading.Thread(target=run, name=f"{name}-{number}") for number in range(max(1, min(workers, len(items))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for failure in failures:
        if failure is not None:
            raise failure
    return results  # type: ignore[return-value]  # every slot was filled: no call raised
