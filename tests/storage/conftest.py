"""Fixtures for object-storage tests: one moto S3 server (HTTP on localhost) per test run, and
a fresh bucket per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from streamwrite.testing.s3 import S3Server

_buckets = itertools.count()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with S3Server() as server:
        yield server


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    """A new, empty bucket's name."""
    name = f"bucket-{next(_buckets):04d}"
    s3_server.create_bucket(name)
    return name


@pytest.fixture
def storage_options(s3_server: S3Server) -> dict[str, Any]:
    return s3_server.storage_options
