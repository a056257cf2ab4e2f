"""One Prometheus alerting rule as the platform writes them (the rule modules share it)."""

from __future__ import annotations

from typing import Any


def alert(name: str, expr: str, duration: str, severity: str, summary: str, **labels: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **labels},
        "annotations": {"summary": summary},
    }
