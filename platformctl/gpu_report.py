"""The GPU part of the plan output: capacity warnings and the cold-start estimate."""

from __future__ import annotations

from pathlib import Path

from components.coldstart import cold_start_estimate, format_estimate
from components.config import NAMESPACE, Settings, _decode, parse_settings
from components.gpu_profiles import capacity_warnings

from .engine import shown_path, stack_config, stack_path


def stack_settings(stack_or_file: str | Path) -> Settings:
    """A stack file's validated settings, as the program sees them."""
    path = stack_or_file if isinstance(stack_or_file, Path) else stack_path(stack_or_file)
    config, secret_keys = stack_config(path)
    prefix = NAMESPACE + ":"
    raw = {k[len(prefix):]: _decode(v) for k, v in config.items() if k.startswith(prefix)}
    secrets = frozenset(k[len(prefix):] for k in secret_keys if k.startswith(prefix))
    return parse_settings(raw, shown_path(path), secrets)


def gpu_report(settings: Settings) -> str:
    lines = [f"warning: {w}" for w in capacity_warnings(settings)]
    if settings.gpu_groups:
        lines.append(format_estimate(cold_start_estimate(settings)))
    return "\n".join(lines)
