"""A component's arguments validated like a stack file.

Each component's inputs model (`<package>/inputs.py`) holds its own settings (the stack file's
models, the same checks) and the *names* it consumes from other parts, never another component's
object; `validated` turns the arguments a program or another language hands over into that model,
or raises `ConfigError` naming the component's argument keys."""

from __future__ import annotations

import functools
import re
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from inference_platform.settings.base import Model
from inference_platform.settings.errors import ConfigError, KeyPath, pydantic_problems, unwrapped
from inference_platform.settings.stack import SECRET_KEYS

M = TypeVar("M", bound=Model)


def validated(model: type[M], args: Any, component: str) -> M:
    """A component's arguments as its input model: the model itself where the platform passes
    one already validated; otherwise validated like a stack file, errors naming `<component>Args`:
    every error of the arguments' shapes, types and values at once (all unknown keys among them),
    then, once those are sound, every problem the component's checks find, at once; key paths and
    the keys the messages name in the Python API's names."""
    if isinstance(args, model):
        return args
    try:
        checked = model.model_validate(args)
    except ValidationError as err:
        problems = pydantic_problems(err, SECRET_KEYS, model, python_names=True)
        raise ConfigError(f"{component}Args", python_problems(model, problems), namespace="", source=args) from None
    # What the stack file's cross checks say about this component's own settings.
    problems = checked.problems() if hasattr(checked, "problems") else []
    if problems:
        raise ConfigError(f"{component}Args", python_problems(model, problems), namespace="", source=args)
    return checked


def python_problems(model: type[Model], problems: list[tuple[KeyPath, str]]) -> list[tuple[KeyPath, str]]:
    """Problems in the Python API's names (`max_replicas`, not the stack file's `maxReplicas`),
    whichever spelling the arguments used and the checks report: their key paths (python_path)
    and the keys their messages name (python_message)."""
    names = _python_names(model)
    return [(python_path(model, path), python_message(why, names)) for path, why in problems]


def python_path(model: type[Model], path: KeyPath) -> KeyPath:
    """path with every model field named by its Python name; list indexes and dict keys (names
    a user chose) kept as they are. Walks the models' annotations along the path."""
    out: list[Any] = []
    at: Any = model
    for part in path:
        at = unwrapped(at)
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


# A camelCase word outside quotes and backticks, on its own or as part of a dotted key path
# (`weights.s3SecretName`), not a flag (`--modelRepository`) nor part of a hyphenated name.
_CAMEL = re.compile(r"(?<![\w-])[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*(?![\w-])")
_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\"|`[^`]*`)")


def python_message(message: str, names: dict[str, str]) -> str:
    """message with each key it names in the stack file's camelCase (`llmBackend`) in the
    Python API's name (`llm_backend`); `names`: alias -> Python name of the component's models.
    Quoted text (values, commands) is left as written."""
    parts = _QUOTED.split(message)
    return "".join(part if i % 2 else _CAMEL.sub(lambda m: names.get(m.group(0), m.group(0)), part)
                   for i, part in enumerate(parts))


@functools.cache
def _python_names(model: type[Model]) -> dict[str, str]:
    """alias -> Python name of every field of `model` and the models it holds, except aliases
    that are also a choice of some field (`fileShare` is `cache`'s value as well as a key)."""
    names: dict[str, str] = {}
    choices: set[str] = set()
    seen: set[type] = set()

    def walk(annotation: Any) -> None:
        annotation = unwrapped(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                return
            seen.add(annotation)
            for name, field in annotation.model_fields.items():
                if field.alias and field.alias != name:
                    names[field.alias] = name
                walk(field.annotation)
            return
        if typing.get_origin(annotation) is typing.Literal:
            choices.update(str(a) for a in typing.get_args(annotation))
        for arg in typing.get_args(annotation):
            walk(arg)

    walk(model)
    return {alias: name for alias, name in names.items() if alias not in choices}
