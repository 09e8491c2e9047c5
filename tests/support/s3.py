"""An S3-protocol server for the tests: moto's standalone server in a subprocess.

No real S3 server installs from the package registries here; moto's server
(``moto[server]``) speaks the S3 REST protocol over HTTP (path-style addressing,
ETags, ListObjectsV2 paging, LastModified), which is what the hub's blob store
uses.  It runs as its own process on a free port of 127.0.0.1 for the whole
session; each test gets a fresh bucket.  Credentials are placeholders moto
accepts; they are exported as the standard AWS variables, as an operator would.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

__all__ = ["S3Server", "s3_server", "s3_url"]

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "sealmem-test-access",
    "AWS_SECRET_ACCESS_KEY": "sealmem-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class S3Server:
    endpoint: str
    proc: subprocess.Popen[bytes]
    _names: Iterator[int]

    def url(self, bucket: str, prefix: str = "") -> str:
        """The hub's ``--blobs`` URL for ``bucket`` on this server."""
        path = f"/{prefix}" if prefix else ""
        return f"s3://{bucket}{path}?endpoint={self.endpoint}&region=us-east-1"

    def new_bucket(self) -> str:
        import boto3

        name = f"sealmem-test-{os.getpid()}-{next(self._names)}"
        client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_s3() -> S3Server:
    exe = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which(
        "moto_server"
    )
    if exe is None:
        raise RuntimeError("moto_server is not installed: pip install -e '.[test]'")
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited at start (code {proc.returncode})")
        try:
            httpx.get(endpoint + "/moto-api/", timeout=2)
            return S3Server(endpoint, proc, itertools.count(1))
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server for the session, with the AWS credential variables set."""
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = start_s3()
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_url(s3_server: S3Server) -> str:
    """A ``--blobs`` URL of a fresh bucket (with a key prefix, as operators often use)."""
    return s3_server.url(s3_server.new_bucket(), "hub")
