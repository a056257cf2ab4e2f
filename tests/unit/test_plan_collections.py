"""When a plan collects the garbage cycles that earlier plans left frozen (engine.py `_few_collections`)."""

from __future__ import annotations

import gc
import weakref

import pytest

from platformctl import engine


class Node:
    """A reference cycle: freed only by the cyclic collector."""

    def __init__(self):
        self.me = self


def _cycle_left_frozen() -> weakref.ref:
    node = Node()
    ref = weakref.ref(node)
    del node
    gc.freeze()  # as a plan's end leaves its objects
    return ref


@pytest.fixture
def resident(monkeypatch):
    """The resident memory `_few_collections` sees, from a list the test sets; the last full collection's figure restored."""
    shown: list = [None]
    monkeypatch.setattr(engine, "_resident_bytes", lambda: shown[0])
    monkeypatch.setattr(engine, "_RESIDENT_AFTER_FULL_COLLECTION", [1000])
    yield shown
    gc.unfreeze()


@pytest.mark.parametrize(("memory", "collected"), [(1400, False), (1600, True), (None, True)],
                         ids=["grown-by-less-than-half", "grown-by-more", "no-proc"])
def test_a_plan_frees_earlier_cycles_once_memory_grew_by_half_and_always_without_proc(resident, memory, collected):
    resident[0] = memory
    ref = _cycle_left_frozen()
    with engine._few_collections():
        assert (ref() is None) == collected
    if collected and memory is not None:
        assert engine._RESIDENT_AFTER_FULL_COLLECTION[0] == memory  # the next full collection waits for 1.5x this
