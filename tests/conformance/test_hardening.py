"""Hardening: checkov's Kubernetes checks pass on every example stack, over the platform's own
objects and over what its Helm releases install (rendered by a real `helm template`), and every
deliberate exception is recorded in components/core/hardening.py: on our objects as a skip
annotation, on the charts' as a CHARTS entry that names the release, the objects and the checks."""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from inference_platform.cluster.autoscaler import METRICS_PORT
from inference_platform.cluster.autoscaler import NAME as AUTOSCALER
from inference_platform.core import chart_hardening, hardening, versions
from inference_platform.core import endpoints as ep
from inference_platform.serving.triton_server import SCRATCH_DIRS
from platformctl.engine import render_stack
from platformctl.plan import manifest, write_plan
from tests.conftest import ROOT, STACKS, base_config, render_raw, stack_plan
from tests.support import conformance, helm

CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
DATA_STACKS = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p for p in sorted((ROOT / "tests/data").glob("Pulumi.*.yaml"))}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SKIP_KEY = re.compile(r"^checkov\.io/skip[1-9][0-9]*$")

needs_checkov = pytest.mark.skipif(not CHECKOV.exists(), reason="checkov is not installed: run `make checkov`")


@functools.cache
def _plan(stack: str):
    if stack in DERIVED_STACKS:
        return render_stack(stack, DERIVED_STACKS[stack]())
    return render_stack(stack, DATA_STACKS[stack]) if stack in DATA_STACKS else stack_plan(stack)


def _train_dev_without_pipeline() -> Path:
    """train-dev without its model pipeline (and the job that publishes to it). checkov connects a
    NetworkPolicy whose podSelector is `{}` to every pod of the folder, whatever its namespace
    (NetworkPolicyEdgeBuilder: the parsed `{}` carries line numbers, so it is not empty), and the
    argo namespace's policy is one: beside it, the Trainer and JobSet pods, which no policy
    selects, would pass CKV2_K8S_6. This stack shows what a stack without a pipeline gets."""
    raw = yaml.safe_load((ROOT / "stacks" / "Pulumi.train-dev.yaml").read_text())
    config = raw["config"]
    config.pop("inference-platform:modelPipeline")
    for service in config["inference-platform:services"]:
        service.pop("pipeline", None)
    training = config["inference-platform:training"]
    training["jobs"] = [j for j in training["jobs"] if "publishTo" not in j]
    path = Path(tempfile.mkdtemp()) / "Pulumi.train-dev-without-pipeline.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


# Stacks the exemption checks scan beside the examples (not examples themselves).
DERIVED_STACKS = {"train-dev-without-pipeline": _train_dev_without_pipeline}


def checkov(manifests: Path) -> dict:
    """checkov's JSON report over a folder of manifests (one stack: graph checks such as
    CKV2_K8S_6 match NetworkPolicies to pods across the whole folder), its Kubernetes checks
    and, for the model pipelines' WorkflowTemplates, its Argo Workflows checks, as one report.
    --skip-download: no call to the vendor's API for guidelines, which the scan does not need."""
    command = [str(CHECKOV), "-d", str(manifests), "--framework", "kubernetes", "argo_workflows", "-o", "json",
               "--skip-download"]
    result = subprocess.run(command,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    reports = json.loads(result.stdout) if result.stdout.strip() else {}
    reports = reports if isinstance(reports, list) else [reports]
    return {
        "check_types": [r.get("check_type") for r in reports],
        "summary": {key: sum(r.get("summary", {}).get(key, 0) for r in reports) for key in ("passed", "parsing_errors")},
        "results": {kind: [c for r in reports for c in r.get("results", {}).get(kind, [])]
                    for kind in ("passed_checks", "failed_checks", "skipped_checks")},
    }


def failures(report: dict) -> list[str]:
    """Failed checks of the platform's own objects."""
    return [f"{r['check_id']} {r['resource']}" for r in report.get("results", {}).get("failed_checks", [])
            if _release_of(r) is None]


def _release_of(result: dict) -> str | None:
    """The Helm release a checkov result is about (its file `/helm/<release>.yaml`), or None."""
    path = Path(result["file_path"])
    return path.stem if path.parent.name == HELM_DIR else None


def chart_failures(report: dict) -> list[tuple[str, str, str, str]]:
    """(check, release, kind, name) of each failed check of a chart's object. checkov names a
    resource `<Kind>.<namespace>.<name>`, a pod template's graph result with its labels after."""
    found = []
    for r in report["results"]["failed_checks"]:
        release = _release_of(r)
        if release is not None:
            kind, _, name = r["resource"].split(".")[:3]
            found.append((r["check_id"], release, kind, name))
    return found


HELM_DIR = "helm"


def _write_stack(stack: str, root: Path) -> Path:
    """The stack's manifests and, under helm/, one file per Helm release of what it installs:
    one folder, so graph checks such as CKV2_K8S_6 see our NetworkPolicies beside the charts' pods."""
    plan = _plan(stack)
    manifests = write_plan(plan, root / stack) / "manifests"
    (manifests / HELM_DIR).mkdir()
    for release in helm.releases(plan):
        (manifests / HELM_DIR / f"{release['name']}.yaml").write_text(yaml.safe_dump_all(helm.installed(release)))
    return manifests


@pytest.fixture(scope="module")
def stack_reports(tmp_path_factory) -> dict[str, dict]:
    """Every example stack (stacks/ and tests/data/) planned offline, its Helm releases rendered,
    and each stack's folder scanned by one checkov run."""
    root = tmp_path_factory.mktemp("plans")
    dirs = {s: _write_stack(s, root) for s in [*STACKS, *DATA_STACKS, *DERIVED_STACKS]}
    # Two at a time: the machine's cores are shared.
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(dirs, pool.map(checkov, dirs.values()), strict=True))


# --------------------------------------------------------------------------- checkov over the stacks


@needs_checkov
@pytest.mark.parametrize("stack", [*STACKS, *DATA_STACKS])
def test_stack_passes_checkov(stack, stack_reports):
    report = stack_reports[stack]
    assert "kubernetes" in report["check_types"] and report["summary"]["parsing_errors"] == 0
    assert report["summary"]["passed"] > 0
    assert failures(report) == []
    assert any(_release_of(r) for r in report["results"]["passed_checks"])  # the charts' objects were scanned
    unrecorded = [f"{check} {release} {kind}/{name}" for check, release, kind, name in chart_failures(report)
                  if hardening.chart_exemption(release, kind, name, check) is None]
    assert unrecorded == []


@needs_checkov
def test_every_recorded_chart_exemption_covers_a_failure(stack_reports):
    """Each check of each CHARTS entry is failed by some object it names in some stack: no entry
    outlives the failure it excuses."""
    failed = [f for report in stack_reports.values() for f in chart_failures(report)]
    unused = [(e.release, e.objects, check) for e in hardening.CHARTS for check in e.checks
              if not any(e.covers(release, kind, name, c) for c, release, kind, name in failed if c == check)]
    assert unused == []


@needs_checkov
def test_workflow_templates_pass_checkovs_argo_checks(stack_reports):
    passed = {r["check_id"] for r in stack_reports["demo-dev"]["results"]["passed_checks"] if r["check_id"].startswith("CKV_ARGO")}
    assert passed == {"CKV_ARGO_1", "CKV_ARGO_2"}  # not the default ServiceAccount; non-root pods


@needs_checkov
def test_every_skip_checkov_applies_is_a_recorded_exemption(stack_reports):
    recorded = {(e.check, e.reason) for w in hardening.WORKLOADS.values() for e in w.exemptions}
    skipped = {(r["check_id"], r["check_result"]["suppress_comment"]) for rep in stack_reports.values()
               for r in rep["results"]["skipped_checks"]}
    assert skipped and skipped <= recorded


def _strip_skips(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    annotations = doc["metadata"].get("annotations", {})
    doc["metadata"]["annotations"] = {k: v for k, v in annotations.items() if not SKIP_KEY.match(k)}
    return doc


@needs_checkov
def test_objects_fail_without_their_recorded_skips_or_hardening(tmp_path):
    """The same objects with their skips removed fail exactly the recorded checks, and a Triton
    pod that mounts a token on a writable root fails those checks: the stack test can fail."""
    plan = stack_plan("demo-dev")
    placeholder = manifest(next(r for r in plan.of_type(DEPLOYMENT) if "placeholder" in r.name))
    triton = manifest(next(r for r in plan.of_type(DEPLOYMENT) if r.name.endswith("-v1")))
    softened = copy.deepcopy(triton)
    softened["metadata"]["name"] += "-softened"
    pod = softened["spec"]["template"]["spec"]
    del pod["automountServiceAccountToken"]
    pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] = False
    for name, doc in (("placeholder", _strip_skips(placeholder)), ("triton", _strip_skips(triton)),
                      ("softened", softened)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    failed = {(r["check_id"], r["resource"].split(".")[2]) for r in checkov(tmp_path)["results"]["failed_checks"]}

    def failed_of(doc: dict) -> set[str]:
        return {check for check, name in failed if name == doc["metadata"]["name"] and check.startswith("CKV_K8S")}

    assert failed_of(placeholder) == {e.check for e in hardening.exemptions(hardening.PLACEHOLDER)}
    triton_recorded = {e.check for e in hardening.exemptions(*hardening.triton_workloads(cpu_limit=False))}
    assert failed_of(triton) == triton_recorded
    assert failed_of(softened) == {"CKV_K8S_38", "CKV_K8S_22"}  # skips kept: only the lost hardening fails


# --------------------------------------------------------------------------- the record and its annotations


def test_exemptions_render_as_numbered_skip_annotations():
    annotations = hardening.skip_annotations(hardening.PLACEHOLDER)
    assert list(annotations) == [f"checkov.io/skip{i}" for i in range(1, len(annotations) + 1)]
    assert [v.split("=")[0] for v in annotations.values()] == ["CKV_K8S_43", "CKV_K8S_15", "CKV_K8S_8", "CKV_K8S_9"]


@pytest.mark.parametrize("workload", list(hardening.WORKLOADS))
def test_recorded_exemptions_are_well_formed(workload):
    exemptions = hardening.WORKLOADS[workload].exemptions
    checks = [e.check for e in exemptions]
    assert len(set(checks)) == len(checks)
    for e in exemptions:
        assert re.fullmatch(r"CKV2?_K8S_[0-9]+", e.check)
        # checkov splits `<check>=<reason>` on every "=": a reason with one breaks the scan.
        assert "=" not in e.reason and len(e.reason) > 40


def _annotations(resource) -> dict:
    return resource.inputs["metadata"].get("annotations", {})


def test_triton_cpu_limit_and_s3_exemptions_follow_the_version():
    raw = base_config()
    plan = render_raw(raw)
    skipped = set(v.split("=")[0] for v in _annotations(plan.get(DEPLOYMENT, "svc-v1")).values())
    # CKV_K8S_35 on every Triton Deployment: the admin key reaches its flags through the environment.
    assert skipped == {"CKV_K8S_43", "CKV_K8S_15", "CKV_K8S_40", "CKV_K8S_35", "CKV_K8S_11"}
    raw["services"][0]["versions"][0]["resources"] = {"cpu": "4", "cpuLimit": "8"}
    limited = render_raw(raw).get(DEPLOYMENT, "svc-v1")
    assert "CKV_K8S_11" not in {v.split("=")[0] for v in _annotations(limited).values()}


def test_policies_page_lists_every_recorded_exemption():
    page = (ROOT / "docs" / "policies.md").read_text()
    assert hardening.reference() in page


# --------------------------------------------------------------------------- the hardening itself


def test_triton_pods_mount_no_token_and_write_only_to_scratch_volumes():
    spec = stack_plan("demo-dev").get(DEPLOYMENT, "resnet-v1").inputs["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False
    triton = spec["containers"][0]
    assert triton["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m for m in triton["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for path in ["/dev/shm", *SCRATCH_DIRS.values()]:
        assert not mounts[path].get("readOnly") and "emptyDir" in volumes[mounts[path]["name"]], path


def _selects(policy, workload) -> bool:
    selector = policy.inputs["spec"]["podSelector"]["matchLabels"]
    labels = workload.inputs["spec"]["template"]["metadata"]["labels"]
    return policy.inputs["metadata"]["namespace"] == workload.inputs["metadata"]["namespace"] and \
        selector.items() <= labels.items()


def test_every_platform_pod_has_a_network_policy():
    plan = _plan("acme-prod-heat")
    policies = plan.of_type(NETWORK_POLICY)
    for workload in plan.of_type(DEPLOYMENT) + plan.of_type(DAEMONSET) + plan.of_type(JOB):
        assert any(_selects(p, workload) for p in policies), workload.name


def test_deny_all_policies_select_only_the_platforms_pods():
    plan = stack_plan("demo-dev")
    deny_all = [p for p in plan.of_type(NETWORK_POLICY) if p.inputs["spec"]["policyTypes"] == ["Ingress", "Egress"]]
    # resnet: its tuning run on the file share (tuning.py) talks to nothing outside its pod.
    assert {p.inputs["metadata"]["namespace"] for p in deny_all} == {"gpu-coldstart", "gpu-operator", "resnet"}
    for p in deny_all:
        spec = p.inputs["spec"]
        assert "ingress" not in spec and "egress" not in spec
        # Charts' pods in gpu-operator carry no component label of ours.
        assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/part-of"] == "inference-platform"
        assert "app.kubernetes.io/component" in spec["podSelector"]["matchLabels"]
        selected = [w.name for w in plan.of_type(DEPLOYMENT) + plan.of_type(DAEMONSET) + plan.of_type(JOB) if _selects(p, w)]
        assert selected


def test_cluster_autoscaler_takes_metrics_scrapes_only_and_keeps_its_token():
    plan = _plan("acme-prod-heat")
    policy = next(p for p in plan.of_type(NETWORK_POLICY) if p.inputs["metadata"]["name"] == AUTOSCALER)
    spec = policy.inputs["spec"]
    assert spec["policyTypes"] == ["Ingress"]  # egress: the API server and OpenStack
    assert spec["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
                                "ports": [{"protocol": "TCP", "port": METRICS_PORT}]}]
    deployment = next(d for d in plan.of_type(DEPLOYMENT) if d.inputs["metadata"]["namespace"] == "kube-system")
    assert _selects(policy, deployment)
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert "automountServiceAccountToken" not in pod and pod["serviceAccountName"] == AUTOSCALER
    container = pod["containers"][0]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health-check", "port": "metrics"}


# --------------------------------------------------------------------------- the charts' workloads

KPS = ep.KUBE_PROMETHEUS_RELEASE


def test_a_chart_exemption_covers_only_the_release_objects_and_checks_it_names():
    grafana = ("Deployment", f"{KPS}-grafana")
    assert hardening.chart_exemption(KPS, *grafana, "CKV_K8S_35") is not None
    # Another check, another object of the release, or the same name in another release: not excused.
    assert hardening.chart_exemption(KPS, *grafana, "CKV_K8S_20") is None
    assert hardening.chart_exemption(KPS, "Deployment", f"{KPS}-new-exporter", "CKV_K8S_35") is None
    assert hardening.chart_exemption(ep.LOKI_RELEASE, *grafana, "CKV_K8S_35") is None
    # The documented patterns: image digests and pull policy of every chart workload, nothing else.
    assert hardening.chart_exemption("any-release", "Deployment", "any", "CKV_K8S_43") is not None
    assert hardening.chart_exemption("any-release", "ClusterRole", "any", "CKV_K8S_43") is None


# Paths the charts' templates copy verbatim where values.yaml has a non-empty default: the
# template decides, not values.yaml's example.
HARDENING_FREE_FORM = {
    # jaeger 4.11.1 templates/jaeger/jaeger-deploy.yaml: .Values.jaeger.resources, .podSecurityContext.
    versions.JAEGER.name: frozenset({"jaeger.resources", "jaeger.podSecurityContext.runAsNonRoot",
                                     "jaeger.podSecurityContext.seccompProfile"}),
    # llm-d-router-gateway v0.10.0 charts/router/templates/_deployment.yaml: `toYaml` of router.epp.resources.
    versions.LLM_D_ROUTER.name: frozenset({"router.epp.resources"}),
    # kueue 0.19.2 templates/manager/manager.yaml: `toYaml` of controllerManager.manager.podSecurityContext.
    versions.KUEUE.name: frozenset({"controllerManager.manager.podSecurityContext.runAsUser",
                                    "controllerManager.manager.podSecurityContext.runAsGroup"}),
    # kiali-server 2.29.0 templates/deployment.yaml: deployment.resources.
    versions.KIALI.name: frozenset({"deployment.resources.limits.cpu"}),
    # alloy 1.11.1 templates/containers/_watch.yaml: configReloader.resources.
    versions.ALLOY.name: frozenset({"configReloader.resources.limits"}),
    # node-feature-discovery 0.19.0 templates master.yaml, worker.yaml, nfd-gc.yaml: <role>.resources.
    versions.GPU_OPERATOR.name: frozenset(f"node-feature-discovery.{r}.resources.limits.cpu" for r in ("master", "worker", "gc")),
}


@pytest.mark.parametrize("chart", sorted(chart_hardening.HARDENING))
def test_chart_hardening_sets_only_keys_the_pinned_chart_has(chart, reference):
    (pinned,) = [c for c in vars(versions).values() if isinstance(c, versions.Chart) and c.name == chart]
    defaults = dict(conformance.vendored_chart_values(chart, pinned.version))
    # Istio charts keep their defaults under _internal_defaults_do_not_set; users set them at the top.
    defaults = {**defaults.pop("_internal_defaults_do_not_set", {}), **defaults}
    values = chart_hardening.hardening_values(chart)
    assert conformance.unknown_values_keys(values, defaults, HARDENING_FREE_FORM.get(chart, frozenset())) == []


def test_a_releases_own_values_win_over_the_hardening():
    merged = chart_hardening.hardened(versions.KIALI.name, {"deployment": {"resources": {"limits": {"cpu": "2"}}}})
    assert merged["deployment"]["resources"] == {"limits": {"cpu": "2"}}
    assert merged["deployment"]["network_policy"] == {"enabled": False}


def _installed(stack: str, release_name: str) -> list[dict]:
    (release,) = [r for r in helm.releases(_plan(stack)) if r["name"] == release_name]
    return helm.installed(release)


def _pods(objects: list[dict]) -> list[dict]:
    return [o["spec"]["template"] for o in objects if o["kind"] in ("Deployment", "DaemonSet", "StatefulSet")]


def _peer_matches(peer: dict, namespace: str, labels: dict) -> bool:
    ns = peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
    return ns == namespace and peer.get("podSelector", {}).get("matchLabels", {}).items() <= labels.items()


@pytest.mark.parametrize("stack", ["acme-prod", "demo-dev"])
def test_the_ui_network_policies_admit_only_the_gateway_kiali_and_monitoring_on_the_ui_ports(stack):
    """Grafana and Kiali (served to the internet by the ingress gateway) take their UI port from
    the peers that need it, selected by the labels the charts really put on those pods."""
    plan = _plan(stack)
    policies = {p.inputs["metadata"]["name"]: p.inputs for p in plan.of_type(NETWORK_POLICY)
                if p.inputs["metadata"]["namespace"] in (ep.MONITORING_NAMESPACE, ep.ISTIO_NAMESPACE)}
    (grafana_pod,) = [p for p in _pods(_installed(stack, KPS)) if p["metadata"]["labels"]["app.kubernetes.io/name"] == "grafana"]
    (kiali_pod,) = _pods(_installed(stack, ep.KIALI_RELEASE))
    (gateway_pod,) = _pods(_installed(stack, ep.GATEWAY_RELEASE))
    ui = {"grafana": stack == "acme-prod", "kiali": stack == "acme-prod"}  # acme-prod serves both UIs
    for name, pod, namespace in (("grafana", grafana_pod, ep.MONITORING_NAMESPACE), ("kiali", kiali_pod, ep.ISTIO_NAMESPACE)):
        policy = policies["grafana" if name == "grafana" else ep.KIALI_RELEASE]
        assert policy["metadata"]["namespace"] == namespace and policy["spec"]["policyTypes"] == ["Ingress"]
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        container_ports = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
        rules = policy["spec"]["ingress"]
        assert {p["port"] for r in rules for p in r["ports"]} <= container_ports
        peers = [peer for r in rules for peer in r["from"]]
        from_gateway = any(_peer_matches(p, ep.ISTIO_NAMESPACE, gateway_pod["metadata"]["labels"]) for p in peers)
        assert from_gateway == ui[name]
    grafana_peers = [peer for r in policies["grafana"]["spec"]["ingress"] for peer in r["from"]]
    assert any(_peer_matches(p, ep.ISTIO_NAMESPACE, kiali_pod["metadata"]["labels"]) for p in grafana_peers)
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ep.MONITORING_NAMESPACE}}} in grafana_peers
    # The chart's own Kiali policy, which admits every pod, is not rendered.
    assert not [o for o in _installed(stack, ep.KIALI_RELEASE) if o["kind"] == "NetworkPolicy"]
