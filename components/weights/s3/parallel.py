"""A function over items on worker threads that stops at the first failure (hashing, HEADs, sends)."""

from __future__ import annotations

import itertools
import threading


def parallel_map(fn, items, workers: int) -> list:
    """fn over items on `workers` threads, results in order; after the first failure no item
    starts, and the failure of the earliest failed item is raised.

    Each thread takes the next index from one shared counter (its `next` is atomic under the
    GIL) instead of a future per item: with thousands of small files, creating and waiting on a
    future each cost the main thread more than the work it handed out."""
    items = list(items)
    if not items:
        return []
    results: list = [None] * len(items)
    failures: list[tuple[int, BaseException]] = []
    indices = itertools.count()
    stop = threading.Event()

    def work() -> None:
        for i in indices:
            if i >= len(items) or stop.is_set():
                return
            try:
                results[i] = fn(items[i])
            except BaseException as err:  # noqa: BLE001 - handed to the caller below, as a pool's future would
                failures.append((i, err))
                stop.set()
                return

    threads = [threading.Thread(target=work, name=f"parallel-map-{n}", daemon=True) for n in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]
    return results
