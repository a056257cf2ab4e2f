"""How a bad stack file is reported: key paths (`KeyPath`), their text, and `ConfigError`."""

from __future__ import annotations

import json
import re
from typing import Any, Collection, Union

from pydantic import ValidationError

from inference_platform.settings.base import NAMESPACE

KeyPath = tuple[Union[str, int], ...]


def format_path(path: KeyPath, namespace: str = NAMESPACE) -> str:
    """`("services", 1, "versions", 0, "weight")` -> `inference-platform:services[1].versions[0].weight`
    (without a namespace, a component argument's path: `service.versions[0].weight`)."""
    text = f"{namespace}:" if namespace else ""
    for i, part in enumerate(path):
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_/.-]+", str(part)):
            text += ("." if i else "") + str(part)
        else:
            # A key from the stack file with spaces, quotes or newlines: quoted and escaped.
            text += f"[{json.dumps(str(part))}]"
    return text


class ConfigError(Exception):
    """Invalid stack configuration: one or more (key path, problem) pairs."""

    def __init__(self, stack_file: str, problems: list[tuple[KeyPath, str]], namespace: str = NAMESPACE):
        self.stack_file = stack_file
        self.problems = problems
        self.namespace = namespace
        super().__init__(self.one_line())

    def one_line(self) -> str:
        # Messages may echo input; the offline plan promises exactly one line.
        parts = [f"{format_path(p, self.namespace)}: {msg}".replace("\n", "\\n") for p, msg in self.problems]
        return f"{self.stack_file}: invalid configuration: " + "; ".join(parts)

    @property
    def paths(self) -> list[str]:
        return [format_path(p, self.namespace) for p, _ in self.problems]


# Strict type errors, with what the stack file should say instead.
_TYPE_ERRORS = {
    "bool_type": " (write true or false, unquoted)",
    "int_type": " (write a whole number, unquoted)",
    "float_type": " (write a number, unquoted)",
    "string_type": " (write text; quote it if it looks like a number or boolean)",
    "dict_type": "", "list_type": "", "model_type": " (write a mapping of keys)",
    "literal_error": "", "int_from_float": "",
}


def _describe(value: Any) -> str:
    kind = {bool: "the boolean", int: "the integer", float: "the number", str: "the string",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)
    if isinstance(value, (list, dict)):
        return kind
    text = json.dumps(value) if isinstance(value, str) else repr(value).lower() if isinstance(value, bool) else repr(value)
    return f"{kind} {text[:60]}"


def pydantic_problems(err: ValidationError, hidden: Collection[str] = ()) -> list[tuple[KeyPath, str]]:
    """The problems pydantic found, by key path; the value given is echoed except under the
    top-level keys `hidden` (secrets)."""
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        if e["type"] == "unknown_key":
            loc += (e["ctx"]["key"],)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in _TYPE_ERRORS and not (loc and loc[0] in hidden):
            msg = f"{msg}, not {_describe(e['input'])}" + _TYPE_ERRORS[e["type"]]
        if e["type"] == "missing":
            msg = "required key is missing"
        problems.append((loc, msg))
    return problems
