"""S3 endpoints that are one server, and refusals that say which call and which permission."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from inference_platform.weights.s3.client import explain, same_server


@pytest.mark.parametrize(("a", "b", "same"), [
    ("http://s3.example.cloud", "https://s3.example.cloud/", True),
    ("https://S3.Example.Cloud", "https://s3.example.cloud:443", True),
    ("http://h:8333", "https://h:8333/", True),
    ("https://h", "https://h:8443", False),
    ("https://s3.example.cloud", "https://s3.eu.example.cloud", False),
])
def test_an_endpoint_in_another_spelling_is_the_same_server(a, b, same):
    assert same_server(a, b) is same


def _refused(operation: str, code: str, status: int, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation)


def test_adopting_with_keys_that_may_not_list_buckets_names_the_call_and_the_permission():
    err = explain(_refused("ListBuckets", "AccessDenied", 403, "Access Denied"), "checking that bucket w is this account's own",
                  "https://s3.amazonaws.com")
    text = str(err)
    assert "denied ListBuckets to these keys" in text and "they need the permission s3:ListAllMyBuckets" in text
    assert "check the secrets" not in text and "\n" not in text


def test_a_bare_403_on_a_head_request_names_both_causes():
    text = str(explain(_refused("HeadBucket", "403", 403), "reading bucket w", "https://s3.amazonaws.com"))
    assert "refused HeadBucket (403, no reason given)" in text and "s3AccessKeyId" in text and "s3:ListBucket" in text


def test_wrong_keys_still_say_check_the_secrets():
    text = str(explain(_refused("PutObject", "InvalidAccessKeyId", 403), "uploading", "https://s3.example.cloud"))
    assert "refused the credentials" in text and "check the secrets" in text
