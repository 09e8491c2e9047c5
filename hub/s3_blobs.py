"""Chunk blobs in an S3-compatible object store (AWS S3, MinIO, Ceph RGW, Garage, ...).

The location is one URL::

    s3://BUCKET[/PREFIX][?endpoint=http://127.0.0.1:9000&region=eu-west-1]

``endpoint`` is the object store's base URL (absent: AWS S3 itself), ``region``
its region (absent: the AWS default).  Addressing is path-style, which every
S3-compatible store accepts.  Credentials come the standard AWS ways
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` variables, a profile, an
instance role), never from the URL, and no error message carries them.

A blob is ``PREFIX/TEAM/PROJECT/WRITER/CHUNK_ID``.  A PUT is durable when S3
answers it (the object store's own guarantee), so the hub's order holds: blob
first, then the row that names it; row first, then the blob's deletion.
Writing an existing key again replaces it and refreshes its ``LastModified``,
which is what keeps a re-uploaded chunk from being collected as an orphan.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..protocol.errors import InputError
from .storage import StorageError

__all__ = ["S3Blobs", "S3Location", "StoredBlob"]

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


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """One blob found by :meth:`S3Blobs.listing`."""

    team: str
    project: str
    writer: str
    chunk_id: str
    modified_s: float


class S3Blobs:
    """Put, get, delete and list chunk blobs in one bucket (thread-safe)."""

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

    @property
    def bucket(self) -> str:
        return self.location.bucket

    def key(self, team: str, project: str, writer: str, chunk_id: str) -> str:
        parts = [team, project, writer, chunk_id]
        return "/".join([self.location.prefix, *parts] if self.location.prefix else parts)

    def _failed(self, what: str, exc: Exception) -> StorageError:
        code = ""
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
        reason = code or type(exc).__name__
        return StorageError(
            f"S3 bucket {self.bucket!r}: {what} failed ({reason}); check the bucket exists, "
            "the endpoint answers and the hub's AWS credentials may use it"
        )

    def check(self) -> None:
        """Fail now, with a clear message, if the bucket cannot be reached."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise self._failed("opening the bucket", exc) from None

    def put(self, team: str, project: str, writer: str, chunk_id: str, data: bytes) -> None:
        """Store (or replace, refreshing its age) one blob; durable once this returns."""
        try:
            self._client.put_object(
                Bucket=self.bucket, Key=self.key(team, project, writer, chunk_id), Body=data
            )
        except Exception as exc:
            raise self._failed("writing a chunk", exc) from None

    def get(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        """The blob, or None when the bucket has no such key."""
        try:
            answer = self._client.get_object(
                Bucket=self.bucket, Key=self.key(team, project, writer, chunk_id)
            )
            return bytes(answer["Body"].read())
        except Exception as exc:
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise self._failed("reading a chunk", exc) from None

    def delete(self, team: str, project: str, writer: str, chunk_id: str) -> None:
        try:
            self._client.delete_object(
                Bucket=self.bucket, Key=self.key(team, project, writer, chunk_id)
            )
        except Exception as exc:
            raise self._failed("deleting a chunk", exc) from None

    def listing(self, min_age_s: float = 0.0) -> Iterator[StoredBlob]:
        """Every blob last written at least ``min_age_s`` ago (keys not shaped like a
        chunk's are skipped: they are not the hub's)."""
        cutoff = time.time() - min_age_s
        prefix = f"{self.location.prefix}/" if self.location.prefix else ""
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            for page in pages:
                for item in page.get("Contents", []):
                    parts = str(item["Key"])[len(prefix) :].split("/")
                    modified = float(item["LastModified"].timestamp())
                    if len(parts) == 4 and all(parts) and modified <= cutoff:
                        team, project, writer, chunk_id = parts
                        yield StoredBlob(team, project, writer, chunk_id, modified)
        except Exception as exc:
            raise self._failed("listing chunks", exc) from None


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""
