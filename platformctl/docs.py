"""The configuration reference, generated from the schema's docstrings."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from inference_platform.core import driver_support as support
from inference_platform.core import hardening
from inference_platform.core.versions import GPU_DRIVER_VERSION
from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.stack import Settings
from platformctl import exposure, reach

BEGIN = "<!-- config-reference:begin -->"
END = "<!-- config-reference:end -->"
OS_BEGIN = "<!-- os-support:begin -->"
OS_END = "<!-- os-support:end -->"
HARDENING_BEGIN = "<!-- hardening:begin -->"
HARDENING_END = "<!-- hardening:end -->"
EXPOSURE_BEGIN = "<!-- exposure:begin -->"
EXPOSURE_END = "<!-- exposure:end -->"
GRANTS_BEGIN = "<!-- reach-grants:begin -->"
GRANTS_END = "<!-- reach-grants:end -->"


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The settings model inside an annotation (Optional[X], list[X]), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _type_text(annotation: Any) -> str:
    """A type as users read it: constraints (Annotated metadata) left to the description."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        text = _type_text(inner[0]) if len(inner) == 1 else f"Union[{', '.join(_type_text(a) for a in inner)}]"
        return f"Optional[{text}]" if len(inner) < len(args) else text
    if origin is typing.Literal:
        return repr(annotation).replace("typing.", "")
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_text(a) for a in args)}]"
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def _type_name(annotation: Any) -> str:
    return _type_text(annotation).replace("|", "\\|")


def _default(field) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if value is PydanticUndefined or value is None:
        return "-"
    if isinstance(value, BaseModel):
        return "(see below)"
    if isinstance(value, bool):
        return str(value).lower()
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _rows(model: type[BaseModel], prefix: str) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}" if prefix.endswith(":") else f"{prefix}.{key}"
        sub = _model_of(field.annotation)
        is_list = typing.get_origin(field.annotation) is list
        type_text = f"list of {sub.__name__}" if sub and is_list else (sub.__name__ if sub else _type_name(field.annotation))
        doc = (field.description or "").replace("\n", " ").replace("|", "\\|")
        rows.append(f"| `{path}` | {type_text} | {_default(field)} | {doc} |")
        if sub is not None:
            rows += _rows(sub, path + ("[]" if is_list else ""))
    return rows


def reference() -> str:
    header = ["| key | type | default | description |", "|---|---|---|---|"]
    return "\n".join(header + _rows(Settings, f"{NAMESPACE}:")) + "\n"


def undocumented() -> list[str]:
    """Keys without a description (a test keeps this empty)."""
    missing = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            if not field.description:
                missing.append(f"{prefix}{field.alias or name}")
            sub = _model_of(field.annotation)
            if sub is not None:
                walk(sub, f"{prefix}{field.alias or name}.")

    walk(Settings, "")
    return missing


def os_support() -> str:
    """The table of node OSes: which Magnum driver boots each, which driver modes work there."""
    rows = [f"| `os` | booted by (image `os_distro`) | `precompiled`: branches; kernel; flavours | "
            f"`compiled` ({GPU_DRIVER_VERSION}) | `preinstalled` |", "|---|---|---|---|---|"]
    for os_id in support.OS_IDS:
        boots = ", ".join(f"{d} (`{m[os_id]}`)" for d, m in support.MAGNUM_OS_DISTRO.items() if os_id in m)
        p = support.PRECOMPILED.get(os_id)
        pre = f"{', '.join(p.branches)}; {' or '.join(p.kernels)}; {', '.join(p.flavors)}" if p else "no"
        rows.append(f"| `{os_id}` | {boots or 'no Magnum driver (existing clusters)'} | {pre} | "
                    f"{'yes' if os_id in support.COMPILED else 'no'} | yes |")
    return "\n".join(rows) + "\n"


def _between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + text[stop:]


# The documentation pages holding generated parts: page (relative to the repository), and per part
# its markers and the function that writes it.
GENERATED_PAGES = {
    "docs/reference.md": ((BEGIN, END, reference),),
    "docs/gpu.md": ((OS_BEGIN, OS_END, os_support),),
    "docs/policies.md": ((HARDENING_BEGIN, HARDENING_END, hardening.reference),),
    "docs/serving.md": ((EXPOSURE_BEGIN, EXPOSURE_END, exposure.documented_table),
                        (GRANTS_BEGIN, GRANTS_END, reach.grants_table)),
}


def update_page(page: str, text: str) -> str:
    """A documentation page with its generated parts renewed."""
    for begin, end, body in GENERATED_PAGES[page]:
        text = _between(text, begin, end, body())
    return text
