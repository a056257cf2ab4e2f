"""Helm charts from a local directory (air-gapped installs): the stack setting, its environment
override, and a directory that cannot serve every pinned chart refused before any resource."""

from __future__ import annotations

import shutil

import pytest

from inference_platform.core import chart_source, versions
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config


@pytest.fixture(autouse=True)
def _no_directory(monkeypatch):
    monkeypatch.delenv(chart_source.ENVIRONMENT_VARIABLE, raising=False)
    chart_source.use_directory(None)
    yield
    chart_source.use_directory(None)


def _charts(tmp_path, skip=()):
    for chart in versions.PINNED_CHARTS:
        if chart not in skip:
            (tmp_path / chart.name / chart.version).mkdir(parents=True)
            (tmp_path / chart.name / chart.version / "Chart.yaml").write_text(f"name: {chart.name}\n")
    return tmp_path


def test_without_a_directory_releases_name_their_repositories():
    assert chart_source.release_chart(versions.LOKI) == ("loki", versions.LOKI.repository)
    assert chart_source.release_chart(versions.KUEUE) == ("oci://registry.k8s.io/kueue/charts/kueue", None)


def test_the_stack_setting_points_every_release_at_its_local_chart(tmp_path):
    root = _charts(tmp_path)
    chart_source.use_directory(str(root))
    assert chart_source.release_chart(versions.KUEUE) == (str(root / "kueue" / "0.19.2"), None)
    assert chart_source.release_chart(versions.ISTIOD) == (str(root / "istiod" / "1.30.3"), None)


def test_the_environment_overrides_the_stack_setting(tmp_path, monkeypatch):
    mirror = _charts(tmp_path / "mirror")
    chart_source.use_directory(str(tmp_path / "elsewhere"))
    monkeypatch.setenv(chart_source.ENVIRONMENT_VARIABLE, str(mirror))
    assert chart_source.release_chart(versions.LOKI) == (str(mirror / "loki" / "18.11.0"), None)


def test_the_shared_reference_charts_serve_every_pinned_chart(reference):
    assert chart_source.missing_charts(reference / "helm") == []


def test_a_directory_lacking_a_chart_is_refused_in_one_line_naming_it(tmp_path):
    raw = base_config()
    raw["chartDirectory"] = str(_charts(tmp_path, skip=(versions.KUEUE,)))
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    (line,) = err.value.lines()
    assert "inference-platform:chartDirectory" in line and "lacks kueue/0.19.2" in line and "allowed:" in line


def test_a_chart_directory_that_is_no_directory_is_refused(tmp_path):
    raw = base_config()
    raw["chartDirectory"] = str(tmp_path / "absent")
    with pytest.raises(ConfigError, match="is not a directory"):
        parse_settings(raw, "stacks/Pulumi.t.yaml")


def test_a_bad_environment_override_is_refused_before_any_resource(tmp_path, monkeypatch):
    root = _charts(tmp_path)
    shutil.rmtree(root / "loki")
    monkeypatch.setenv(chart_source.ENVIRONMENT_VARIABLE, str(root))
    with pytest.raises(ConfigError) as err:
        parse_settings(base_config(), "stacks/Pulumi.t.yaml")
    (line,) = err.value.lines()
    assert f"${chart_source.ENVIRONMENT_VARIABLE}" in line and "lacks loki/18.11.0" in line
