"""The S3 blob store against moto's S3 server (an S3-protocol server over HTTP)."""

from __future__ import annotations

import time

import pytest

from sealmem.hub.storage import StorageError
from sealmem.hub.storage.backends import open_blobs
from sealmem.hub.storage.blobs import BlobKey
from sealmem.hub.storage.s3 import S3Blobs, S3Location
from sealmem.protocol.errors import InputError
from tests.support.s3 import CREDENTIALS, S3Server

C1 = BlobKey("team-a", "webapp", "w" * 26, "c1" * 32)
C2 = BlobKey("team-a", "webapp", "w" * 26, "c2" * 32)


def test_put_get_delete_and_list(s3_url: str) -> None:
    blobs = S3Blobs(s3_url)
    blobs.check()
    assert blobs.get(C1) is None
    blobs.put(C1, b"one")
    blobs.put(C2, b"two")
    assert blobs.get(C1) == b"one"
    assert blobs.name(C1) == f"hub/team-a/webapp/{'w' * 26}/{'c1' * 32}"
    entries = list(blobs.entries())
    assert sorted(e.key for e in entries) == [C1, C2]
    assert all(0 <= e.age_s < 3600 for e in entries)
    blobs.delete(C1)
    blobs.delete(C1)  # deleting a missing blob is not an error
    assert blobs.get(C1) is None
    assert [e.key for e in blobs.entries()] == [C2]
    assert blobs.sweep(0.0) == 0  # no unfinished multipart upload


def test_writing_again_refreshes_the_age(s3_url: str) -> None:
    blobs = S3Blobs(s3_url)
    blobs.put(C1, b"one")
    time.sleep(2.1)  # S3 LastModified has a one-second resolution
    aged = next(iter(blobs.entries())).age_s
    assert aged >= 1.0
    blobs.put(C1, b"one")
    assert next(iter(blobs.entries())).age_s < aged


def test_keys_of_other_shapes_are_left_alone(s3_server: S3Server, s3_url: str) -> None:
    blobs = S3Blobs(s3_url)
    blobs._client.put_object(Bucket=blobs.bucket, Key="hub/README", Body=b"x")
    blobs._client.put_object(Bucket=blobs.bucket, Key="elsewhere/a/b/c/d", Body=b"x")
    assert list(blobs.entries()) == []


def test_a_missing_bucket_is_named_without_credentials(s3_server: S3Server) -> None:
    blobs = S3Blobs(s3_server.url("no-such-bucket"))
    with pytest.raises(StorageError, match="'no-such-bucket'") as failed:
        blobs.put(C1, b"one")
    for secret in CREDENTIALS.values():
        if "secret" in secret or "access" in secret:
            assert secret not in str(failed.value)
    with pytest.raises(StorageError, match="no-such-bucket"):
        blobs.check()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://bucket/x", "is not s3://"),
        ("s3:///prefix", "is not s3://"),
        ("s3://key:secret@bucket", "must not carry credentials"),
        ("s3://bucket?endpoint=ftp://x", "must be an http"),
        ("s3://bucket?colour=red", "unknown parameter"),
    ],
)
def test_bad_urls_are_refused_by_name(url: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        S3Location.parse(url)


def test_a_url_with_endpoint_region_and_prefix() -> None:
    where = S3Location.parse("s3://chunks/sealmem/hub?endpoint=http://127.0.0.1:9000&region=eu")
    assert where == S3Location("chunks", "sealmem/hub", "http://127.0.0.1:9000", "eu")


def test_a_hub_opened_on_a_missing_bucket_fails_at_once(s3_server: S3Server) -> None:
    with pytest.raises(StorageError, match=r"'not-created'.*opening the bucket"):
        open_blobs(s3_server.url("not-created"))
