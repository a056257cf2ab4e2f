"""`platformctl init CUSTOMER ENV`: a new, commented stack file that plans at once.

The file holds the few keys a new stack must decide (cluster mode, node groups, weight cache) with
the settings models' defaults, each key commented with its own docstring, so the stack file and the
generated reference never disagree. Values the platform cannot know (a node selector, a flavor, the
NFS export, the S3 endpoint) are written as placeholders, `REPLACE-ME-...`, which the stack loader
refuses key by key (settings/placeholders.py): the stack plans once they are filled in. `init`
checks the file with sample values in their place, so filling them is all it needs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated, Any, Optional

from pydantic import BaseModel, TypeAdapter, ValidationError

from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.cluster import ClusterSettings, GpuSpec, MagnumCluster, NodeGroup
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.identity import production_named
from inference_platform.settings.loader import settings_from_config
from inference_platform.settings.placeholders import PLACEHOLDER
from inference_platform.settings.stack import Settings
from inference_platform.settings.weights import FileShareCache, S3Cache, WeightCacheSettings

from .engine import engine_config, shown_path
from .errors import UsageError
from .stack_names import shown
from .stackfile import read_stack_config

CLUSTER_MODES = ("existing", "magnum")
CACHES = ("fileShare", "s3")
GPU_MODELS: tuple[str, ...] = TypeAdapter(GpuSpec.model_fields["model"].annotation).json_schema()["enum"]
# Offline placeholders in Pulumi's own secure form; `pulumi config set --secret` replaces them.
SECURE_PLACEHOLDER = "AAABAInitPlaceholderSetWithPulumiConfigSetSecret"


def describe(model: type[BaseModel], field: str) -> str:
    """A field's docstring, one line: what the stack file's comment says about the key."""
    return " ".join((model.model_fields[field].description or "").split())


def _checked(flag: str, value: str, model: type[BaseModel], field: str) -> str:
    """value checked with the schema's own type for `model.field`, or a one-line UsageError."""
    info = model.model_fields[field]
    schema_type = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    try:
        return TypeAdapter(schema_type).validate_python(value)
    except ValidationError as err:
        reason = err.errors()[0]["msg"].removeprefix("Value error, ")
        raise UsageError(f"{flag} {shown(value)}: {reason}") from None


def checked_names(customer: str, environment: str) -> tuple[str, str]:
    """The customer and environment names, checked with the grammar of the stack file's keys."""
    return _checked("customer", customer, Settings, "customer"), _checked("environment", environment, Settings, "environment")


def parse_gpu_groups(specs: list[str]) -> list[tuple[str, str]]:
    """`--gpu-group NAME=MODEL` flags as (name, model), names unique and not `cpu`."""
    groups: list[tuple[str, str]] = []
    for spec in specs:
        name, sep, model = spec.partition("=")
        if not sep:
            raise UsageError(f"--gpu-group {shown(spec)}: expected NAME=MODEL, e.g. a100=A100-80GB")
        name = _checked("--gpu-group name", name, NodeGroup, "name")
        if model not in GPU_MODELS:
            raise UsageError(f"--gpu-group {shown(spec)}: unknown GPU model {shown(model)}; allowed: {', '.join(GPU_MODELS)}")
        if name == "cpu" or name in (g for g, _ in groups):
            raise UsageError(f"--gpu-group {shown(spec)}: group name {name!r} is taken; every group needs a name of its own")
        groups.append((name, model))
    return groups


class _Yaml:
    """A YAML document written line by line, each key under the comment that says what it is."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def comment(self, indent: int, text: str) -> None:
        self.lines.append(f"{' ' * indent}# {text}")

    def key(self, indent: int, key: str, value: Any = None, doc: str = "", item: bool = False) -> None:
        if doc:
            self.comment(indent - 2 if item else indent, doc)
        lead = f"{' ' * (indent - 2)}- " if item else " " * indent
        self.lines.append(f"{lead}{key}:" + ("" if value is None else f" {_scalar(value)}"))


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    return f'"{value}"' if any(c in str(value) for c in ":#{}[],&*!|>'\"%@`") else str(value)


# Each value `init` cannot know: the placeholder it writes, and a valid sample `init` checks the file with.
def _unknown(sample: Any, placeholder: Any, fill: bool) -> Any:
    return sample if fill else placeholder


def _node_group(y: _Yaml, mode: str, name: str, model: Optional[str], first: bool, fill: bool) -> None:
    y.key(6, "name", name, describe(NodeGroup, "name"), item=True)
    if mode == "existing":
        selector = _unknown({"node-pool.example.com/name": name}, {f"{PLACEHOLDER}-node-label": name}, fill)
        y.key(6, "selector", selector, "EDIT: " + describe(NodeGroup, "selector"))
        if model:
            y.key(6, "os", "ubuntu-24.04", "EDIT: " + describe(NodeGroup, "os"))
    elif not first:
        y.key(6, "flavor", _unknown(f"sample-{name}-flavor", f"{PLACEHOLDER}-{name}-flavor", fill),
              "EDIT: " + describe(NodeGroup, "flavor"))
    y.key(6, "minNodes", NodeGroup.model_fields["min_nodes"].default, describe(NodeGroup, "min_nodes"))
    y.key(6, "maxNodes", NodeGroup.model_fields["max_nodes"].default, describe(NodeGroup, "max_nodes"))
    if model:
        y.key(6, "gpu", None, describe(NodeGroup, "gpu"))
        y.key(8, "model", model, describe(GpuSpec, "model"))
        y.key(8, "perNode", GpuSpec.model_fields["per_node"].default, describe(GpuSpec, "per_node"))


def stack_file_text(customer: str, environment: str, cluster_mode: str, gpu_groups: list[tuple[str, str]], cache: str,
                    fill: bool = False) -> str:
    """The commented stack file `init` writes; `fill`: with valid samples in place of the
    placeholders (what `init` checks)."""
    y = _Yaml()
    y.comment(0, f"Stack {customer}-{environment}, written by `python -m platformctl init`. Keys marked EDIT hold")
    y.comment(0, f"values to check; a {PLACEHOLDER}-... value must be replaced by the real one: the plan refuses")
    y.comment(0, "the stack, naming each such key, until it is. Every key is documented in docs/ (the configuration reference).")
    y.lines.append("config:")
    p = f"{NAMESPACE}:"
    y.key(2, p + "customer", customer, describe(Settings, "customer"))
    y.key(2, p + "environment", environment, describe(Settings, "environment"))
    y.key(2, p + "production", production_named(environment) or Settings.model_fields["production"].default,
          describe(Settings, "production"))
    y.key(2, p + "cluster", None, describe(Settings, "cluster"))
    y.key(4, "mode", cluster_mode, describe(ClusterSettings, "mode"))
    if cluster_mode == "magnum":
        y.key(4, "magnum", None, describe(ClusterSettings, "magnum"))
        y.key(6, "driver", MagnumCluster.model_fields["driver"].default, describe(MagnumCluster, "driver"))
        y.key(6, "kubernetesVersion", MagnumCluster.model_fields["kubernetes_version"].default,
              describe(MagnumCluster, "kubernetes_version"))
    y.key(4, "nodeGroups", None, describe(ClusterSettings, "node_groups"))
    _node_group(y, cluster_mode, "cpu", None, first=True, fill=fill)
    for name, model in gpu_groups:
        _node_group(y, cluster_mode, name, model, first=False, fill=fill)
    y.key(2, p + "weightCaches", None, describe(Settings, "weight_caches"))
    if cache == "fileShare":
        y.key(4, "fileShare", None, describe(WeightCacheSettings, "file_share"))
        if cluster_mode == "magnum":
            y.key(6, "mode", "manila", describe(FileShareCache, "mode"))
            y.key(6, "sizeGb", FileShareCache.model_fields["size_gb"].default, describe(FileShareCache, "size_gb"))
        else:
            y.key(6, "mode", "existing", describe(FileShareCache, "mode"))
            y.key(6, "server", _unknown("10.0.0.20", f"{PLACEHOLDER}-nfs-server", fill),
                  "EDIT: " + describe(FileShareCache, "server"))
            y.key(6, "path", _unknown("/exports/models", f"/{PLACEHOLDER}-nfs-export", fill),
                  "EDIT: " + describe(FileShareCache, "path"))
    else:
        y.key(4, "s3", None, describe(WeightCacheSettings, "s3"))
        y.key(6, "endpoint", _unknown("https://s3.example.cloud", f"https://{PLACEHOLDER}-s3-endpoint", fill),
              "EDIT: " + describe(S3Cache, "endpoint"))
        y.key(6, "bucket", f"{customer}-{environment}-models", "EDIT: " + describe(S3Cache, "bucket"))
        for key, field in (("s3AccessKeyId", "s3_access_key_id"), ("s3SecretAccessKey", "s3_secret_access_key")):
            y.key(2, p + key, None, describe(Settings, field) + f" EDIT: pulumi config set --secret {key} ...")
            y.key(4, "secure", SECURE_PLACEHOLDER)
    y.key(2, p + "services", [], describe(Settings, "services") + " Add one per model (docs/getting-started.md).")
    return "\n".join(y.lines) + "\n"


def init_stack(stack_file: Path, customer: str, environment: str, cluster_mode: str, gpu_specs: list[str], cache: str,
               stack: Optional[str] = None) -> list[str]:
    """Write a new stack file; refuse an existing one. The text, with samples in place of its
    placeholders, is validated by the stack loader (against `stack`, the stack's name) before
    the file appears, and the file appears whole or not at all. Returns the key paths of the
    placeholders to fill."""
    customer, environment = checked_names(customer, environment)
    groups = parse_gpu_groups(gpu_specs)
    text = stack_file_text(customer, environment, cluster_mode, groups, cache)
    sample = stack_file_text(customer, environment, cluster_mode, groups, cache, fill=True)
    if os.path.lexists(stack_file):
        raise UsageError(f"{shown_path(stack_file)} exists; init never overwrites a stack file: edit it, or remove it first")
    stack_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = stack_file.with_name(f".{stack_file.name}.init-{os.getpid()}")
    try:
        tmp.write_text(sample)
        settings_from_config(*engine_config(read_stack_config(tmp, shown_path(stack_file))), shown_path(stack_file), stack)
        tmp.write_text(text)
        try:
            settings_from_config(*engine_config(read_stack_config(tmp, shown_path(stack_file))), shown_path(stack_file), stack)
            to_fill: list[str] = []
        except ConfigError as err:
            to_fill = err.paths  # the placeholders only: the sample of this very text passed
        os.link(tmp, stack_file)  # fails rather than replace a file that appeared meanwhile
    except FileExistsError:
        raise UsageError(f"{shown_path(stack_file)} exists; init never overwrites a stack file: edit it, or remove it first") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return to_fill
