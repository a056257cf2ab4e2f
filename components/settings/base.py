"""The building blocks of the stack-file schema: the `Model` base every section derives from
(camelCase keys, no unknown keys, frozen) and the annotated string types built on core/grammar.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from inference_platform.core import grammar

NAMESPACE = "inference-platform"


def _checked(check, *args) -> AfterValidator:
    return AfterValidator(lambda v: check(v, *args))


def _path_float(value: Any) -> Any:
    # `pulumi config set --path key 0.5` (no --type) stores the decimal as a string; that
    # form, and only it, is read as a number.
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+\.[0-9]+", value):
        return float(value)
    return value


def _top_level_bool(value: Any) -> Any:
    # Pulumi passes every top-level value as a string; `pulumi config set production true` writes "true".
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _labels(labels: dict[str, str]) -> dict[str, str]:
    for k, v in labels.items():
        grammar.qualified_key(k)
        grammar.label_value(v)
    return labels


# Directories an upload must never walk: the file system's root and the system's own trees.
SYSTEM_DIRECTORIES = frozenset(Path(p) for p in (
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/media", "/mnt", "/opt", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
))


def upload_source(value: str) -> str:
    """An upload source: an existing, readable directory (relative to the project, where
    `pulumi up` runs), neither a system directory nor inside /proc, /sys or /dev."""
    if not value or grammar.CONTROL.search(value):
        raise ValueError(f"{value!r} is not a directory path")
    path = Path(value).expanduser()
    resolved = path.resolve()
    if resolved in SYSTEM_DIRECTORIES or resolved == Path.home().resolve() or resolved.parts[1:2] in (("proc",), ("sys",), ("dev",)):
        raise ValueError(f"{value!r} is the system directory {resolved}; upload a model-repository directory")
    if not resolved.is_dir():
        raise ValueError(f"{value!r} is not an existing directory (relative paths start at the project directory)")
    try:
        next(iter(os.scandir(resolved)), None)
    except OSError as err:
        raise ValueError(f"{value!r} cannot be read: {err.strerror}") from None
    return value


# String types named by the grammar of where they go (see grammar.py for what each allows).
DnsLabel = Annotated[str, AfterValidator(grammar.dns_label)]


ShortName = Annotated[str, _checked(grammar.dns_label, 40)]


Subdomain = Annotated[str, AfterValidator(grammar.dns_subdomain)]


Host = Annotated[str, AfterValidator(grammar.hostname)]


HostOrIp = Annotated[str, AfterValidator(grammar.host_or_ip)]


Text = Annotated[str, AfterValidator(grammar.text)]


Quantity = Annotated[str, AfterValidator(grammar.positive_quantity)]


Image = Annotated[str, AfterValidator(grammar.image_reference)]


RelativePath = Annotated[str, AfterValidator(grammar.relative_path)]


Cidr = Annotated[str, AfterValidator(grammar.cidr)]


HttpsUrl = Annotated[str, AfterValidator(grammar.url)]


# Numbers: finite (ConfigDict allow_inf_nan=False), strict, plus the decimal-string form of `--path`.
Number = Annotated[float, BeforeValidator(_path_float)]


Labels = Annotated[dict[str, str], AfterValidator(_labels)]


# A Triton model name as its model repositories and configs take it.
TritonModelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")]


GpuModel = Literal[
    "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB",
    "A30-24GB", "L40S-48GB", "L4-24GB", "T4-16GB",
]


class Model(BaseModel):
    """Base of every settings object: camelCase keys, frozen, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=True,
        strict=True,
        allow_inf_nan=False,
    )

    # Unknown keys are pydantic's `extra_forbidden` errors, each reported beside every other error
    # of the same input; settings/errors.pydantic_problems names the keys allowed there.
    @model_validator(mode="before")
    @classmethod
    def _refuse_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None:
                    raise PydanticCustomError(
                        # pydantic fills `{key}` only (no conversions such as !r).
                        "null_value", "{key}: null is not a value; remove the key to use its default", {"key": str(key)})
        return data


def _mode_settings(mode_key: str, mode: str, wanted: str, key: str, value: Any, needs: str) -> None:
    """Settings that belong to one mode: required with it, refused with any other."""
    if mode == wanted and value is None:
        raise ValueError(f"{mode_key} '{wanted}' needs {needs}")
    if mode != wanted and value is not None:
        raise ValueError(f"{key} applies to {mode_key} '{wanted}' only, {mode_key} is '{mode}'")
