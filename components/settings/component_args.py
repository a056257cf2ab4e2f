"""A component's arguments validated like a stack file.

Each component's inputs model (`<package>/inputs.py`) holds its own settings (the stack file's
models, the same checks) and the *names* it consumes from other parts, never another component's
object; `validated` turns the arguments a program or another language hands over into that model,
or raises `ConfigError` naming the component's argument keys."""

from __future__ import annotations

import typing
from typing import Any, TypeVar, Union

from pydantic import BaseModel, ValidationError

from inference_platform.settings.base import Model
from inference_platform.settings.errors import ConfigError, KeyPath, pydantic_problems
from inference_platform.settings.stack import SECRET_KEYS

M = TypeVar("M", bound=Model)


def validated(model: type[M], args: Any, component: str) -> M:
    """A component's arguments as its input model: the model itself where the platform passes
    one already validated; otherwise validated like a stack file, errors naming `<component>Args`."""
    if isinstance(args, model):
        return args
    try:
        checked = model.model_validate(args)
    except ValidationError as err:
        raise ConfigError(f"{component}Args", python_paths(model, pydantic_problems(err, SECRET_KEYS)), namespace="",
                          source=args) from None
    # What the stack file's cross checks say about this component's own settings.
    problems = checked.problems() if hasattr(checked, "problems") else []
    if problems:
        raise ConfigError(f"{component}Args", python_paths(model, problems), namespace="", source=args)
    return checked


def python_paths(model: type[Model], problems: list[tuple[KeyPath, str]]) -> list[tuple[KeyPath, str]]:
    """Problems with their key paths in the Python API's names (`max_replicas`, not the stack
    file's `maxReplicas`), whichever spelling the arguments used and the checks report."""
    return [(python_path(model, path), why) for path, why in problems]


def python_path(model: type[Model], path: KeyPath) -> KeyPath:
    """path with every model field named by its Python name; list indexes and dict keys (names
    a user chose) kept as they are. Walks the models' annotations along the path."""
    out: list[Any] = []
    at: Any = model
    for part in path:
        at = _unwrapped(at)
        if isinstance(at, type) and issubclass(at, BaseModel) and isinstance(part, str):
            name = next((n for n, f in at.model_fields.items() if part in (n, f.alias)), None)
            out.append(name or part)
            at = at.model_fields[name].annotation if name else None
            continue
        out.append(part)
        args = typing.get_args(at)
        origin = typing.get_origin(at)
        at = args[0] if origin is list and args else args[1] if origin is dict and len(args) == 2 else None
    return tuple(out)


def _unwrapped(annotation: Any) -> Any:
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
