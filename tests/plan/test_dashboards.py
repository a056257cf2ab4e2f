"""The Grafana dashboards: shape, variables, datasources, real metric names, no stack details."""

from __future__ import annotations

import json
import re

import pytest

from inference_platform.observability import alerts
from inference_platform.observability.metrics import QUEUE_TIME_METRIC
from inference_platform.observability.observability import (
    GRAPHS_DASHBOARD,
    LLM_DASHBOARD,
    TRAINING_DASHBOARD,
    alloy_config,
    dashboard_files,
    provisioned_dashboards,
)
from platformctl.engine import stack_settings
from tests.conftest import STACKS, observability_inputs, stack_plan
from tests.support import dashboards
from tests.support.metric_catalogue import LLM_CATALOGUES, catalogue, known_metrics, metric_names

DASHBOARDS = dashboards.dashboards()
RECORDED = set().union(*(alerts.recorded_names(alerts.rule_groups(observability_inputs(stack_settings(s)))) for s in STACKS))


def test_at_least_six_dashboards_with_unique_uids():
    assert len(DASHBOARDS) >= 6
    assert {"triton-overview", "triton-latency", "gpu", "traffic", "logs", "capacity", "autoscaling", "llm",
            "graphs"} <= set(DASHBOARDS)
    uids = [d["uid"] for d in DASHBOARDS.values()]
    assert len(set(uids)) == len(uids)


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_template_variables_and_datasources(name):
    dash = DASHBOARDS[name]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    # A Ray graph's parts are its Serve application and deployments, training's its TrainJobs, not
    # services and versions.
    chosen = {GRAPHS_DASHBOARD: {"graph", "step"}, TRAINING_DASHBOARD: {"trainjob"}}.get(name, {"service", "version"})
    assert {"datasource", "namespace", *chosen} <= set(variables)
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


def _streams(expr: str) -> list[str]:
    """A LogQL query's stream selectors (line filters' regexes can hold braces too)."""
    return re.findall(r"\{([^}]*)\}", re.sub(r'[|!][~=]\s*"(?:[^"\\]|\\.)*"', "", expr))


def test_log_queries_use_the_labels_alloy_attaches():
    labels = set(re.findall(r'target_label\s*=\s*"(\w+)"', alloy_config())) - {"__path__"}
    assert labels == {"namespace", "pod", "container", "app", "version"}
    loki = dashboards.targets("loki")
    assert loki
    for dash, panel, expr in loki:
        for stream in _streams(expr):
            used = set(re.findall(r"(\w+)\s*[=!]~?", stream))
            assert used and used <= labels, f"{dash}/{panel}: {used - labels}"


def test_dashboards_are_valid_compact_json():
    for path in dashboard_files():
        assert len(json.dumps(json.loads(path.read_text()), separators=(",", ":"))) < 256 * 1024


# --------------------------------------------------------------------------- logs

# Lines as Triton writes them (triton-inference-server/common r25.01 src/logging.cc
# LogPreamble): level letter + MMDD by default, an ISO 8601 timestamp then the letter
# with --log-format ISO8601; then the pid and file:line.
TRITON_LINES = {
    "E0213 12:00:00.123456 1 model_lifecycle.cc:654] failed to load 'resnet50' version 1": "E",
    "2025-02-13T12:00:00Z E 1 model_lifecycle.cc:654] failed to load 'resnet50' version 1": "E",
    "W0213 12:00:01.000001 1 pinned_memory_manager.cc:273] Unable to allocate pinned system memory": "W",
    "2025-02-13T12:00:01Z W 1 pinned_memory_manager.cc:273] Unable to allocate pinned system memory": "W",
    "I0213 12:00:02.000000 1 model.py:10] error rate of the client is 0; no Error here": "I",
    "2025-02-13T12:00:02Z I 1 server.cc:307] Waiting for in-flight requests to complete.": "I",
    # The engines' own lines in the same container: TensorRT-LLM's C++ logger ("[TensorRT-LLM][LEVEL] ",
    # tensorrt_llm/common/logger.h getPrefix) and vLLM's (vllm/logger.py "%(levelname)s %(asctime)s
    # [file:line]" with "%m-%d %H:%M:%S", and the prefix its engine-core process adds).
    "[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: CUDA out of memory": "E",
    "[TensorRT-LLM][WARNING] Fix optionalParams : KV cache reuse disabled because model was not built": "W",
    "[TensorRT-LLM][INFO] Loaded engine size: 12345 MiB": "I",
    "ERROR 02-13 12:00:04 [core.py:586] EngineCore failed to start.": "E",
    "(EngineCore_DP0 pid=412) ERROR 02-13 12:00:04 [core.py:586] EngineCore encountered a fatal error.": "E",
    "WARNING 02-13 12:00:05 [config.py:1204] Possibly too large swap space.": "W",
    "INFO 02-13 12:00:06 [model_runner.py:1100] Loading model weights took 13.5 GiB (no ERROR)": "I",
    # Not a level preamble: a Python traceback line and an Envoy access log line.
    "Error: something in a traceback": "",
    '[2025-02-13T12:00:03.000Z] "POST /v2/models/x/infer HTTP/1.1" 503 UF error': "",
}


def _loki(dashboard: str) -> list[tuple[str, str]]:
    return [(panel, expr) for dash, panel, expr in dashboards.targets("loki") if dash == dashboard]


def _line_filters(expr: str) -> list[str]:
    return [re.sub(r'\\(.)', r"\1", f) for f in re.findall(r'\|~\s*"((?:[^"\\]|\\.)*)"', expr)]


def test_log_panels_show_the_triton_container_only():
    """Alloy ships every container's lines, the istio-proxy sidecar's included."""
    for dash, panel, expr in dashboards.targets("loki"):
        for stream in _streams(expr):
            assert 'container="triton"' in stream, f"{dash}/{panel}: {stream}"


def _levels_matched(expr: str) -> set[str]:
    filters = [f for f in _line_filters(expr) if f != "$search"]
    assert filters, expr
    return {level for line, level in TRITON_LINES.items() if all(re.search(f, line) for f in filters)}


def test_error_and_warning_panels_match_tritons_log_levels():
    exprs = {t["legendFormat"]: t["expr"] for t in next(
        p for p in dashboards.panels(DASHBOARDS["logs"]) if p["title"] == "Errors and warnings per pod")["targets"]}
    assert _levels_matched(exprs["{{pod}} errors"]) == {"E"}
    assert _levels_matched(exprs["{{pod}} warnings"]) == {"W"}
    lines = next(p for p in dashboards.panels(DASHBOARDS["logs"]) if p["title"] == "Triton errors and warnings")
    assert _levels_matched(lines["targets"][0]["expr"]) == {"E", "W"}


def test_the_level_check_catches_a_case_insensitive_error_match():
    assert _levels_matched('{container="triton"} |~ "(?i)error"') != {"E"}


# --------------------------------------------------------------------------- autoscaling


def _exprs(name: str) -> dict[str, list[str]]:
    return {p["title"]: [t["expr"] for t in p["targets"]] for p in dashboards.panels(DASHBOARDS[name]) if p["type"] != "row"}


def test_hpa_panels_repeat_per_service_and_compare_metric_with_target_and_replicas_with_bounds():
    panels = {p["title"]: p for p in dashboards.panels(DASHBOARDS["autoscaling"])}
    metric = panels["Queue time: HPA metric vs target ($service)"]
    replicas = panels["Replicas: current and desired vs min and max ($service)"]
    for panel in (metric, replicas):
        assert panel["repeat"] == "service"
        # Joined to the HPA's target Deployment, named <service>-<version> (triton.deployment_name).
        assert all('scaletargetref_name=~"($service)-($version)"' in t["expr"] for t in panel["targets"])
    used = [metric_names(t["expr"]) for t in metric["targets"]]
    assert {"kube_horizontalpodautoscaler_status_target_metric", "kube_horizontalpodautoscaler_spec_target_metric"} <= set().union(*used)
    assert all(f'metric_name="{QUEUE_TIME_METRIC}"' in t["expr"] for t in metric["targets"])
    series = set().union(*(metric_names(t["expr"]) for t in replicas["targets"]))
    assert {f"kube_horizontalpodautoscaler_{s}" for s in (
        "status_current_replicas", "status_desired_replicas", "spec_min_replicas", "spec_max_replicas")} <= series


def test_the_adapter_panel_computes_what_the_adapter_serves():
    from inference_platform.observability.observability import adapter_rules

    rule = adapter_rules()[0]["metricsQuery"]
    [panel] = _exprs("autoscaling")["Queue time per pod (worst model, as the adapter serves it)"]
    # Same shape: per (pod, model) ratio, then the max per pod.
    assert rule.startswith("max by (<<.GroupBy>>) (sum by (<<.GroupBy>>,model)")
    assert panel.startswith("max by (label_app, label_version, pod) (sum by (namespace, pod, model)")


# --------------------------------------------------------------------------- LLM


def test_llm_dashboard_covers_both_backends():
    panels = _exprs(LLM_DASHBOARD)
    used = {title: set().union(*(metric_names(e) for e in exprs)) for title, exprs in panels.items()}
    names = catalogue()
    vllm, trt, triton = set(names["vllm"]), set(names["tensorrtllm"]), set(names["triton-histograms"])
    assert used["Time to first token (p50, p95)"] & vllm and used["Time to first token (p50, p95)"] & triton
    assert used["Inter-token latency (vLLM)"] <= vllm | {"kube_pod_labels"}
    assert used["Output tokens / s"] & vllm and used["Output tokens / s"] & trt
    assert "nv_trt_llm_kv_cache_block_metrics" in used["KV cache blocks in use"]
    epp = set(names["endpoint-picker"])
    assert used["Ready pods and queue per pool"] == {"inference_pool_ready_pods", "inference_pool_average_queue_size"}
    assert used["Requests picked and errors"] == {"inference_objective_request_total", "inference_objective_request_error_total"}
    assert used["Picker decision time (p99)"] <= epp
    # Every LLM catalogue contributes; no other dashboard needs them.
    everywhere_else = set().union(*(metric_names(e) for d, _, e in dashboards.targets("prometheus") if d != LLM_DASHBOARD))
    assert not everywhere_else & (vllm | trt | triton)
    assert set(LLM_CATALOGUES) == {"triton-histograms", "tensorrtllm", "vllm"}


@pytest.mark.parametrize("stack", STACKS)
def test_llm_dashboard_is_provisioned_only_where_a_version_runs_an_llm_backend(stack):
    settings = stack_settings(stack)
    backends = {v.llm_backend for s in settings.services for v in s.versions} - {None}
    names = {p.stem for p in provisioned_dashboards(settings.services, settings.graphs)}
    assert (LLM_DASHBOARD in names) == bool(backends)
    assert names | {LLM_DASHBOARD, GRAPHS_DASHBOARD, TRAINING_DASHBOARD} == set(DASHBOARDS)
    maps = {r.inputs["metadata"].get("name") for r in stack_plan(stack).of_type("kubernetes:core/v1:ConfigMap")}
    assert (f"dashboard-{LLM_DASHBOARD}" in maps) == bool(backends)


# --------------------------------------------------------------------------- graphs


@pytest.mark.parametrize("stack", STACKS)
def test_graphs_dashboard_is_provisioned_only_where_a_graph_runs_on_ray(stack):
    settings = stack_settings(stack)
    on_ray = any(g.placement == "ray" for g in settings.graphs)
    assert (GRAPHS_DASHBOARD in {p.stem for p in provisioned_dashboards(settings.services, settings.graphs)}) == on_ray
    maps = {r.inputs["metadata"].get("name") for r in stack_plan(stack).of_type("kubernetes:core/v1:ConfigMap")}
    assert (f"dashboard-{GRAPHS_DASHBOARD}" in maps) == on_ray


def test_an_ensemble_graph_gets_no_graphs_dashboard():
    settings = stack_settings("studio-dev")
    ensembles = [g for g in settings.graphs if g.placement == "ensemble"]
    assert ensembles and GRAPHS_DASHBOARD not in {p.stem for p in provisioned_dashboards(settings.services, ensembles)}


def test_graphs_dashboard_shows_each_step_requests_errors_latency_replicas_and_queues():
    """Per step (Serve deployment): the real Ray Serve names, filtered by graph and step."""
    panels = _exprs(GRAPHS_DASHBOARD)
    used = {title: set().union(*(metric_names(e) for e in exprs)) for title, exprs in panels.items()}
    assert used["Requests / s per step"] == {"ray_serve_deployment_request_counter_total"}
    assert "ray_serve_deployment_error_counter_total" in used["Errors / s per step, by exception"]
    assert used["Processing latency per step (p50, p95)"] == {"ray_serve_deployment_processing_latency_ms_bucket"}
    assert used["Replicas per step: healthy vs target"] == {
        "ray_serve_deployment_replica_healthy", "ray_serve_autoscaling_target_replicas"}
    assert used["Requests in flight at the replicas"] == {"ray_serve_replica_processing_queries"}
    assert used["Requests queued for a replica"] == {"ray_serve_deployment_queued_queries"}
    assert used["Application status"] == {"ray_serve_application_status"}
    ray = set(catalogue()["ray-serve"])
    for title, exprs in panels.items():
        for expr in exprs:
            if metric_names(expr) & ray:
                assert 'application=~"$graph"' in expr, title
                assert "step" not in title.lower() or 'deployment=~"$step"' in expr, title
    # Only this dashboard reads Ray's metrics.
    elsewhere = set().union(*(metric_names(e) for d, _, e in dashboards.targets("prometheus") if d != GRAPHS_DASHBOARD))
    assert not elsewhere & ray


def test_training_dashboard_is_provisioned_only_where_teams_train():
    settings = stack_settings("demo-dev")
    stems = {p.stem for p in provisioned_dashboards(settings.services, settings.graphs)}
    assert TRAINING_DASHBOARD not in stems
    assert TRAINING_DASHBOARD in {p.stem for p in provisioned_dashboards(settings.services, settings.graphs, training=True)}


def test_training_dashboard_shows_each_job_state_nodes_gpu_restarts_and_kueues_queues():
    """Per TrainJob through the JobSet that owns its Jobs; Kueue per ClusterQueue."""
    panels = _exprs(TRAINING_DASHBOARD)
    used = {title: set().union(*(metric_names(e) for e in exprs)) for title, exprs in panels.items()}
    assert used["Node pods by state"] == {"kube_job_status_active", "kube_job_status_succeeded", "kube_job_status_failed",
                                          "kube_job_owner"}
    assert used["Nodes running"] == {"kube_job_status_active", "kube_job_owner"}
    assert used["Restarts in the last hour"] == {"kube_job_created", "kube_job_owner"}
    assert used["GPU use per node pod"] == {"DCGM_FI_DEV_GPU_UTIL"}
    assert used["Pending workloads"] == {"kueue_pending_workloads"}
    assert used["Admitted workloads"] == {"kueue_admitted_active_workloads", "kueue_admitted_workloads_total"}
    assert used["Borrowed quota"] == {"kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota"}
    assert used["Preempted workloads"] == {"kueue_preempted_workloads_total"}
    # Every per-job panel follows the TrainJob variable.
    for title in ("Node pods by state", "Nodes running", "Restarts in the last hour", "GPU use per node pod"):
        assert all("$trainjob" in e for e in panels[title]), title


def test_graphs_dashboard_shows_the_triton_queue_and_compute_time_inside_each_step():
    """A step's Triton runs in its replica, on the graph's worker pods, which the Triton
    dashboards (per service and version) do not select. The graphs dashboard reads its
    per-model series from those pods: the workers' container, joined on the `app` label that
    every Ray pod of the graph carries (the graph's name, as Serve's `application`) and that
    kube-state-metrics exports."""
    from inference_platform.observability.observability import POD_LABELS
    from platformctl.plan import is_k8s_object, manifest

    panels = _exprs(GRAPHS_DASHBOARD)
    used = {title: set().union(*(metric_names(e) for e in exprs)) for title, exprs in panels.items()}
    assert "nv_inference_queue_duration_us" in used["Queue time per step model (avg)"]
    assert "nv_inference_compute_infer_duration_us" in used["Compute time per step model (avg)"]
    assert {"nv_inference_count", "nv_inference_exec_count"} <= used["Inferences and executions / s per step model (batching)"]
    triton = [e for exprs in panels.values() for e in exprs if any(m.startswith("nv_inference_") for m in metric_names(e))]
    assert len(triton) >= 5
    for expr in triton:
        assert 'container="ray-worker"' in expr and 'kube_pod_labels{namespace=~"$namespace", label_app=~"$graph"}' in expr, expr
    # What the selectors rely on, as the plan renders a graph's workers.
    plan = stack_plan("studio-dev")
    (service,) = [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == "RayService"]
    assert "app" in POD_LABELS
    for group in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        pod = group["template"]
        assert pod["metadata"]["labels"]["app"] == service["metadata"]["name"]
        assert pod["spec"]["containers"][0]["name"] == "ray-worker"
