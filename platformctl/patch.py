"""`platformctl patch`: add the canary version a model pipeline proposes to a stack file.

The pipeline ends by printing a StackPatch (JSON); applying it is an edit of the stack
file that a person reviews and ships with `pulumi up`, like any other. The new version
copies its base version's keys as written, takes the patch's keys over them and its
weight out of the base's. Only the lines that change are written (patch_text.py): the
base's weight in place and the new version after the base, in its layout; every other line
(comments, key order, quoting, indentation, line endings, anchors) stays byte for byte. The
result must read back as the patch applied and pass the same settings validation as
`make plan` before anything is written.
"""

from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.errors import ConfigError, format_path
from inference_platform.settings.loader import settings_from_config
from inference_platform.settings.serving import Version

from .atomic import write_text
from .engine import checked_engine_config
from .errors import UsageError
from .patch_text import is_json, line_ending, patched_json, plain_version, round_trip_yaml, splice_version
from .stackfile import StackFileError, parse_mapping, parse_stack_text, stack_config_of

KIND = "StackPatch"
PATCH_KEYS = ("kind", "service", "addVersion")
REQUIRED = ("from", "name", "weight")
VERSION_KEYS = tuple(field.alias or name for name, field in Version.model_fields.items())
# Keys of the base version the new one does not inherit (a patch may still set them):
NOT_COPIED = (
    "tuning",    # tuning belongs to the base's model: a copy would run the same Model Analyzer job again
    "replicas",  # sized for the base's share of traffic: at a canary's share it would hold as many GPUs
                 # for a fraction of the load (when autoscaling is off); the default 1 is the smallest that serves
    "provenance",  # where the base came from, not the new version
)
# A tuned config variant lives in the `configs/` folder of the repository it was tuned in: the
# new version keeps the base's only while it reads the same repository.
REPOSITORY_BOUND = "modelConfigName"

Node = Union[CommentedMap, CommentedSeq]


def canary_patch(service: str, base_version: str, version: str, cache: str, path: str, config_name: str,
                 weight: int, provenance: dict[str, str] | None = None) -> dict[str, Any]:
    """The StackPatch that adds `version` to `service` as a canary of `base_version` with `weight`
    percent of its traffic, reading the model repository `path` in weight cache `cache`
    (fileShare or s3) with the tuned config variant `config_name`, and recording `provenance`
    (workflow, onnx, onnxSha256): the patch model_tools/publish.py writes (the light plan does not
    ship model_tools; tests/live/test_pipeline.py compares the two)."""
    add: dict[str, Any] = {"from": base_version, "name": version, "weight": weight,
                           "modelRepository": {"cache": cache, "path": path}, "modelConfigName": config_name}
    if provenance:
        add["provenance"] = provenance
    return {"kind": KIND, "service": service, "addVersion": add}


@dataclass(frozen=True)
class AddVersion:
    service: str
    base: str
    keys: dict[str, Any]
    """The new version's keys the patch sets (name and weight among them)."""

    @property
    def name(self) -> str:
        return self.keys["name"]

    @property
    def weight(self) -> int:
        return self.keys["weight"]


def read_patch(patch_file: Path, shown: str) -> AddVersion:
    """A patch file's StackPatch, or UsageError naming the file and the key path."""
    try:
        data = patch_file.read_bytes()
    except OSError as err:
        raise UsageError(f"{shown}: cannot read the patch: {err.strerror}") from None
    return _parse_patch(parse_mapping(data, shown, "a patch"), shown)


def _parse_patch(doc: dict[str, Any], shown: str) -> AddVersion:
    def refuse(path: tuple, message: str) -> UsageError:
        return UsageError(f"{shown}: {format_path(path, '')}: {message}")

    _known_keys(doc, PATCH_KEYS, (), refuse)
    for key in PATCH_KEYS:
        if key not in doc:
            raise refuse((key,), "required key is missing")
    if doc["kind"] != KIND:
        raise refuse(("kind",), f"{doc['kind']!r} is not a patch this tool applies; allowed: {KIND}")
    if not isinstance(doc["service"], str):
        raise refuse(("service",), "must be a service name (text)")
    add = doc["addVersion"]
    if not isinstance(add, dict):
        raise refuse(("addVersion",), "must be a mapping of the new version's keys")
    _known_keys(add, ("from", *VERSION_KEYS), ("addVersion",), refuse)
    for key in REQUIRED:
        if key not in add:
            raise refuse(("addVersion", key), "required key is missing")
    for key in ("from", "name"):
        if not isinstance(add[key], str):
            raise refuse(("addVersion", key), "must be a version name (text)")
    weight = add["weight"]
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise refuse(("addVersion", "weight"), f"{weight!r} is not a weight; allowed: a whole number 0-100, "
                     "the percent of traffic the new version takes from its base version")
    return AddVersion(doc["service"], add["from"], {k: v for k, v in add.items() if k != "from"})


def _known_keys(mapping: dict[str, Any], allowed: tuple[str, ...], at: tuple, refuse) -> None:
    for key in mapping:
        if key not in allowed:
            raise refuse((*at, key), f"unknown key; allowed keys here: {', '.join(sorted(allowed))}")


def apply_patch(data: bytes, patch: AddVersion, shown: str) -> str:
    """The stack file's text with the patch applied, or ConfigError / StackFileError naming the
    stack file and the key path; the result is validated as `make plan` validates it."""
    raw = _validated_config(data, shown)
    text = data.decode("utf-8")
    services_key = next((k for k in raw if k in (f"{NAMESPACE}:services", "services")), None)
    services = raw.get(services_key, [])
    named = {"services": services}  # key paths name the service and version
    names = [s["name"] for s in services]
    if patch.service not in names:
        allowed = f"allowed: {', '.join(names)}" if names else "the stack has no services"
        raise ConfigError(shown, source=named, problems=[(("services",), f"no service named {patch.service!r}; {allowed}")])
    si = names.index(patch.service)
    versions = [v["name"] for v in services[si]["versions"]]
    at = ("services", si, "versions")
    if patch.base not in versions:
        raise ConfigError(shown, source=named, problems=[(at, f"no version named {patch.base!r} to copy (addVersion.from); "
                                       f"allowed: {', '.join(versions)}")])
    if patch.name in versions:
        raise ConfigError(shown, source=named, problems=[((*at, versions.index(patch.name), "name"),
                                   f"version {patch.name!r} is already present; a patch adds a new version "
                                   f"(present: {', '.join(versions)})")])
    vi = versions.index(patch.base)
    base_weight = services[si]["versions"][vi]["weight"]
    if base_weight < patch.weight:
        raise ConfigError(shown, source=named, problems=[((*at, vi, "weight"),
                                   f"{base_weight} is lower than the new version's weight {patch.weight}, "
                                   f"which is taken from it; allowed: a new version's weight up to {base_weight}")])

    newline = line_ending(text, shown)
    text = text.replace("\r\n", "\n")
    if is_json(text):
        new_text = patched_json(text, lambda doc: _add_plain_version(doc["config"][services_key][si]["versions"], vi, patch),
                                shown)
    else:
        doc = round_trip_yaml().load(text)
        rt_versions = doc["config"][services_key][si]["versions"]
        _take_trailing(rt_versions, vi)  # comment lines after the base stay where they are, after the new version
        new = plain_version(rt_versions[vi], lambda version: _edit_copy(version, patch))
        new_text = splice_version(text, rt_versions, vi, new, base_weight - patch.weight, shown)
    new_text = new_text.replace("\n", newline)
    _validated_config(new_text.encode(), shown)
    _check_result(new_text, raw, services_key, si, vi, patch, shown)
    return new_text


def _add_plain_version(versions: list[dict[str, Any]], index: int, patch: AddVersion) -> None:
    """The patch applied to a stack file's plain data: what the YAML edit must amount to."""
    new = copy.deepcopy(versions[index])
    for key in NOT_COPIED:
        new.pop(key, None)
    if "modelRepository" in patch.keys and patch.keys["modelRepository"] != new.get("modelRepository"):
        new.pop(REPOSITORY_BOUND, None)
    new.update(copy.deepcopy(patch.keys))
    versions[index]["weight"] -= patch.weight
    versions.insert(index + 1, new)


def _check_result(new_text: str, raw: dict[str, Any], services_key: str, si: int, vi: int, patch: AddVersion,
                  shown: str) -> None:
    """The written file reads as the patch applied to what it read before, and nothing else."""
    expected = copy.deepcopy(raw)
    _add_plain_version(expected[services_key][si]["versions"], vi, patch)
    got = stack_config_of(parse_stack_text(new_text.encode(), shown), shown)
    if json.loads(json.dumps(got)) != json.loads(json.dumps(expected)):
        raise StackFileError(shown, "the new version cannot be written in this file's layout so that it reads back "
                             "as the patch means; add the version by hand")


def _validated_config(data: bytes, shown: str) -> dict[str, Any]:
    """The stack file's `config:` mapping as written, after the settings validation of `make plan`."""
    raw = stack_config_of(parse_stack_text(data, shown), shown)
    settings_from_config(*checked_engine_config(raw, shown), shown)
    return raw


def _edit_copy(new: CommentedMap, patch: AddVersion) -> None:
    """The base version's copy made the new version: keys it does not inherit dropped, the patch's set."""
    for key in NOT_COPIED:
        _drop(new, key)
    if "modelRepository" in patch.keys and patch.keys["modelRepository"] != new.get("modelRepository"):
        _drop(new, REPOSITORY_BOUND)
    for key, value in patch.keys.items():
        if key in new:
            _drop_eol_comment(new, key)  # it described the base's value
        new[key] = _styled_like(value, new.get(key))


def _styled_like(value: Any, like: Any) -> Any:
    """A patch value in the style of the value it replaces (a flow mapping stays one)."""
    if isinstance(value, dict):
        out = CommentedMap((k, _styled_like(v, like.get(k) if isinstance(like, dict) else None))
                           for k, v in value.items())
    elif isinstance(value, list):
        out = CommentedSeq(_styled_like(v, None) for v in value)
    else:
        return value
    if isinstance(like, (CommentedMap, CommentedSeq)) and like.fa.flow_style():
        out.fa.set_flow_style()
    return out


# ruamel keeps a comment with the entry it follows: for a mapping in slot 2 of `ca.items[key]`,
# for a list in slot 0 of `ca.items[index]`. The comment's first line ends the entry's own line
# (an end-of-line comment, or nothing); the lines after it are the full-line comments and blank
# lines that follow the entry.

def _slot(node: Node) -> int:
    return 2 if isinstance(node, CommentedMap) else 0


def _comment(node: Node, key: Any) -> str:
    entry = node.ca.items.get(key)
    token = entry[_slot(node)] if entry else None
    return token.value if token is not None else ""


def _set_comment(node: Node, key: Any, value: str) -> None:
    """Set an entry's comment ("" or a bare line break: none), keeping the token, whose column
    places an end-of-line comment."""
    entry = node.ca.items.setdefault(key, [None, None, None, None] if isinstance(node, CommentedMap) else [None, None])
    token = entry[_slot(node)]
    if value in ("", "\n"):
        entry[_slot(node)] = None
    elif token is None:
        entry[_slot(node)] = CommentToken(value, CommentMark(0))
    else:
        token.value = value


def _last_entry(node: Node, key: Any) -> tuple[Node, Any]:
    """The entry whose comment holds what follows node[key]'s last line: the innermost last
    entry of the block collections it ends with."""
    value = node[key]
    while isinstance(value, (CommentedMap, CommentedSeq)) and value and not value.fa.flow_style():
        node, key = value, (next(reversed(value)) if isinstance(value, CommentedMap) else len(value) - 1)
        value = node[key]
    return node, key


def _take_trailing(node: Node, key: Any) -> str:
    """Remove and return the lines that follow node[key] (its end-of-line comment stays)."""
    node, key = _last_entry(node, key)
    eol, _, rest = _comment(node, key).partition("\n")
    _set_comment(node, key, eol + "\n")
    return rest


def _drop_eol_comment(node: CommentedMap, key: str) -> None:
    _, _, rest = _comment(node, key).partition("\n")
    _set_comment(node, key, "\n" + rest)


def _drop(node: CommentedMap, key: str) -> None:
    if key in node:
        del node[key]
        node.ca.items.pop(key, None)


def unified_diff(old: str, new: str, shown: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), shown, shown))


def patch_stack_file(stack_file: Path, shown: str, patch_file: Path, shown_patch: str, check: bool) -> str:
    """Apply a patch file to a stack file (unless `check`); the unified diff of the change."""
    patch = read_patch(patch_file, shown_patch)
    try:
        data = stack_file.read_bytes()
    except OSError as err:
        raise StackFileError(shown, f"cannot read the stack file: {err.strerror}") from None
    new_text = apply_patch(data, patch, shown)
    if not check:
        write_text(stack_file, new_text)
    return unified_diff(data.decode("utf-8"), new_text, shown)
