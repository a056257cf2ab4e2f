"""The Gateway API and InferencePool CRDs the mesh ships, as the plan reads them (mesh.py)."""

from __future__ import annotations

import yaml

from inference_platform.mesh import mesh


def test_libyaml_reads_every_shipped_crd_as_pyyaml_does():
    files = sorted(mesh.CRDS_DIR.glob("*.yaml"))
    assert len(files) == 9
    assert mesh.gateway_api_crd_documents() == [yaml.safe_load(path.read_text()) for path in files]


def test_each_caller_gets_its_own_documents():
    first = mesh.gateway_api_crd_documents()
    first[0]["spec"]["names"]["plural"] = "changed"
    assert mesh.gateway_api_crd_documents()[0]["spec"]["names"]["plural"] != "changed"
