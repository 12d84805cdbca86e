"""The test S3 server speaks real S3 over HTTP: ranged GETs and conditional puts work."""

from __future__ import annotations

import pytest

from streamwrite.testing.s3 import S3Server


def test_ranged_get_and_conditional_put(s3_server: S3Server, bucket: str) -> None:
    fs = s3_server.filesystem()
    fs.pipe_file(f"{bucket}/a", b"hello world", mode="create")
    assert fs.cat_file(f"{bucket}/a", start=6, end=11) == b"world"
    with pytest.raises(FileExistsError):
        fs.pipe_file(f"{bucket}/a", b"other", mode="create")
    assert fs.cat_file(f"{bucket}/a") == b"hello world"
