"""Checks of rendered objects against the real APIs: kubernetes-validate for core
kinds, the reference CRD schemas for custom resources, the pinned charts' values."""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path
from typing import Any, Iterable, Optional

import jsonschema
import kubernetes_validate
import pytest
import yaml

from inference_platform.core import versions
from platformctl.plan import is_k8s_object, manifest

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def reference_dir() -> Path | None:
    path = Path(os.environ.get("PLATFORM_REFERENCE_DIR") or PROJECT_ROOT.parent / "shared" / "reference")
    return path if path.is_dir() else None


def validate_core(doc: dict[str, Any]) -> None:
    """Raise unless a core object validates strictly (unknown fields refused)."""
    kubernetes_validate.validate(_with_placeholder_secrets(doc), versions.KUBERNETES_VERSION, strict=True)


def _with_placeholder_secrets(doc: dict[str, Any]) -> dict[str, Any]:
    # A Secret's data arrives redacted as one string; give the schema a map in its place.
    if doc.get("kind") != "Secret":
        return doc
    return {k: ({"redacted": v} if k in ("data", "stringData") and isinstance(v, str) else v) for k, v in doc.items()}


def _strict(schema: Any) -> Any:
    """Refuse unknown fields where the CRD's structural schema would prune them."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if isinstance(schema.get("pattern"), str):
            # Go accepts inline flags after ^ (PrometheusRule: ^(?i)(abort|warn)?$); Python wants them first.
            schema["pattern"] = re.sub(r"^\^\(\?([a-z]+)\)", r"(?\1)^", schema["pattern"])
        if schema.pop("x-kubernetes-int-or-string", False):
            schema.pop("type", None)
            schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if schema.pop("nullable", False) and "type" in schema:
            schema["type"] = [schema["type"], "null"]
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def schemas_of(docs: Iterable[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict openAPIV3Schema of every CustomResourceDefinition among `docs`."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for crd in docs:
        if not crd or crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            schema = copy.deepcopy(v["schema"]["openAPIV3Schema"])
            props = schema.setdefault("properties", {})
            # apiVersion, kind and metadata are checked by the API server, not the CRD schema.
            props["metadata"] = {"type": "object"}
            props["apiVersion"] = {"const": f"{group}/{v['name']}"}
            props["kind"] = {"const": kind}
            out[(f"{group}/{v['name']}", kind)] = _strict(schema)
    return out


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict openAPIV3Schema, from reference/crds."""
    return schemas_of(crd for path in sorted((reference_dir() / "crds").glob("*.yaml"))
                      for crd in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))


def validate_custom(doc: dict[str, Any], own: Optional[dict[tuple[str, str], dict[str, Any]]] = None) -> None:
    """Raise unless a custom resource validates against its reference CRD schema, or, for a kind
    the reference lacks, against `own` (the CRDs the same chart installs: schemas_of)."""
    key = (doc["apiVersion"], doc["kind"])
    schemas = {**(own or {}), **crd_schemas()}
    if key not in schemas:
        raise LookupError(f"no reference CRD for {key[0]} {key[1]}")
    jsonschema.validate(doc, schemas[key], cls=jsonschema.Draft7Validator)


# API groups under k8s.io that are CustomResourceDefinitions, not built into the API server:
# Gateway API and its inference extension (reference/crds).
CUSTOM_K8S_IO_GROUPS = frozenset({"gateway.networking.k8s.io", "inference.networking.k8s.io",
                                  "inference.networking.x-k8s.io"})


def is_core(doc: dict[str, Any]) -> bool:
    group = doc["apiVersion"].rsplit("/", 1)[0] if "/" in doc["apiVersion"] else ""
    if group in CUSTOM_K8S_IO_GROUPS:
        return False
    return group == "" or group.endswith(".k8s.io") or "." not in group


@functools.cache
def chart_values(chart_dir: str, version: str) -> dict[str, Any]:
    return yaml.safe_load((reference_dir() / "charts" / chart_dir / version / "values.yaml").read_text()) or {}


def _merged(defaults: Any, overrides: Any) -> Any:
    if not (isinstance(defaults, dict) and isinstance(overrides, dict)):
        return defaults if overrides is None else overrides
    return {**defaults, **{k: _merged(defaults.get(k), v) for k, v in overrides.items()}}


@functools.cache
def vendored_chart_values(chart: str, version: str) -> dict[str, Any]:
    """Defaults of a whole chart in reference/helm, as Helm coalesces them: its values.yaml, and
    under each vendored subchart's name that subchart's values.yaml beneath the parent's settings for it."""
    root = reference_dir() / "helm" / chart / version
    values = yaml.safe_load((root / "values.yaml").read_text()) or {}
    for sub in sorted((root / "charts").glob("*/values.yaml")):
        name = sub.parent.name
        values[name] = _merged(yaml.safe_load(sub.read_text()) or {}, values.get(name))
    return values


def unknown_values_keys(values: Any, defaults: Any, free_form: frozenset[str] = frozenset(), path: str = "") -> list[str]:
    """Key paths set in `values` that the chart's values.yaml does not have.

    Empty maps in the chart (podAnnotations: {}) and the paths in `free_form` take any keys.
    """
    if not isinstance(values, dict):
        return []
    missing = []
    for key, value in values.items():
        sub = f"{path}.{key}" if path else key
        if sub in free_form:
            continue
        if not isinstance(defaults, dict) or key not in defaults:
            missing.append(sub)
            continue
        default = defaults[key]
        if isinstance(default, dict) and default == {}:
            continue
        if isinstance(default, dict):
            missing += unknown_values_keys(value, default, free_form, sub)
    return missing


def validate(doc: dict[str, Any], own: Optional[dict[tuple[str, str], dict[str, Any]]] = None) -> None:
    """A rendered object against its schema: kubernetes-validate for core kinds, the vendored CRDs
    otherwise (or `own`, see validate_custom)."""
    if is_core(doc):
        validate_core(doc)
    else:
        validate_custom(doc, own)


def validate_rendered(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object a chart rendered against its schema, its own CRDs included; a failure names
    the object. Returns the CRD schemas the documents carry."""
    own = schemas_of(docs)
    for doc in docs:
        try:
            validate(doc, own)
        except Exception as err:
            raise AssertionError(f"{doc['kind']} {doc['metadata'].get('name')}: {err}") from err
    return own


def object_params(label: str, plan) -> list:
    """A pytest param per Kubernetes object of a plan, with an id `<label>:<kind>:<name>`, for the
    tests that validate every rendered object."""
    docs = [manifest(r) for r in plan.resources if is_k8s_object(r)]
    return [pytest.param(doc, id=f"{label}:{doc['kind']}:{doc['metadata']['name']}") for doc in docs]
