"""A function over items on a thread pool that stops at the first failure (hashing, HEADs, sends)."""

from __future__ import annotations

from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait


def parallel_map(fn, items, workers: int) -> list:
    """fn over items on a thread pool, results in order; the first failure cancels what has not started, then is raised."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(min(workers, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        _, not_done = wait(futures, return_when=FIRST_EXCEPTION)
        for future in not_done:
            future.cancel()
    failed = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
    if failed:
        raise failed[0]
    return [f.result() for f in futures]
