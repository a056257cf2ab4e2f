"""The optional S3 mount (csi-s3, GeeseFS) as rendered: the chart release and its values,
the driver's Secret, the StorageClass, a static Retain PV and its claim per namespace."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.core import versions
from inference_platform.settings.weights import S3Cache
from inference_platform.weights import s3mount
from inference_platform.weights.caches import S3_SECRET_NAME, WeightCaches
from inference_platform.weights.s3mount import CLAIM_NAME, DRIVER, NAMESPACE, SECRET_NAME, STORAGE_CLASS
from platformctl import engine
from platformctl.engine import stack_settings
from platformctl.plan import helm_release, manifest
from platformctl.policy import policy_config, run_policies
from policies.rules.kube import DEFAULTS
from tests.conftest import STACKS, base_config, render_raw, stack_plan
from tests.support import conformance

STACK_FILE = Path(__file__).parents[1] / "data" / "Pulumi.s3mount-prod.yaml"
RELEASE = "kubernetes:helm.sh/v3:Release"
STORAGE = "kubernetes:storage.k8s.io/v1:StorageClass"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SECRET = "kubernetes:core/v1:Secret"
BUCKET = "pulumi-python:dynamic/s3:Bucket"
# The keys the driver reads from its Secret (yandex-cloud/k8s-csi-s3 pkg/s3/client.go, NewClientFromSecret).
DRIVER_SECRET_KEYS = {"accessKeyID", "secretAccessKey", "endpoint", "region"}


@pytest.fixture(scope="module")
def plan():
    from platformctl.engine import render_stack

    return render_stack("s3mount-prod", STACK_FILE)


def mount_of(plan, typ):
    return [r for r in plan.of_type(typ) if "-s3-mount" in r.name]


def csi_release(plan):
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == versions.CSI_S3.name]
    return release


def raw_with_mount(**mount) -> dict:
    raw = base_config() | {
        "weightCaches": {"s3": {"endpoint": "http://minio.local:9000", "bucket": "weights", "mount": mount}},
        "s3AccessKeyId": "AKIAMOUNTTESTKEY0001", "s3SecretAccessKey": "mount-test-secret-value-s3cr3t",
    }
    raw["services"][0]["versions"][0]["modelRepository"] = {"cache": "s3", "path": "svc/v1"}
    return raw


# --------------------------------------------------------------------------- the release


def test_release_pins_the_chart_in_its_own_namespace(plan):
    release = helm_release(csi_release(plan))
    assert (release["chart"], release["version"], release["repository"]) == tuple(versions.CSI_S3)
    assert release["namespace"] == NAMESPACE == "csi-s3"
    # The policy pack lets only this namespace run the privileged node plugin.
    assert NAMESPACE in DEFAULTS["privilegedNamespaces"]


def test_release_values_keys_exist_in_the_pinned_chart(plan, reference):
    values = helm_release(csi_release(plan))["values"]
    defaults = conformance.chart_values(versions.REFERENCE_DIR[versions.CSI_S3], versions.CSI_S3.version)
    assert conformance.unknown_values_keys(values, defaults) == []
    # Neither the chart's Secret (keys in Helm values) nor its StorageClass: ours instead.
    assert values["secret"]["create"] is False and values["storageClass"]["create"] is False
    assert "accessKey" not in values["secret"] and "secretKey" not in values["secret"]


def test_node_plugin_tolerates_every_node_group_taint(plan):
    tolerations = helm_release(csi_release(plan))["values"]["tolerations"]["node"]
    assert {(t["key"], t["effect"]) for t in tolerations} == {("mount.example.com/dedicated", "NoSchedule"), ("nvidia.com/gpu", "NoSchedule")}
    assert all(t["operator"] == "Exists" for t in tolerations)


def test_driver_secret_has_the_keys_the_driver_reads():
    cfg = S3Cache(endpoint="https://s3.example.cloud", bucket="weights", region="eu-1")
    assert set(s3mount.driver_secret_data(cfg, "id", "key")) == DRIVER_SECRET_KEYS


def test_driver_secret_is_in_the_chart_namespace_and_the_release_waits_for_it(plan):
    (secret,) = mount_of(plan, SECRET)
    assert secret.inputs["metadata"]["name"] == SECRET_NAME and secret.inputs["metadata"]["namespace"] == NAMESPACE
    assert secret.inputs["stringData"] == "[secret]"
    assert secret.urn in csi_release(plan).depends_on
    conformance.validate_core(manifest(secret))


# --------------------------------------------------------------------------- StorageClass, PV, claim


def test_storage_class_names_the_driver_and_its_secrets(plan, reference):
    (sc,) = mount_of(plan, STORAGE)
    doc = manifest(sc)
    conformance.validate_core(doc)
    assert doc["metadata"]["name"] == STORAGE_CLASS and doc["provisioner"] == DRIVER
    assert doc["reclaimPolicy"] == "Retain"
    params = doc["parameters"]
    assert params["mounter"] == "geesefs"
    for step in ("provisioner", "node-stage", "node-publish"):
        assert params[f"csi.storage.k8s.io/{step}-secret-name"] == SECRET_NAME
        assert params[f"csi.storage.k8s.io/{step}-secret-namespace"] == NAMESPACE
    assert csi_release(plan).urn in sc.depends_on


def test_static_pv_per_namespace_retains_and_names_the_bucket(plan, reference):
    pvs = mount_of(plan, PV)
    (bucket,) = plan.of_type(BUCKET)
    assert sorted(pv.inputs["spec"]["claimRef"]["namespace"] for pv in pvs) == ["chat", "embed"]
    for pv in pvs:
        doc = manifest(pv)
        conformance.validate_core(doc)
        spec = doc["spec"]
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        csi = spec["csi"]
        assert csi["driver"] == DRIVER
        # bucket/prefix, from the configured bucket and mount prefix.
        assert csi["volumeHandle"] == "mount-prod-weights/models"
        assert csi["volumeAttributes"]["mounter"] == "geesefs"
        ref = {"name": SECRET_NAME, "namespace": NAMESPACE}
        assert csi["nodeStageSecretRef"] == ref and csi["nodePublishSecretRef"] == ref
        # The CSI driver (chart), its Secret and the bucket exist first.
        assert {csi_release(plan).urn, mount_of(plan, SECRET)[0].urn, bucket.urn} <= set(pv.depends_on)


def test_each_claim_binds_exactly_its_pv(plan, reference):
    pvs = {pv.inputs["spec"]["claimRef"]["namespace"]: pv for pv in mount_of(plan, PV)}
    pvcs = mount_of(plan, PVC)
    assert len(pvcs) == len(pvs) == 2
    names = set()
    for pvc in pvcs:
        doc = manifest(pvc)
        conformance.validate_core(doc)
        ns = doc["metadata"]["namespace"]
        pv = pvs[ns]
        assert doc["metadata"]["name"] == CLAIM_NAME == pv.inputs["spec"]["claimRef"]["name"]
        assert doc["spec"]["volumeName"] == pv.outputs["metadata"]["name"]
        assert doc["spec"]["storageClassName"] == pv.inputs["spec"]["storageClassName"] == STORAGE_CLASS
        assert doc["spec"]["accessModes"] == pv.inputs["spec"]["accessModes"]
        names.add(doc["spec"]["volumeName"])
    assert len(names) == 2


def test_production_protects_the_pvs_and_claims(plan):
    assert all(r.protect for r in mount_of(plan, PV) + mount_of(plan, PVC))


def test_triton_keeps_its_s3_url(plan):
    deployments = [r for r in plan.of_type("kubernetes:apps/v1:Deployment") if r.name.startswith("chat-")]
    text = json.dumps([d.inputs for d in deployments])
    assert "--model-repository=s3://https://s3.mount.example:443/mount-prod-weights/models/chat/v1" in text
    assert CLAIM_NAME not in text


def test_mount_stack_passes_every_policy(plan):
    found = run_policies(plan.to_json(), policy_config(stack_settings(STACK_FILE)))
    assert [v for v in found if v.level == "mandatory"] == [], found


# --------------------------------------------------------------------------- secrets and the default


def test_credentials_never_appear_unredacted():
    raw = raw_with_mount(enabled=True)
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    assert mount_of(plan, PV)
    text = json.dumps(plan.to_json()) + json.dumps([helm_release(r) for r in plan.of_type(RELEASE)])
    for secret in (raw["s3AccessKeyId"], raw["s3SecretAccessKey"]):
        assert secret not in text


@pytest.mark.parametrize("stack", STACKS)
def test_nothing_from_csi_s3_when_the_mount_is_off(stack):
    plan = stack_plan(stack)
    _assert_no_csi_s3(plan)


def test_nothing_from_csi_s3_when_disabled_explicitly():
    plan = render_raw(raw_with_mount(enabled=False), secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    _assert_no_csi_s3(plan)


def _assert_no_csi_s3(plan):
    assert not [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == versions.CSI_S3.name]
    assert plan.of_type(STORAGE) == []
    assert not [r for r in plan.resources if "s3-mount" in r.name or r.type.startswith("inference-platform:s3mount")]
    assert not [r for r in plan.of_type(PV) if "csi" in r.inputs["spec"]]
    assert DRIVER not in json.dumps(plan.to_json())


# --------------------------------------------------------------------------- plain functions


def test_triton_does_not_wait_for_the_mount():
    """Triton reads its s3:// URL: its Deployment waits for the Secret, not the mount's claim."""
    seen = {}

    def program():
        opts = pulumi.ResourceOptions(providers={"kubernetes": k8s.Provider("k8s")})
        caches = WeightCaches("weights", {
            "weight_caches": {"s3": {"endpoint": "https://s3.x.example", "bucket": "weights", "mount": {"enabled": True}}},
            "s3_namespaces": ["embed"], "s3_access_key_id": "id", "s3_secret_access_key": "key",
        }, opts)
        seen.update(claims=caches.s3_mount_claims, deps=caches.depends_on("embed"), ref=caches.reference("embed"))

    engine._run("mount", {}, [], program)
    assert list(seen["claims"]) == ["embed"]
    assert len(seen["deps"]) == 1 and seen["deps"][0] not in seen["claims"].values()
    assert seen["ref"].s3_secret_name == S3_SECRET_NAME and seen["ref"].claim_name is None


def test_volume_handle_is_bucket_then_prefix():
    assert s3mount.volume_handle("b", "") == "b"
    assert s3mount.volume_handle("b", "/models/") == "b/models"
    assert s3mount.volume_handle("b", "a/b") == "b/a/b"


def test_mount_config_rejects_shell_like_options_and_bad_prefixes():
    from inference_platform.settings.errors import ConfigError
    from inference_platform.settings.loader import parse_settings

    for mount in ({"enabled": True, "mountOptions": "--memory-limit 1000; rm -rf /"}, {"enabled": True, "prefix": "../x"}):
        raw = raw_with_mount(**mount)
        with pytest.raises(ConfigError, match=r"weightCaches\.s3\.mount\."):
            parse_settings(raw, "stacks/Pulumi.test-dev.yaml", frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
