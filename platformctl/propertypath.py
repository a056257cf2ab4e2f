"""Property paths into a resource's inputs: the one path language of the replacement
rules, `ignoreChanges` and the diff's output.

It is Pulumi's property-path syntax: keys joined by dots, list items as `[0]`, keys
with dots, brackets or quotes as `["app.kubernetes.io/name"]`, and `[*]` (or a bare
`*` key) for any list item or map key. `spec.containers[*].image` names the image of
every container; `metadata.labels["app.kubernetes.io/name"]` one label.

A path is a tuple of segments: str (a key), int (a list index) or ANY.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterator, Union


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
Segment = Union[str, int, _Any]
Path = tuple[Segment, ...]

_TOKEN = re.compile(r'\.?([^.\[\]"]+)|\[(\d+|\*)\]|\[("(?:[^"\\]|\\.)*")\]')
_PLAIN_KEY = re.compile(r'^[^.\[\]"*]+$')


@lru_cache(maxsize=4096)
def parse(text: str) -> Path:
    """`a.b[0]["c.d"][*]` -> ("a", "b", 0, "c.d", ANY); raises ValueError on anything else."""
    out: list[Segment] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or (m.group(1) is not None and text[pos] == "." and pos == 0):
            raise ValueError(f"bad property path {text!r} at {pos}")
        key, index, quoted = m.groups()
        if key is not None:
            out.append(ANY if key == "*" else key)
        elif index is not None:
            out.append(ANY if index == "*" else int(index))
        else:
            out.append(json.loads(quoted))
        pos = m.end()
    if not out:
        raise ValueError("empty property path")
    return tuple(out)


def format_path(path: Path) -> str:
    text = ""
    for seg in path:
        if seg is ANY:
            text += "[*]"
        elif isinstance(seg, int):
            text += f"[{seg}]"
        elif _PLAIN_KEY.match(seg):
            text += f".{seg}" if text else seg
        else:
            text += f"[{json.dumps(seg)}]"
    return text


def _seg_matches(pattern: Segment, seg: Segment) -> bool:
    return pattern is ANY or seg is ANY or pattern == seg


def is_prefix(prefix: Path, path: Path) -> bool:
    """`prefix` names `path` or one of its ancestors (ANY matches any segment)."""
    return len(prefix) <= len(path) and all(_seg_matches(p, s) for p, s in zip(prefix, path[: len(prefix)], strict=True))


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from value.values()
    elif isinstance(value, list):
        yield from value


def exists(value: Any, path: Path) -> bool:
    """Whether `path` leads somewhere inside `value`."""
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head is ANY:
        return any(exists(v, rest) for v in _children(value))
    if isinstance(head, int):
        return isinstance(value, list) and 0 <= head < len(value) and exists(value[head], rest)
    return isinstance(value, dict) and head in value and exists(value[head], rest)


def leaf_changes(a: Any, b: Any, path: Path = ()) -> list[Path]:
    """Where two JSON values differ: the deepest differing points, lists compared item by
    item (an added or removed item is its own path), as the Kubernetes provider's patch
    walk reports them."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[Path] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(path + (k,))
            else:
                out += leaf_changes(a[k], b[k], path + (k,))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                out.append(path + (i,))
            else:
                out += leaf_changes(a[i], b[i], path + (i,))
        return out
    return [] if a == b else [path]


def value_at(value: Any, path: Path) -> Any:
    """The value at a concrete path (no ANY), or None."""
    for seg in path:
        if isinstance(seg, int) and isinstance(value, list) and 0 <= seg < len(value):
            value = value[seg]
        elif isinstance(seg, str) and isinstance(value, dict) and seg in value:
            value = value[seg]
        else:
            return None
    return value


_MISSING = object()


def _get(container: Any, seg: Segment) -> Any:
    if isinstance(container, dict) and isinstance(seg, str):
        return container.get(seg, _MISSING)
    if isinstance(container, list) and isinstance(seg, int) and 0 <= seg < len(container):
        return container[seg]
    return _MISSING


def reset(old: Any, new: Any, path: Path) -> Any:
    """`new` with the value at `path` taken from `old`, or removed where `old` has none:
    what Pulumi does with an `ignoreChanges` path before the provider diffs. Like Pulumi,
    a path through an element only one side has is left alone."""
    if not path or not isinstance(new, (dict, list)):
        return new
    head, rest = path[0], path[1:]
    out = dict(new) if isinstance(new, dict) else list(new)
    segs = (list(new) if isinstance(new, dict) else list(range(len(new)))) if head is ANY else [head]
    for seg in segs:
        if isinstance(seg, str) != isinstance(out, dict):
            continue  # a key into a list or an index into a map names nothing
        here, there = _get(new, seg), _get(old, seg)
        if rest:
            if here is not _MISSING and there is not _MISSING:
                out[seg] = reset(there, here, rest)
        elif there is not _MISSING:
            if isinstance(out, dict) or here is not _MISSING:
                out[seg] = there
        elif here is not _MISSING and isinstance(out, dict):
            del out[seg]
    return out
