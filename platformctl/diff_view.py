"""The diff as people and CI read it (docs/diff.md): errors first, then the summary line, then
the changes grouped by component (the top-level component under InferencePlatform), each
resource named by type and logical name (its URN with --urns) and each changed path with its
old -> new value. Values the plan records as secret stay `[secret]`, and so does every value
under a Kubernetes Secret's data or stringData."""

from __future__ import annotations

import json
from typing import Any, Optional

from .diff import ACTIONS, Change

_MARK = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}
ROOT_COMPONENT = "InferencePlatform"  # under any module token it had
SECRET_TYPES = ("kubernetes:core/v1:Secret",)
SECRET_FIELDS = ("data", "stringData")
ABSENT = "(absent)"
# Longer values are cut in text (JSON carries them whole).
MAX_VALUE = 120


def _get(resource: Optional[dict[str, Any]], path: str) -> Any:
    """The value at a changed_paths path (`inputs.spec.x[0].y`), or ABSENT. Keys may hold dots
    (an annotation `proxy.istio.io/config`): at each mapping the longest key that the path
    continues with is taken."""
    value: Any = resource
    rest = path
    while rest:
        if rest.startswith("["):
            end = rest.index("]")
            index = int(rest[1:end])
            if not isinstance(value, list) or index >= len(value):
                return ABSENT
            value, rest = value[index], rest[end + 1:].removeprefix(".")
            continue
        if not isinstance(value, dict):
            return ABSENT
        keys = [k for k in value if isinstance(k, str) and rest.startswith(k) and rest[len(k):len(k) + 1] in ("", ".", "[")]
        if not keys:
            return ABSENT
        key = max(keys, key=len)
        value, rest = value[key], rest[len(key):].removeprefix(".")
    return value


def _redacted(resource: Optional[dict[str, Any]], path: str, value: Any) -> Any:
    if resource and resource.get("type") in SECRET_TYPES and any(
            path == f"inputs.{f}" or path.startswith((f"inputs.{f}.", f"inputs.{f}[")) for f in SECRET_FIELDS):
        return ABSENT if value == ABSENT else "[secret]"
    return value


def _value(resource: Optional[dict[str, Any]], path: str) -> Any:
    return _redacted(resource, path, _get(resource, path))


def _text(value: Any) -> str:
    text = value if value == ABSENT else json.dumps(value, sort_keys=True)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


def component_of(key: str, resources: dict[str, dict[str, Any]]) -> str:
    """`type name` of the top-level component under InferencePlatform that holds the resource;
    `(stack)` for resources outside it."""
    by_urn = {r["urn"]: r for r in resources.values()}
    r = resources.get(key)
    seen = set()
    while r is not None and r["urn"] not in seen:
        seen.add(r["urn"])
        parent = by_urn.get(r.get("parent") or "")
        if parent is None:
            return "(stack)"
        if parent["type"].rsplit(":", 1)[-1] == ROOT_COMPONENT:
            return f"{r['type']} {r['name']}"
        r = parent
    return "(stack)"


def _short(key: str, urns: bool) -> str:
    """A stack-less URN key as `TYPE NAME` (the key itself with urns)."""
    if urns:
        return key
    parts = key.split("::")
    return f"{parts[-2].rsplit('$', 1)[-1]} {parts[-1]}" if len(parts) >= 2 else key


def _name(change: Change, d: dict[str, Any], urns: bool) -> str:
    r = d["new"].get(change.key) or d["old"].get(change.key) or {}
    return r.get("urn", change.key) if urns else f"{change.type} {r.get('name', change.key.rsplit('::', 1)[-1])}"


def _entries(d: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per change, in the JSON shape of docs/diff.md."""
    renamed_from = {new: old for old, new in d["renamed"].items()}
    out = []
    for c in d["changes"]:
        old, new = d["old"].get(c.key), d["new"].get(c.key)
        r = new or old or {}
        entry: dict[str, Any] = {
            "action": c.action, "type": c.type, "name": r.get("name", c.key.rsplit("::", 1)[-1]),
            "urn": r.get("urn", c.key), "component": component_of(c.key, d["new"] if new else d["old"]),
            "changes": [{"path": p, "old": _value(old, p), "new": _value(new, p)} for p in c.paths],
        }
        if c.action == "replace":
            entry.update(reason=c.reason, deleteFirst=c.delete_first)
        if c.unknown:
            entry["unknownUntilReplaced"] = dict(c.unknown)
        if c.key in renamed_from:
            entry["renamedFrom"] = renamed_from[c.key]
        out.append(entry)
    return out


def summary(d: dict[str, Any]) -> str:
    counts = {a: sum(c.action == a for c in d["changes"]) for a in ACTIONS}
    renamed = f", {len(d['renamed'])} renamed" if d["renamed"] else ""
    return ", ".join(f"{n} to {a}" for a, n in counts.items()) + f"{renamed}; {len(d['errors'])} errors"


def diff_json(d: dict[str, Any], sources: list[str]) -> dict[str, Any]:
    counts = {a: sum(c.action == a for c in d["changes"]) for a in ACTIONS}
    return {
        "version": 1, "sources": sources, "errors": d["errors"], "notes": d["notes"],
        "summary": dict(counts, renamed=len(d["renamed"]), errors=len(d["errors"])),
        "renamed": d["renamed"], "resources": _entries(d),
    }


def format_diff(d: dict[str, Any], urns: bool = False) -> str:
    """Errors, the summary line, then per component its changes: `~ update TYPE NAME` (the URN
    with urns), the replace reason, then one `path: old -> new` line per changed path."""
    lines = list(d["errors"]) + [summary(d)]
    by_component: dict[str, list[str]] = {}
    lines += [f"> rename {_short(old, urns)} -> {_short(new, urns)}" for old, new in d["renamed"].items()]
    for c, entry in zip(d["changes"], _entries(d), strict=True):
        block = by_component.setdefault(entry["component"], [])
        line = f"  {_MARK[c.action]} {c.action} {_name(c, d, urns)}"
        if c.action == "replace":
            line += f" ({c.reason})" + (" [delete-first]" if c.delete_first else "")
        block.append(line)
        block += [f"      {x['path']}: {_text(x['old'])} -> {_text(x['new'])}" for x in entry["changes"]]
        if c.action == "update" and not c.paths:
            block += [f"      {p} <- replaced {dep}" for p, dep in c.unknown.items()]
    for component in sorted(by_component):
        lines.append(f"{component}:")
        lines += by_component[component]
    lines += d["notes"]
    return "\n".join(lines)
