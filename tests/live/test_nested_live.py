"""Live files with nested columns: many commits, every committed prefix read by pyarrow
(checksums verified) and by our reader; reopen (the schema check accepts nested footers),
``_pm`` rebuilt byte for byte from nested footers; write options by leaf path; encrypted
nested live files (keys per leaf and per group) that pyarrow decrypts at every commit."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

import streamwrite
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.live.file import LiveFile, recover
from tests.crypto.test_writer_encryption import MASTER_KEYS, _job, run_pyarrow
from tests.live._nested_rows import NESTED_SCHEMA, nested_rows

SIZES = [1, 37, 0, 150, 3, 420, 64, 7, 200, 1, 99, 18]
OPTIONS: dict[str, Any] = {
    "row_group_size": 128,
    "data_page_row_limit": 20,
    "compression": {"s": "snappy", "m.key_value.value": "gzip", "tags": "lz4_raw"},
    "bloom_filter_options": {"s.b": True, "tags": True},
    "use_dictionary": ["s", "tags", "m.key_value.key"],
}


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


async def _build(
    path: Path, sizes: list[int], start: int = 0, **options: Any
) -> list[streamwrite.Commit]:
    commits = []
    schema = None if start else NESTED_SCHEMA
    async with await LiveFile.open(path, schema, **options) as lf:
        for size in sizes:
            commits.append(await lf.append(nested_rows(start, size)))
            start += size
    return commits


def test_every_commit_of_a_nested_live_file_reads_in_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "lf"
    commits = _run(_build, path, SIZES, **OPTIONS)
    data = (path / "data.parquet").read_bytes()
    total = 0
    for commit, size in zip(commits, SIZES, strict=True):
        total += size
        expected = nested_rows(0, total)
        prefix = pa.BufferReader(data[: commit.parquet_size])
        assert pq.read_table(prefix, page_checksum_verification=True).equals(expected)
        ours = streamwrite.read_table(path, snapshot=commit.parquet_size)
        assert ours.equals(expected), commit.seq
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    codecs = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).compression
        for i in range(meta.num_columns)
    }
    assert codecs["s.a"] == codecs["s.inner.x"] == "SNAPPY"
    assert codecs["m.key_value.value"] == "GZIP" and codecs["m.key_value.key"] == "ZSTD"
    assert codecs["tags.list.element"] == "LZ4"  # pyarrow names LZ4_RAW so
    blooms = {
        meta.row_group(0).column(i).path_in_schema
        for i in range(meta.num_columns)
        if meta.row_group(0).column(i).to_dict().get("bloom_filter_offset") not in (None, 0)
    }
    assert {"s.b", "tags.list.element"} <= blooms


def test_nested_live_file_reopens_and_rebuilds_its_pm(tmp_path: Path) -> None:
    path = tmp_path / "lf"
    _run(_build, path, [100, 50], **OPTIONS)
    more = _run(_build, path, [30, 0, 70], 150, **OPTIONS)  # reopen: schema from the footer
    assert more[-1].num_rows == 250
    assert streamwrite.read_table(path).equals(nested_rows(0, 250))

    async def reopen_with_schema() -> None:  # the given nested schema checks against the file
        async with await LiveFile.open(path, NESTED_SCHEMA, **OPTIONS) as lf:
            await lf.append(nested_rows(250, 5))

    _run(reopen_with_schema)
    header = read_sidecar((path / "_pm").read_bytes()).header
    assert [c.name for c in header.columns][5:8] == ["s.a", "s.b", "s.inner.x"]
    assert [c.max_rep_level for c in header.columns] == [0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 2]
    original = (path / "_pm").read_bytes()
    (path / "_pm").unlink()
    plan = recover(path, apply=True)
    assert plan.rebuilt_pm_reason == "_pm is missing"
    assert (path / "_pm").read_bytes() == original
    data = (path / "data.parquet").read_bytes()
    assert pq.read_table(pa.BufferReader(data)).equals(nested_rows(0, 255))


COLUMN_KEYS = {"s": "kc", "m.key_value.value": "kd", "deep": "kc", "s.b": "kd"}
FOOTER_KEY_COLUMNS = ("vals",)


def _encryption(plaintext_footer: bool) -> FileEncryption:
    config = EncryptionConfig(
        footer_key_id="kf", column_keys=COLUMN_KEYS, plaintext_footer=plaintext_footer
    )
    return FileEncryption(
        KeyWrapper(InMemoryKms(MASTER_KEYS), config), footer_key_columns=FOOTER_KEY_COLUMNS
    )


def test_encrypted_nested_live_file_decrypts_with_pyarrow_at_every_commit(tmp_path: Path) -> None:
    sizes = [50, 130, 7, 260]
    jobs = []
    for plaintext_footer in (False, True):
        name = "pf" if plaintext_footer else "ef"
        path = tmp_path / name
        commits = _run(_build, path, sizes[:2], encryption=_encryption(plaintext_footer), **OPTIONS)
        commits += _run(  # reopened: the file's keys and leaf ordinals continue
            _build, path, sizes[2:], 180, encryption=_encryption(plaintext_footer), **OPTIONS
        )
        decryption = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
        data = (path / "data.parquet").read_bytes()
        total = 0
        for i, (commit, size) in enumerate(zip(commits, sizes, strict=True)):
            total += size
            expected = tmp_path / f"expected-{total}.feather"
            if not expected.exists():
                feather.write_feather(nested_rows(0, total), expected)
            prefix = tmp_path / f"{name}-{i}.parquet"
            prefix.write_bytes(data[: commit.parquet_size])
            jobs.append(_job(f"{name}@{i}", prefix, expected, verify_checksums=True))
            ours = streamwrite.read_table(path, snapshot=commit.parquet_size, decryption=decryption)
            assert ours.equals(nested_rows(0, total))
        with streamwrite.ParquetFile(path, decryption=decryption) as pf:
            row_group = (pf.thrift_metadata.row_groups or [])[-1]
            kinds = {}
            for spec, chunk in zip(
                pf._parquet_schema.columns, row_group.columns or [], strict=True
            ):
                crypto = chunk.crypto_metadata
                if crypto is None:
                    kinds[spec.name] = "plain"
                elif crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
                    kinds[spec.name] = "footer"
                else:
                    assert crypto.ENCRYPTION_WITH_COLUMN_KEY is not None
                    assert crypto.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema == list(
                        spec.path_in_schema
                    )
                    kinds[spec.name] = "column"
        assert kinds == {
            "ts": "plain",
            "id": "plain",
            "vals.list.element": "footer",
            "tags.list.element": "plain",
            "pair.list.element": "plain",
            "s.a": "column",
            "s.b": "column",
            "s.inner.x": "column",
            "m.key_value.key": "plain",
            "m.key_value.value": "column",
            "deep.list.element.k.list.element": "column",
        }
    results = run_pyarrow(tmp_path, jobs)
    assert results == {job["name"]: "ok" for job in jobs}
