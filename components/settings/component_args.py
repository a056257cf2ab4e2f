"""A component's arguments validated like a stack file.

Each component's inputs model (`<package>/inputs.py`) holds its own settings (the stack file's
models, the same checks) and the *names* it consumes from other parts, never another component's
object; `validated` turns the arguments a program or another language hands over into that model,
or raises `ConfigError` naming the component's argument keys."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError

from inference_platform.settings.base import Model
from inference_platform.settings.errors import ConfigError, pydantic_problems
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
        raise ConfigError(f"{component}Args", pydantic_problems(err, SECRET_KEYS), namespace="", source=args) from None
    # What the stack file's cross checks say about this component's own settings.
    problems = checked.problems() if hasattr(checked, "problems") else []
    if problems:
        raise ConfigError(f"{component}Args", problems, namespace="", source=args)
    return checked
