"""Where Helm releases take their charts from: the pinned repositories (versions.py), or a local
directory of `<chart>/<version>/` charts for clusters with no way out (air-gapped installs).

The directory comes from the stack setting `chartDirectory`, which the composition root passes to
`use_directory`; the environment variable INFERENCE_PLATFORM_CHART_DIR overrides it (a component
used alone reads only the variable). Every pinned chart must be there, checked before any resource.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from inference_platform.core import versions

ENVIRONMENT_VARIABLE = "INFERENCE_PLATFORM_CHART_DIR"

_configured: Optional[str] = None


def use_directory(directory: Optional[str]) -> None:
    """Set the stack's chart directory (the stack setting; the environment variable still wins)."""
    global _configured
    _configured = directory


def directory() -> Optional[Path]:
    """The chart directory in force, or None for the charts' repositories."""
    chosen = os.environ.get(ENVIRONMENT_VARIABLE) or _configured
    return Path(chosen).expanduser().resolve() if chosen else None


def chart_path(root: Path, chart: versions.Chart) -> Path:
    return root / chart.name / chart.version


def missing_charts(root: Path, charts: Iterable[versions.Chart] = versions.PINNED_CHARTS) -> list[str]:
    """`<chart>/<version>` of every chart with no Chart.yaml under `root`."""
    return [f"{c.name}/{c.version}" for c in charts if not (chart_path(root, c) / "Chart.yaml").is_file()]


def directory_problem(value: str, source: str) -> Optional[str]:
    """Why `value` (from `source`) cannot serve the pinned charts, or None."""
    root = Path(value).expanduser()
    if not root.is_dir():
        return f"{source} {value!r} is not a directory; allowed: a directory of <chart>/<version>/ charts"
    missing = missing_charts(root.resolve())
    if missing:
        return (f"{source} {value!r} lacks {', '.join(missing)}; allowed: a directory holding every pinned chart "
                "as <chart>/<version>/Chart.yaml (`helm pull <chart> --version <version> --untar`)")
    return None


def release_chart(chart: versions.Chart) -> tuple[str, Optional[str]]:
    """(chart, repository) for a Release: the local chart's path, or the chart's own name and repository.

    An OCI chart is named by its full reference and has no repository: pulumi-kubernetes
    helm_release.go resolveChartName passes an oci:// name through and would otherwise look for an
    index.yaml at the repository URL (repo.FindChartInAuthAndTLSAndPassRepoURL)."""
    root = directory()
    if root is not None:
        problem = directory_problem(str(root), f"${ENVIRONMENT_VARIABLE}" if os.environ.get(ENVIRONMENT_VARIABLE) else "chartDirectory")
        if problem:
            raise ValueError(problem)
        return str(chart_path(root, chart)), None
    if chart.repository.startswith("oci://"):
        return f"{chart.repository}/{chart.name}", None
    return chart.name, chart.repository


def chart_name_of(chart: str, version: str = "") -> str:
    """The chart's name from a Release's `chart` input: a repository chart's name, an OCI reference's
    last part, or a local chart's folder (`<directory>/<chart>/<version>`)."""
    ref = str(chart).rstrip("/")
    if version and ref.endswith(f"/{version}"):
        ref = ref[: -len(version) - 1]
    return ref.rsplit("/", 1)[-1]
