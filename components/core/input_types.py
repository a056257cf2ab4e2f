"""Argument types for names one part hands another: each takes a plain value, checked by its
grammar, or a `pulumi.Output` (a name read from another stack or component), passed through."""

from typing import Annotated, Any

import pulumi
from pydantic import AfterValidator

from inference_platform.core import grammar


class InputOf:
    """Marks a field that may also be a `pulumi.Output` (a name read from another stack or
    component): validated when it is a plain value, passed through as it is otherwise."""

    def __init__(self, check):
        self.check = check

    def __call__(self, value: Any) -> Any:
        if isinstance(value, pulumi.Output):
            return value
        if not isinstance(value, str):
            raise ValueError(f"expected text, not {type(value).__name__}")
        return self.check(value)


def _input(check) -> Any:
    marker = InputOf(check)
    return Annotated[Any, AfterValidator(marker), marker]


def namespaced_ref(value: str) -> str:
    """`<namespace>/<name>` of a namespaced object: a DNS label and a DNS subdomain."""
    namespace, _, name = value.partition("/")
    grammar.dns_label(namespace)
    grammar.dns_subdomain(name)
    return value


GatewayInput = _input(namespaced_ref)
NameInput = _input(grammar.dns_label)
TextInput = _input(grammar.text)
