"""How a bad stack file is reported: key paths (`KeyPath`), their text, and `ConfigError`."""

from __future__ import annotations

import json
import re
import typing
from typing import Any, Collection, Optional, Union

from pydantic import BaseModel, ValidationError

from inference_platform.settings.base import NAMESPACE

KeyPath = tuple[Union[str, int], ...]


_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class RawKey(str):
    """A config key outside the project's namespace, shown as written (`inference-platfrom:production`)."""


def _item_label(items: list, index: int) -> str:
    """A list item by its `name` where that names it alone (`resnet`), else by position (`1`)."""
    item = items[index] if 0 <= index < len(items) else None
    name = item.get("name") if isinstance(item, dict) else None
    if isinstance(name, str) and _NAME.fullmatch(name) and not name.isdigit():
        if sum(isinstance(i, dict) and i.get("name") == name for i in items) == 1:
            return name
    return str(index)


def format_path(path: KeyPath, namespace: str = NAMESPACE, source: Any = None) -> str:
    """`("services", 1, "versions", 0, "weight")` -> `inference-platform:services[resnet].versions[v2].weight`
    where `source` (the config the path points into) names the items, else by position:
    `services[1].versions[0].weight` (also for a problem with the item's name itself:
    `services[1].name`); without a namespace, a component argument's path."""
    if path and isinstance(path[0], RawKey):
        text, path, source = str(path[0]), path[1:], None
        node = None
    else:
        text = f"{namespace}:" if namespace else ""
        node = source
    for i, part in enumerate(path):
        if isinstance(part, int):
            # A problem with an item's name itself names the item by position.
            if isinstance(node, list) and path[i + 1:] != ("name",):
                text += f"[{_item_label(node, part)}]"
                node = node[part] if 0 <= part < len(node) else None
            else:
                text += f"[{part}]"
                node = None
        else:
            if re.fullmatch(r"[A-Za-z0-9_/.-]+", str(part)):
                text += ("." if text and not text.endswith(":") else "") + str(part)
            else:
                # A key from the stack file with spaces, quotes or newlines: quoted and escaped.
                text += f"[{json.dumps(str(part))}]"
            node = node.get(part) if isinstance(node, dict) else None
    return text


class ConfigError(Exception):
    """Invalid stack configuration: one or more (key path, problem) pairs; `source`, the config
    as written, names list items in the key paths."""

    def __init__(self, stack_file: str, problems: list[tuple[KeyPath, str]], namespace: str = NAMESPACE,
                 source: Any = None):
        self.stack_file = stack_file
        self.problems = problems
        self.namespace = namespace
        self.source = source
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One complete line per problem: file, key path, what is wrong (input echoed in a
        message cannot break the line)."""
        return [f"{self.stack_file}: invalid configuration: {path}: {msg}".replace("\r", "\\r").replace("\n", "\\n")
                for path, (_, msg) in zip(self.paths, self.problems, strict=True)]

    def one_line(self) -> str:
        """All problems on one line, for logs that keep one line per event."""
        return "; ".join(self.lines())

    @property
    def paths(self) -> list[str]:
        return [format_path(p, self.namespace, self.source) for p, _ in self.problems]


MISSING = "required key is missing"


def how_to_set_secret(*keys: str) -> str:
    """How to give a secret: the stack file's `secure:` form, which the offline plan reads without
    decrypting, and the CLI command that writes the real ciphertext for `pulumi up`."""
    written = "{secure: <any text>}"
    for key in reversed(keys):
        written = f"{{{key}: {written}}}"
    dotted = ".".join(keys)
    command = f"pulumi config set --secret --path '{dotted}' ..." if len(keys) > 1 else f"pulumi config set --secret {dotted} ..."
    return f"offline, write `{written[1:-1]}` under config: in the stack file; for `pulumi up`, run `{command}`"

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


def unwrapped(annotation: Any) -> Any:
    """The model (or list, dict) inside Annotated[...] and Optional[...]."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin is Union:
            inner = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(inner) != 1:
                return annotation
            annotation = inner[0]
        else:
            return annotation


def model_at(model: Optional[type[BaseModel]], path: KeyPath) -> Optional[type[BaseModel]]:
    """The model that validates the mapping at `path` (keys by Python name or alias, list
    indexes, dict keys) under `model`; None where no single model does."""
    at: Any = model
    for part in path:
        at = unwrapped(at)
        if isinstance(at, type) and issubclass(at, BaseModel):
            name = next((n for n, f in at.model_fields.items() if part in (n, f.alias)), None)
            at = at.model_fields[name].annotation if name else None
            continue
        args, origin = typing.get_args(at), typing.get_origin(at)
        at = args[0] if origin is list and args else args[1] if origin is dict and len(args) == 2 else None
    at = unwrapped(at)
    return at if isinstance(at, type) and issubclass(at, BaseModel) else None


def unknown_key_message(model: Optional[type[BaseModel]], python_names: bool = False) -> str:
    """What an unknown key of `model`'s mapping is told: the keys allowed there, as the stack
    file spells them or, for a component's arguments, as the Python API does."""
    if model is None:
        return "unknown key"
    names = sorted(n if python_names else (f.alias or n) for n, f in model.model_fields.items())
    return f"unknown key; allowed keys here: {', '.join(names)}"


def pydantic_problems(err: ValidationError, hidden: Collection[str] = (), model: Optional[type[BaseModel]] = None,
                      python_names: bool = False) -> list[tuple[KeyPath, str]]:
    """The problems pydantic found, by key path; the value given is echoed except under the
    top-level keys `hidden` (secrets). `model`: the model validated, whose mappings name the
    keys they allow to an unknown key (in Python names with `python_names`)."""
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = unknown_key_message(model_at(model, loc[:-1]), python_names)
        if e["type"] in _TYPE_ERRORS and not (loc and loc[0] in hidden):
            msg = f"{msg}, not {_describe(e['input'])}" + _TYPE_ERRORS[e["type"]]
        if e["type"] == "missing":
            msg = MISSING
        problems.append((loc, msg))
    return problems
