"""Which engine errors mean "no space left" (hub/storage/values.py ``no_space``): the
real exception classes of the OS, SQLite, PostgreSQL (psycopg) and S3 (botocore)."""

from __future__ import annotations

import errno
import sqlite3

import pytest
from botocore.exceptions import ClientError
from psycopg import errors as pg_errors

from sealmem.hub.storage import DiskFull, StorageError
from sealmem.hub.storage.s3 import S3Blobs
from sealmem.hub.storage.values import no_space, storage_failure


def sqlite_error(code: int) -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


def s3_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, "PutObject")


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        sqlite_error(13),  # SQLITE_FULL
        sqlite_error(4874),  # SQLITE_IOERR_SHMSIZE: the WAL index cannot grow
        pg_errors.DiskFull("could not extend file"),
        s3_error("XMinioStorageFull"),
        s3_error("QuotaExceeded"),
    ],
    ids=["enospc", "edquot", "sqlite-full", "sqlite-shmsize", "pg-53100", "minio", "rgw-quota"],
)
def test_no_space_is_told_apart(exc: BaseException) -> None:
    assert no_space(exc)
    failure = storage_failure("write failed", exc)
    assert isinstance(failure, DiskFull)
    assert "no space left" in str(failure)


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.EIO, "Input/output error"),
        sqlite_error(10),  # SQLITE_IOERR
        sqlite_error(11),  # SQLITE_CORRUPT
        pg_errors.AdminShutdown("terminating connection"),
        s3_error("NoSuchBucket"),
        s3_error("AccessDenied"),
        ValueError("not an engine error"),
    ],
    ids=["eio", "sqlite-ioerr", "sqlite-corrupt", "pg-shutdown", "s3-bucket", "s3-denied", "other"],
)
def test_other_failures_stay_storage_errors(exc: BaseException) -> None:
    assert not no_space(exc)
    failure = storage_failure("write failed", exc)
    assert type(failure) is StorageError


def test_a_full_object_store_is_disk_full_and_says_so(s3_url: str) -> None:
    blobs = S3Blobs(s3_url)
    try:
        failure = blobs._failed("writing a chunk", s3_error("XMinioStorageFull"))
        other = blobs._failed("writing a chunk", s3_error("AccessDenied"))
    finally:
        blobs.close()
    assert isinstance(failure, DiskFull)
    assert "no space left or the bucket's quota is reached" in str(failure)
    assert type(other) is StorageError
