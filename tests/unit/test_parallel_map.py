"""parallel_map: every file of an upload goes through it (hashing, HEADs, sends)."""

from __future__ import annotations

import threading

import pytest

from inference_platform.weights.s3.parallel import parallel_map


def test_results_come_back_in_the_items_order_whatever_order_the_workers_finish():
    release = threading.Event()

    def slow_first(i: int) -> int:
        if i == 0:
            assert release.wait(10)
        elif i == 99:
            release.set()
        return i * i

    assert parallel_map(slow_first, range(100), workers=4) == [i * i for i in range(100)]


def test_after_a_failure_no_further_item_starts_and_the_earliest_failure_is_raised():
    started: list[int] = []
    both_failing = threading.Barrier(2)

    def fail_early(i: int) -> int:
        started.append(i)
        if i in (3, 4):
            both_failing.wait(10)
            raise ValueError(f"item {i}")
        return i

    with pytest.raises(ValueError, match="item 3"):
        parallel_map(fail_early, range(1000), workers=2)
    assert max(started) < 10, "items kept starting after the failure"


def test_no_items_start_no_threads():
    assert parallel_map(lambda i: 1 / 0, [], workers=8) == []
