"""The Grafana dashboards: shape, variables, datasources, real metric names, no stack details."""

from __future__ import annotations

import json
import re

import pytest

from components import alerts
from components.observability import alloy_config, dashboard_files
from platformctl.engine import stack_settings
from tests import dashboards
from tests.conftest import STACKS
from tests.metric_catalogue import known_metrics, metric_names

DASHBOARDS = dashboards.dashboards()
RECORDED = set().union(*(alerts.recorded_names(alerts.rule_groups(stack_settings(s))) for s in STACKS))


def test_at_least_six_dashboards_with_unique_uids():
    assert len(DASHBOARDS) >= 6
    assert {"triton-overview", "triton-latency", "gpu", "traffic", "logs", "capacity"} <= set(DASHBOARDS)
    uids = [d["uid"] for d in DASHBOARDS.values()]
    assert len(set(uids)) == len(uids)


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_template_variables_and_datasources(name):
    dash = DASHBOARDS[name]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert {"datasource", "namespace", "service", "version"} <= set(variables)
    assert variables["datasource"]["type"] == "datasource"
    ids = [p["id"] for p in dashboards.panels(dash)]
    assert len(set(ids)) == len(ids)
    for panel in dashboards.panels(dash):
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"].startswith("${"), f"{panel['title']}: datasource not chosen by variable"
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"].startswith("${")
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"]["uid"] == "${datasource}"


@pytest.mark.parametrize("stack", STACKS)
def test_nothing_stack_specific_is_hard_coded(stack):
    settings = stack_settings(stack)
    text = "\n".join(p.read_text() for p in dashboard_files())
    words = {settings.customer, *(g.name for g in settings.cluster.node_groups)}
    words |= {h for s in settings.services for h in s.hosts} | {s.name for s in settings.services}
    for word in words:
        assert not re.search(rf'(?<![\w-]){re.escape(word)}(?![\w-])', text), f"{word!r} is hard-coded in a dashboard"


def test_dashboards_query_only_real_metrics():
    known = known_metrics() | RECORDED
    for dash, panel, expr in dashboards.targets("prometheus"):
        unknown = metric_names(expr) - known - {"vector"}
        assert not unknown, f"{dash}/{panel}: {unknown}"
    for dash, variable, selector, _ in dashboards.variable_queries():
        assert not metric_names(selector) - known, f"{dash}/{variable}"


def test_the_name_check_catches_an_unknown_metric():
    assert metric_names('sum(rate(nv_inference_queue_time_us{namespace="a"}[5m]))') - known_metrics()


def test_log_queries_use_the_labels_alloy_attaches():
    labels = set(re.findall(r'target_label\s*=\s*"(\w+)"', alloy_config())) - {"__path__"}
    assert labels == {"namespace", "pod", "container", "app", "version"}
    loki = dashboards.targets("loki")
    assert loki
    for dash, panel, expr in loki:
        for stream in re.findall(r"\{([^}]*)\}", expr):
            used = set(re.findall(r"(\w+)\s*[=!]~?", stream))
            assert used and used <= labels, f"{dash}/{panel}: {used - labels}"


def test_dashboards_are_valid_compact_json():
    for path in dashboard_files():
        assert len(json.dumps(json.loads(path.read_text()), separators=(",", ":"))) < 256 * 1024
