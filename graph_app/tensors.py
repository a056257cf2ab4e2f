"""Tensors between JSON and numpy: a request's nested lists in, a response's nested lists out."""

from __future__ import annotations

from typing import Any

import numpy as np


class TensorError(ValueError):
    """A request tensor that is no rectangular array of numbers, booleans or strings."""


def from_json(name: str, value: Any) -> np.ndarray:
    """Numbers stay as JSON gives them (int64 or float64) and strings become numpy strings;
    a backend casts to its model's types."""
    try:
        array = np.asarray(value)
    except ValueError as e:  # ragged nesting
        raise TensorError(f"input tensor {name!r} is not a rectangular array: {e}") from None
    if array.dtype.kind not in "biufU":
        raise TensorError(f"input tensor {name!r} must hold numbers, booleans or strings, got {array.dtype}")
    return array


def to_json(array: np.ndarray) -> Any:
    """Nested lists; bytes (Triton's BYTES tensors) as UTF-8 text."""
    return _decoded(np.asarray(array).tolist())


def _decoded(value: Any) -> Any:
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value
