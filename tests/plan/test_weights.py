"""Weight caches as rendered: share, access rules, one PV and claim per namespace, S3 Secrets, the URLs Triton reads."""

from __future__ import annotations

import re

import pytest

from inference_platform.serving.triton_server import model_repository_url
from inference_platform.settings.errors import ConfigError
from inference_platform.weights.caches import (
    CLAIM_NAME,
    S3_SECRET_NAME,
    parse_export_location,
    preferred_export,
    triton_s3_url,
)
from inference_platform.weights.inputs import WeightsRef
from platformctl.plan import manifest
from tests.conftest import base_config, render_raw, stack_plan
from tests.support import conformance

SHARE = "openstack:sharedfilesystem/share:Share"
ACCESS = "openstack:sharedfilesystem/shareAccess:ShareAccess"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SECRET = "kubernetes:core/v1:Secret"
BUCKET = "pulumi-python:dynamic/s3:Bucket"
UPLOAD = "pulumi-python:dynamic/s3:Upload"
# Triton's own parser of non-AWS S3 locations (triton-inference-server/core, S3FileSystem).
TRITON_S3 = re.compile(r"s3://(http://|https://|)([0-9a-zA-Z\-.]+):([0-9]+)/([0-9a-z.\-]+)(((/[0-9a-zA-Z.\-_]+)*)?)")


def weights_of(plan, typ):
    return [r for r in plan.of_type(typ) if "weights" in r.name]


def test_manila_share_access_and_pv_from_the_export_location(reference):
    plan = stack_plan("acme-prod")
    (share,) = plan.of_type(SHARE)
    assert share.inputs["shareProto"] == "NFS" and share.inputs["size"] == 2000 and share.inputs["shareType"] == "cephfsnfs"
    (access,) = plan.of_type(ACCESS)
    # Default rule: the Magnum cluster's subnet; shareId is the share's id (the mock's "<name>-id").
    assert access.inputs == {"accessLevel": "rw", "accessTo": "10.20.0.0/22", "accessType": "ip", "shareId": f"{share.name}-id"}
    server, path = share.outputs["exportLocations"][0]["path"].split(":", 1)
    (pv,) = weights_of(plan, PV)
    (pvc,) = weights_of(plan, PVC)
    nfs = pv.inputs["spec"]["nfs"]
    assert (nfs["server"], nfs["path"]) == (server, path)
    assert share.urn in pv.depends_on and access.urn in pv.depends_on
    spec = pv.inputs["spec"]
    assert spec["accessModes"] == ["ReadWriteMany"] and spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["storageClassName"] == "" and "nfsvers=4.1" in spec["mountOptions"]
    # Bound both ways: the PV reserves the claim, the claim names the PV.
    assert spec["claimRef"]["name"] == CLAIM_NAME and spec["claimRef"]["namespace"] == "llm-chat"
    assert pvc.inputs["metadata"] == pvc.inputs["metadata"] | {"name": CLAIM_NAME, "namespace": "llm-chat"}
    assert pvc.inputs["spec"]["volumeName"] == pv.outputs["metadata"]["name"]
    assert pvc.inputs["spec"]["storageClassName"] == ""
    for r in (pv, pvc):
        conformance.validate_core(manifest(r))


def test_production_protects_share_bucket_pv_and_claim_and_retains_the_data():
    plan = stack_plan("acme-prod")
    stateful = plan.of_type(SHARE) + plan.of_type(BUCKET) + weights_of(plan, PV) + weights_of(plan, PVC)
    assert len(stateful) == 4 and all(r.protect for r in stateful)
    assert all(r.retain_on_delete for r in plan.of_type(SHARE) + plan.of_type(BUCKET))
    dev = stack_plan("demo-dev")
    assert not any(r.protect for r in weights_of(dev, PV) + weights_of(dev, PVC))


def test_existing_share_mode_uses_server_and_path_from_config():
    plan = stack_plan("demo-dev")
    assert plan.of_type(SHARE) == [] and plan.of_type(ACCESS) == []
    (pv,) = weights_of(plan, PV)
    assert pv.inputs["spec"]["nfs"] == {"server": "10.0.0.20", "path": "/exports/models"}


def test_one_pv_and_claim_per_namespace_that_reads_the_share():
    raw = base_config()
    svc = raw["services"][0]
    second = {**svc, "name": "svc2", "hosts": ["svc2.example.com"]}
    shared_ns = {**svc, "name": "svc3", "namespace": "svc2", "hosts": ["svc3.example.com"]}
    raw["services"] = [svc, second, shared_ns]
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 4  # room for three services' replicas
    plan = render_raw(raw)
    pvcs = weights_of(plan, PVC)
    assert sorted(r.inputs["metadata"]["namespace"] for r in pvcs) == ["svc", "svc2"]
    assert all(r.inputs["metadata"]["name"] == CLAIM_NAME for r in pvcs)
    pvs = weights_of(plan, PV)
    assert sorted(r.inputs["spec"]["claimRef"]["namespace"] for r in pvs) == ["svc", "svc2"]
    for pvc in pvcs:
        ns = plan.get("kubernetes:core/v1:Namespace", f"test-dev-namespaces-{pvc.inputs['metadata']['namespace']}")
        assert ns.urn in pvc.depends_on


def test_s3_secret_in_each_namespace_reading_from_s3(reference):
    plan = stack_plan("acme-prod")
    (secret,) = weights_of(plan, SECRET)
    assert secret.inputs["metadata"]["name"] == S3_SECRET_NAME and secret.inputs["metadata"]["namespace"] == "embed"
    assert secret.inputs["stringData"] == "[secret]"
    (bucket,) = plan.of_type(BUCKET)
    assert bucket.inputs["accessKeyId"] == "[secret]" and bucket.inputs["secretAccessKey"] == "[secret]"
    assert bucket.inputs["bucket"] == "acme-prod-model-weights" and bucket.inputs["noncurrentDays"] == 30


def test_s3_secret_keys_are_the_aws_variables():
    raw = base_config() | {
        "weightCaches": {"s3": {"endpoint": "http://minio.local:9000", "bucket": "weights"}},
        "s3AccessKeyId": "id", "s3SecretAccessKey": "key",
    }
    raw["services"][0]["versions"][0]["modelRepository"] = {"cache": "s3", "path": "svc/v1"}
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    (secret,) = weights_of(plan, SECRET)
    # The engine redacts the values; the keys show in the outputs' shape.
    assert secret.inputs["stringData"] == "[secret]"
    assert weights_of(plan, PVC) == []


def test_uploads_render_with_a_fingerprint(tmp_path):
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.onnx").write_bytes(b"x")
    raw = base_config() | {
        "weightCaches": {"fileShare": base_config()["weightCaches"]["fileShare"], "s3": {
            "endpoint": "http://minio.local:9000", "bucket": "weights",
            "uploads": [{"source": str(tmp_path), "prefix": "svc/v1"}],
        }},
        "s3AccessKeyId": "id", "s3SecretAccessKey": "key",
    }
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    (up,) = plan.of_type(UPLOAD)
    assert len(up.inputs["fingerprint"]) == 64
    (bucket,) = plan.of_type(BUCKET)
    assert bucket.urn in up.depends_on
    # A source that is not there is refused when the stack is parsed, before anything is declared.
    raw["weightCaches"]["s3"]["uploads"].append({"source": str(tmp_path / "gone"), "prefix": "x"})
    with pytest.raises(ConfigError, match=r"uploads\[1\]\.source: .* is not an existing directory"):
        render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))


def test_manila_without_a_known_subnet_needs_access_cidrs():
    raw = base_config() | {"weightCaches": {"fileShare": {"mode": "manila"}}}
    with pytest.raises(ConfigError, match=r"weightCaches.fileShare.accessCidrs: .*needs accessCidrs"):
        render_raw(raw)


# --------------------------------------------------------------------------- plain functions


def test_export_location_parsing():
    assert parse_export_location("10.0.0.50:/volumes/_nogroup/abc") == ("10.0.0.50", "/volumes/_nogroup/abc")
    assert parse_export_location("[fd00::5]:/share") == ("fd00::5", "/share")
    with pytest.raises(ValueError, match="server:/path"):
        parse_export_location("no-path")
    locations = [{"path": "a:/1", "preferred": "false"}, {"path": "b:/2", "preferred": "true"}]
    assert preferred_export(locations) == "b:/2"
    assert preferred_export(locations[:1]) == "a:/1"


@pytest.mark.parametrize("endpoint, url", [
    ("https://s3.acme-cloud.example", "s3://https://s3.acme-cloud.example:443/bkt/embed/v1"),
    ("http://minio.local:9000", "s3://minio.local:9000/bkt/embed/v1"),
    ("http://10.0.0.7", "s3://10.0.0.7:80/bkt/embed/v1"),
])
def test_triton_s3_url_for_non_aws_endpoints(endpoint, url):
    assert triton_s3_url(endpoint, "bkt", "embed/v1") == url
    assert TRITON_S3.fullmatch(url)


def test_triton_s3_url_on_aws():
    assert triton_s3_url("https://s3.eu-west-1.amazonaws.com", "bkt", "/a/b/") == "s3://bkt/a/b"


def test_model_repository_urls_from_a_weights_reference():
    ref = WeightsRef(claim_name=CLAIM_NAME, s3_secret_name=S3_SECRET_NAME, s3_endpoint="https://s3.x.example", s3_bucket="b")
    assert model_repository_url(ref, "fileShare", "llm/v7") == "/models/llm/v7"
    assert model_repository_url(ref, "s3", "embed/v1") == "s3://https://s3.x.example:443/b/embed/v1"
    with pytest.raises(ValueError, match="unknown weight cache"):
        model_repository_url(ref, "gcs", "x")
    with pytest.raises(ValueError, match="'s3' is not configured"):
        model_repository_url(WeightsRef(claim_name=CLAIM_NAME), "s3", "x")
    with pytest.raises(ValueError, match="'fileShare' is not configured"):
        model_repository_url(WeightsRef(), "fileShare", "x")


def test_an_upload_whose_model_config_triton_refuses_is_refused(tmp_path):
    """Every config.pbtxt of an upload source is parsed with Triton's model config: a broken
    one fails the plan with the file named, and the upload itself refuses it too."""
    from inference_platform.weights.s3 import tree as s3tree

    (tmp_path / "good" / "1").mkdir(parents=True)
    (tmp_path / "good" / "config.pbtxt").write_text('name: "good"\nbackend: "onnxruntime"\nmax_batch_size: 8\n')
    raw = base_config() | {
        "weightCaches": {"fileShare": base_config()["weightCaches"]["fileShare"], "s3": {
            "endpoint": "http://minio.local:9000", "bucket": "weights",
            "uploads": [{"source": str(tmp_path), "prefix": "svc/v1"}],
        }},
        "s3AccessKeyId": "id", "s3SecretAccessKey": "key",
    }
    secrets = ("s3AccessKeyId", "s3SecretAccessKey")
    assert render_raw(raw, secret_keys=secrets).of_type(UPLOAD)
    s3tree.refuse_broken_configs(str(tmp_path))

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.pbtxt").write_text('name: "bad"\ninstance_group [ { kind: KIND_GPUS } ]\n')
    with pytest.raises(ConfigError, match=r"uploads\[0\]\.source: bad/config\.pbtxt: invalid Triton model config: 2:"):
        render_raw(raw, secret_keys=secrets)
    with pytest.raises(s3tree.SourceError, match=r"bad/config\.pbtxt: .*; nothing was uploaded"):
        s3tree.refuse_broken_configs(str(tmp_path))
