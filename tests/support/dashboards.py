"""Reading the dashboards: their queries, with Grafana's variables substituted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from inference_platform.observability.observability import dashboard_files

# What Grafana would substitute: "All" for every variable, and its interval macros.
SUBSTITUTIONS = {
    "$__rate_interval": "1m",
    "$__interval": "1m",
    "$__range": "5m",
    "$namespace": ".*",
    "$service": ".*",
    "$version": ".*",
    "$pod": ".*",
    "$node_group": ".*",
    "$graph": ".*",
    "$step": ".*",
    "$trainjob": ".*",
    "$search": "",
}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def dashboards() -> dict[str, dict[str, Any]]:
    return {p.stem: load(p) for p in dashboard_files()}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def targets(kind: str) -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expr) of every target whose datasource type is `kind`."""
    out = []
    for name, dash in dashboards().items():
        for panel in panels(dash):
            for t in panel.get("targets", []):
                if (t.get("datasource") or panel["datasource"])["type"] == kind:
                    out.append((name, panel["title"], t["expr"]))
    return out


def variable_queries() -> list[tuple[str, str, str, str]]:
    """(dashboard, variable, series selector, label) of every label_values() variable."""
    out = []
    for name, dash in dashboards().items():
        for var in dash["templating"]["list"]:
            if var["type"] == "query":
                m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", var["query"]["query"])
                assert m, f"{name}: variable {var['name']} is not a label_values() query"
                out.append((name, var["name"], m.group(1), m.group(2)))
    return out


def substitute(expr: str) -> str:
    # Longest names first, so $__rate_interval is not read as $__range + "te_interval".
    for key in sorted(SUBSTITUTIONS, key=len, reverse=True):
        expr = expr.replace(key, SUBSTITUTIONS[key])
    assert "$" not in expr.replace("$1", ""), f"unsubstituted variable in {expr}"
    return expr
