"""Generate components/args.py: the components' argument types, from the input models.

A component's arguments are a TypedDict (what the Pulumi schema analyzer reads, and what a
hosted component receives); the inputs model beside each component (`<package>/inputs.py`, named
by the registry in components/__init__.py, with the stack file's
settings models they hold) validate them and document every key. Each TypedDict here is
written from one model, with its docstrings, so a key is documented in one place only.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, SecretStr

from inference_platform import argument_models
from inference_platform.core.input_types import InputOf

ARGS_FILE = Path(__file__).resolve().parent.parent / "components" / "args.py"

# Component -> the model its arguments come from (the package's registry).
COMPONENT_MODELS: dict[str, type[BaseModel]] = argument_models()

HEADER = '''"""Argument types of the components, generated from their inputs models and the settings
models by `python -m platformctl docs`; do not edit. Keys are the models' Python names
(the Pulumi schema and the stack file spell them in camelCase)."""

# Ruff reads the strings inside Literal[...] as names (Literal is bound twice below); importing this
# module evaluates every annotation, so a real undefined name still fails.
# ruff: noqa: E501, F722, F821

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pulumi

if TYPE_CHECKING:
    from typing import Literal
else:
    class Literal:
        """A choice field: `Literal[...]` to type checkers; its values' type to the Pulumi schema
        analyzer, which knows Enum classes but not Literal (the description lists the choices)."""

        def __class_getitem__(cls, values):
            return type(values[0] if isinstance(values, tuple) else values)
'''


def _args_name(model: type[BaseModel]) -> str:
    for component, source in COMPONENT_MODELS.items():
        if source is model:
            return f"{component}Args"
    return f"{model.__name__}Args"


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    """The type inside Annotated[...] and its metadata."""
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        base, more = _strip(inner)
        return base, [*meta, *more]
    return annotation, []


class _Writer:
    def __init__(self) -> None:
        self.classes: dict[str, str] = {}
        self.pending: list[type[BaseModel]] = []

    def type_text(self, annotation: Any, field_meta: tuple = ()) -> str:
        annotation, meta = _strip(annotation)
        meta = [*field_meta, *meta]
        if any(isinstance(m, InputOf) for m in meta):
            return "pulumi.Input[str]"
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Union:
            inner = [a for a in args if a is not type(None)]
            # A value of one of several shapes (the schema has no unions): documented in its description.
            return self.type_text(inner[0]) if len(inner) == 1 else "Any"
        if origin is Literal:
            return f"Literal[{', '.join(json.dumps(a) for a in args)}]"
        if origin is list:
            return f"list[{self.type_text(args[0])}]"
        if origin is dict:
            return f"dict[str, {self.type_text(args[1])}]"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self.pending.append(annotation)
            return _args_name(annotation)
        if annotation is SecretStr:
            return "str"
        if annotation in (str, int, float, bool):
            return annotation.__name__
        raise TypeError(f"no argument type for {annotation!r}")

    def describe(self, field) -> str:
        doc = (field.description or "").strip()
        annotation, _ = _strip(field.annotation)
        literal = [a for a in typing.get_args(annotation) if typing.get_origin(a) is Literal] or (
            [annotation] if typing.get_origin(annotation) is Literal else [])
        if literal:
            choices = ", ".join(f"`{c}`" for c in typing.get_args(literal[0]))
            doc += f" One of: {choices}."
        default = field.get_default(call_default_factory=True)
        if not field.is_required() and default not in (None, {}, [], "") and not isinstance(default, BaseModel):
            shown = str(default).lower() if isinstance(default, bool) else default
            doc += f" Default: `{shown}`."
        return doc.replace("\\", "\\\\").replace('"""', "'''")

    def write(self, model: type[BaseModel]) -> None:
        lines = [f"class {_args_name(model)}(TypedDict):"]
        doc = (model.__doc__ or "").strip()
        if not doc or doc.startswith("Usage docs") or model.__doc__ is BaseModel.__doc__:
            doc = f"Arguments of `{model.__name__}` (see the configuration reference, docs/reference.md)."
        lines.append(f'    """{doc}"""')
        lines.append("")
        for name, field in model.model_fields.items():
            text = self.type_text(field.annotation, tuple(field.metadata))
            if not field.is_required():
                text = f"NotRequired[{text}]"
            lines.append(f"    {name}: {text}")
            lines.append(f'    """{self.describe(field)}"""')
        self.classes[_args_name(model)] = "\n".join(lines)

    def visit(self, model: type[BaseModel], order: list[str]) -> None:
        """Write `model` after every model it holds: the analyzer reads evaluated
        annotations, so a class must exist before another names it."""
        name = _args_name(model)
        if name in self.classes or name in order:
            return
        order.append(name)  # marks it in progress
        self.pending = []
        self.write(model)
        for held in list(self.pending):
            self.visit(held, order)
        order.remove(name)
        self.written.append(name)

    def run(self) -> str:
        self.written: list[str] = []
        for model in COMPONENT_MODELS.values():
            self.visit(model, [])
        body = "\n\n\n".join(self.classes[name] for name in self.written)
        return HEADER + "\n\n" + body + "\n"


def generate() -> str:
    return _Writer().run()

