"""The example stacks as the real tier runs them: each stack file as a user would deploy it on an
existing cluster (the KWOK one), its secrets set with `pulumi config set --secret`, the charts from
the local chart directory, the day-2 edits the diff tests cover, and what cannot be ready without a
real operator or cloud (with the reason)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from inference_platform.core.chart_source import ENVIRONMENT_VARIABLE
from tests.support.conformance import reference_dir

ROOT = Path(__file__).resolve().parents[2]
Edit = Callable[[dict], None]


def _services(config: dict) -> list[dict]:
    return config["inference-platform:services"]


def weights(service: int, *values: int) -> Edit:
    def edit(config: dict) -> None:
        for version, weight in zip(_services(config)[service]["versions"], values, strict=True):
            version["weight"] = weight
    return edit


def add_version(service: int, name: str) -> Edit:
    def edit(config: dict) -> None:
        versions = _services(config)[service]["versions"]
        versions.append({**{k: copy.deepcopy(v) for k, v in versions[-1].items() if k != "tuning"}, "name": name, "weight": 0})
    return edit


def remove_version(service: int, name: str) -> Edit:
    def edit(config: dict) -> None:
        versions = _services(config)[service]["versions"]
        versions[:] = [v for v in versions if v["name"] != name]
    return edit


def without_secure_placeholders(text: str) -> str:
    """The stack file without its `secure:` placeholder values (the real engine cannot decrypt them;
    the test sets each secret as a user does, `pulumi config set --secret`)."""
    raw = yaml.safe_load(text)

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not (isinstance(v, dict) and set(v) == {"secure"})}
        return value
    raw["config"] = strip(raw["config"])
    return yaml.safe_dump(raw, sort_keys=False)


@dataclass
class RealStack:
    stack: str
    day2_edits: list[tuple[str, Edit]] = field(default_factory=list)
    allowed_unready: dict[str, str] = field(default_factory=dict)
    secret_values: dict[str, str] = field(default_factory=dict)

    def stack_text(self) -> str:
        return without_secure_placeholders((ROOT / "stacks" / f"Pulumi.{self.stack}.yaml").read_text())

    def context(self, settings) -> str:
        existing = settings.cluster.existing
        return (existing.context if existing is not None and existing.context else None) or f"kwok-{self.stack}"

    def secrets(self) -> dict[str, str]:
        return dict(self.secret_values)

    def environment(self, cluster) -> dict[str, str]:
        ref = reference_dir()
        assert ref is not None, "../shared/reference is absent (set PLATFORM_REFERENCE_DIR)"
        return {ENVIRONMENT_VARIABLE: str(ref / "helm")}


REAL_STACKS = [
    RealStack(
        "demo-dev",
        day2_edits=[
            ("canary 90-10 to 80-20", weights(0, 80, 20)),
            ("add a version", add_version(0, "v3")),
            ("remove a version", remove_version(0, "v3")),
        ],
    ),
]


def stack_names() -> list[str]:
    return [s.stack for s in REAL_STACKS]

