"""Chunk blobs in an S3-compatible object store (AWS S3, MinIO, Ceph RGW, Garage, ...).

The location is one URL::

    s3://BUCKET[/PREFIX][?endpoint=http://127.0.0.1:9000&region=eu-west-1]

``endpoint`` is the object store's base URL (absent: AWS S3 itself), ``region``
its region (absent: the AWS default).  Addressing is path-style, which every
S3-compatible store accepts.  Credentials come the standard AWS ways
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` variables, a profile, an
instance role), never from the URL, and no error message carries them.

A blob is ``PREFIX/TEAM/PROJECT/WRITER/CHUNK_ID``.  A PUT is durable when S3
answers it (the object store's own guarantee).  Writing an existing key again
replaces it and refreshes its ``LastModified``, which is what keeps a re-uploaded
chunk from being collected as an orphan.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ...protocol.errors import InputError
from . import StorageError
from .blobs import BlobEntry, BlobKey, BlobStore
from .values import DiskFull, no_space

__all__ = ["S3Blobs", "S3Location"]

_SCHEME = "s3"


@dataclass(frozen=True, slots=True)
class S3Location:
    bucket: str
    prefix: str
    endpoint: str | None
    region: str | None

    @classmethod
    def parse(cls, url: str) -> S3Location:
        """The parts of an ``s3://`` URL, or :class:`InputError` naming what is wrong."""
        parts = urlsplit(url)
        if parts.scheme != _SCHEME or not parts.hostname:
            raise InputError(
                f"blob store URL {url!r} is not s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME]"
            )
        if parts.username or parts.password:
            raise InputError(
                "the s3:// URL must not carry credentials; set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY in the hub's environment instead"
            )
        query = parse_qs(parts.query, keep_blank_values=False)
        unknown = sorted(set(query) - {"endpoint", "region"})
        if unknown:
            raise InputError(
                f"blob store URL has unknown parameter(s) {unknown}; known: endpoint, region"
            )
        endpoint = query.get("endpoint", [None])[-1]
        if endpoint is not None and urlsplit(endpoint).scheme not in ("http", "https"):
            raise InputError(f"endpoint {endpoint!r} must be an http:// or https:// URL")
        return cls(
            bucket=parts.hostname,
            prefix=parts.path.strip("/"),
            endpoint=endpoint,
            region=query.get("region", [None])[-1],
        )


class S3Blobs(BlobStore):
    """Chunk blobs in one bucket (thread-safe: one boto3 client, its own pool)."""

    def __init__(self, url: str) -> None:
        self.location = S3Location.parse(url)
        try:
            import boto3
            from botocore.config import Config
        except ImportError:  # pragma: no cover - the hub-scale extra is not installed
            raise StorageError(
                "the S3 blob store needs boto3: pip install 'sealmem[hub-scale]'"
            ) from None
        config = Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": 4, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
            max_pool_connections=64,
        )
        self._client: Any = boto3.session.Session().client(
            "s3",
            endpoint_url=self.location.endpoint,
            region_name=self.location.region,
            config=config,
        )
        self.bucket = self.location.bucket
        self._prefix = f"{self.location.prefix}/" if self.location.prefix else ""

    def name(self, key: BlobKey) -> str:
        """The object key of a blob: ``PREFIX/team/project/writer/chunk id``."""
        return self._prefix + "/".join(key.parts())

    def _failed(self, what: str, exc: Exception) -> StorageError:
        reason = _code(exc) or type(exc).__name__
        if no_space(exc):
            return DiskFull(
                f"S3 bucket {self.bucket!r}: {what} failed ({reason}): the store has no space "
                "left or the bucket's quota is reached"
            )
        return StorageError(
            f"S3 bucket {self.bucket!r}: {what} failed ({reason}); check that the bucket "
            "exists, the endpoint answers and the hub's AWS credentials may use it"
        )

    def check(self) -> None:
        """Fail now, with a clear message, if the bucket cannot be reached."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise self._failed("opening the bucket", exc) from None

    def put(self, key: BlobKey, data: bytes) -> None:
        try:
            self._client.put_object(Bucket=self.bucket, Key=self.name(key), Body=data)
        except Exception as exc:
            raise self._failed("writing a chunk", exc) from None

    def get(self, key: BlobKey) -> bytes | None:
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=self.name(key))
            return bytes(answer["Body"].read())
        except Exception as exc:
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise self._failed("reading a chunk", exc) from None

    def delete(self, key: BlobKey) -> None:
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self.name(key))
        except Exception as exc:
            raise self._failed("deleting a chunk", exc) from None

    def entries(self) -> Iterator[BlobEntry]:
        """Every blob and its age (by the hub's clock against the store's LastModified;
        keys not shaped like a chunk's are skipped: they are not the hub's)."""
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._prefix
            )
            for page in pages:
                now = time.time()
                for item in page.get("Contents", []):
                    key = BlobKey.shaped(str(item["Key"])[len(self._prefix) :].split("/"))
                    if key is None:
                        continue
                    age = max(0.0, now - float(item["LastModified"].timestamp()))
                    yield BlobEntry(key, age)
        except StorageError:
            raise
        except Exception as exc:
            raise self._failed("listing chunks", exc) from None

    def sweep(self, min_age_s: float) -> int:
        """Abort multipart uploads older than ``min_age_s`` (the hub makes none, but an
        interrupted tool or a proxy may have left some, and they hold space)."""
        aborted = 0
        try:
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.bucket, Prefix=self._prefix
            )
            now = time.time()
            for page in pages:
                for upload in page.get("Uploads", []):
                    if now - float(upload["Initiated"].timestamp()) >= min_age_s:
                        self._client.abort_multipart_upload(
                            Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
                        aborted += 1
        except Exception as exc:
            raise self._failed("removing unfinished uploads", exc) from None
        return aborted

    def close(self) -> None:
        self._client.close()


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""
