"""A multipart upload starts only with the id the server gave it."""

from __future__ import annotations

import pytest

from inference_platform.weights.s3 import upload as s3upload
from inference_platform.weights.s3.client import S3Error
from inference_platform.weights.s3.manifest import Target
from inference_platform.weights.s3.tree import local_files


class AnswersWithoutAnId:
    """A server whose answer to CreateMultipartUpload lost its body (its connection cut mid-answer)."""

    def create_multipart_upload(self, **_):
        return {"ResponseMetadata": {"HTTPStatusCode": 200}}


def test_an_answer_without_an_upload_id_is_a_one_line_server_error_naming_the_file(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"weights")
    f = local_files(str(tmp_path))[0]
    target = Target.of(AnswersWithoutAnId(), {"bucket": "weights", "prefix": "repo", "endpoint": "http://127.0.0.1:1"})
    with pytest.raises(S3Error) as failure:
        s3upload._started_upload(target, f, target.key(f.rel), "0" * 64)
    assert str(failure.value) == f"starting the upload of {f.path} to weights/repo/model.onnx: the server's answer held no UploadId"
