"""Encrypted live files and tables (DESIGN sections 3 and 5).

* Every committed prefix of an encrypted live file, across reopens (``encryption=`` or
  ``decryption=``), decrypts with pyarrow (``CryptoFactory`` over our ``InMemoryKms``, in a
  subprocess) and with our reader at ``snapshot=``; the file keeps one ``aad_file_unique`` and
  one data key per column for its life, and row group ordinals count on across commits.
* Recovery walks the encrypted footer chain: torn tails go, a missing ``_pm`` is rebuilt
  byte for byte; ``_pm`` holds no statistics, bloom entries or keys of encrypted columns.
* Opening without keys is an EncryptionError; the i16 row group ordinal limit is a LimitError
  before any byte is written; tables encrypt every partition with its own ``aad_file_unique``.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pytest

import streamwrite
from streamwrite.crypto import EncryptionConfig, ExplicitKeys, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import LiveKeys
from streamwrite.encode import encode_row_group
from streamwrite.errors import ConfigError, EncryptionError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.sidecar.codec import read_row_group_block, read_sidecar
from streamwrite.format.thrift.codec import serialize
from streamwrite.layout.recovery import FooterVersion, parse_footer_at
from streamwrite.live.file import LiveFile
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table
from tests.crypto.test_writer_encryption import MASTER_KEYS, _job, run_pyarrow

TABLE = reference_table(2400)
COLUMN_KEYS = {"price": "kc", "order_id": "kd", "symbol": "kc"}
FOOTER_KEY_COLUMNS = ("qty",)
PLAIN = ["ts", "side", "venue"]
OPTIONS: dict[str, Any] = {
    "row_group_size": 200,
    "data_page_row_limit": 100,
    "bloom_filter_options": {"order_id": True, "venue": True},
}
KEYS = {"kf": b"F" * 16, "k1": b"1" * 16, "k2": b"2" * 32}


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _kms() -> InMemoryKms:
    return InMemoryKms(MASTER_KEYS)


@dataclass(frozen=True)
class Case:
    name: str
    algorithm: str = "AES_GCM_V1"
    plaintext_footer: bool = False
    double_wrapping: bool = True
    aad_prefix: bytes | None = None
    explicit: bool = False

    def encryption(self) -> FileEncryption:
        """A fresh key source each call (a new process reopening the file)."""
        if self.explicit:
            keys = ExplicitKeys(KEYS, "kf", {"price": "k1", "order_id": "k2", "symbol": "k1"})
            return FileEncryption(
                keys,
                algorithm=self.algorithm,
                plaintext_footer=self.plaintext_footer,
                aad_prefix=self.aad_prefix,
                footer_key_columns=FOOTER_KEY_COLUMNS,
            )
        config = EncryptionConfig(
            footer_key_id="kf",
            column_keys=COLUMN_KEYS,
            algorithm=self.algorithm,
            plaintext_footer=self.plaintext_footer,
            double_wrapping=self.double_wrapping,
            aad_prefix=self.aad_prefix,
        )
        return FileEncryption(KeyWrapper(_kms(), config), footer_key_columns=FOOTER_KEY_COLUMNS)

    def decryption(self) -> DecryptionConfig:
        if self.explicit:
            return DecryptionConfig(
                ExplicitKeys(KEYS, "kf", {"price": "k1", "order_id": "k2", "symbol": "k1"}),
                aad_prefix=self.aad_prefix,
            )
        return DecryptionConfig.from_kms(_kms(), aad_prefix=self.aad_prefix)


CASES = [
    Case("gcm-ef-double"),
    Case("gcm-pf-single", plaintext_footer=True, double_wrapping=False),
    Case("ctr-ef-single", algorithm="AES_GCM_CTR_V1", double_wrapping=False),
    Case("ctr-pf-prefix", algorithm="AES_GCM_CTR_V1", plaintext_footer=True, aad_prefix=b"lf"),
    Case("gcm-ef-prefix", aad_prefix=b"s3://bucket/lf"),
    Case("explicit-ef", explicit=True),
    Case("explicit-pf-ctr", explicit=True, plaintext_footer=True, algorithm="AES_GCM_CTR_V1"),
]
SIZES = [250, 0, 1, 400, 199, 600]  # commits; the file is reopened after the second and fourth


async def _build(case: Case, path: Path, sizes: list[int] = SIZES) -> list[streamwrite.Commit]:
    """Commits of ``sizes`` rows, reopening with encryption= after 2, decryption= after 4."""
    commits = []
    start = 0
    openers: list[Callable[[], Any]] = [
        lambda: LiveFile.open(path, TABLE.schema, encryption=case.encryption(), **OPTIONS),
        lambda: LiveFile.open(path, encryption=case.encryption(), **OPTIONS),
        lambda: LiveFile.open(path, decryption=case.decryption(), **OPTIONS),
    ]
    for part, opener in enumerate(openers):
        async with await opener() as lf:
            if part:
                assert lf.recovery is not None and lf.recovery.describe()[-1] == "nothing to do"
                assert lf.last_commit == commits[-1]
            for size in sizes[2 * part : 2 * part + 2]:
                commits.append(await lf.append(TABLE.slice(start, size)))
                start += size
    return commits


def _versions(case: Case, path: Path) -> list[FooterVersion]:
    data = (path / "data.parquet").read_bytes()
    keys = LiveKeys(case.decryption(), None)
    sizes = [s.parquet_size for s in snapshots(path)]
    return [parse_footer_at(lambda o, n: data[o : o + n], size, keys) for size in sizes]


def snapshots(path: Path) -> list[streamwrite.Commit]:
    from streamwrite.live.info import snapshots_from_sidecar

    return snapshots_from_sidecar((path / "_pm").read_bytes())


def _column_key_metadata(rg: t.RowGroup) -> list[bytes | None]:
    out: list[bytes | None] = []
    for column in rg.columns or []:
        crypto = column.crypto_metadata
        if crypto is None or crypto.ENCRYPTION_WITH_COLUMN_KEY is None:
            out.append(None)
        else:
            out.append(crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[Any]]]:
    tmp = tmp_path_factory.mktemp("live-enc")
    return {case.name: (tmp / case.name, _run(_build, case, tmp / case.name)) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_commit_reads_with_our_reader_and_keeps_one_key_set(
    case: Case, built: dict[str, tuple[Path, list[Any]]]
) -> None:
    path, commits = built[case.name]
    total = 0
    for commit, size in zip(commits, SIZES, strict=True):
        total += size
        got = streamwrite.read_table(
            path, snapshot=commit.parquet_size, decryption=case.decryption()
        )
        assert got.equals(TABLE.slice(0, total)), commit
    with pytest.raises(EncryptionError):
        streamwrite.read_table(path, columns=["price"])
    versions = _versions(case, path)
    assert [v.seq for v in versions] == list(range(len(SIZES) + 1))
    assert all(v.encrypted_footer is not case.plaintext_footer for v in versions)
    # one aad_file_unique, algorithm and footer key for the file's whole life
    assert len({serialize(v.crypto) for v in versions if v.crypto is not None}) == 1
    assert all(v.crypto is not None for v in versions)
    newest = versions[-1].metadata.row_groups or []
    assert [rg.ordinal for rg in newest] == list(range(len(newest)))
    assert len(newest) == sum(-(-s // 200) for s in SIZES)
    # one data key per column: every row group carries the same column key metadata
    first = _column_key_metadata(newest[0])
    assert all(_column_key_metadata(rg) == first for rg in newest)
    names = TABLE.column_names
    assert sorted(n for n, m in zip(names, first, strict=True) if m) == sorted(COLUMN_KEYS)
    footer_key = [
        names[i]
        for i, c in enumerate(newest[0].columns or [])
        if c.crypto_metadata and c.crypto_metadata.ENCRYPTION_WITH_FOOTER_KEY
    ]
    assert footer_key == list(FOOTER_KEY_COLUMNS)
    # earlier footers list the same (sealed) row groups
    for version in versions:
        rgs = version.metadata.row_groups or []
        assert [serialize(rg) for rg in rgs] == [serialize(rg) for rg in newest[: len(rgs)]]


def test_every_commit_decrypts_with_pyarrow(
    built: dict[str, tuple[Path, list[Any]]], tmp_path: Path
) -> None:
    jobs = []
    for case in CASES:
        if case.explicit or case.aad_prefix is not None:
            continue  # pyarrow's key tools need PKMT1 key material and a stored prefix
        path, commits = built[case.name]
        data = (path / "data.parquet").read_bytes()
        total = 0
        for i, (commit, size) in enumerate(zip(commits, SIZES, strict=True)):
            total += size
            prefix = tmp_path / f"{case.name}-{i}.parquet"
            prefix.write_bytes(data[: commit.parquet_size])
            expected = tmp_path / f"expected-{total}.feather"
            if not expected.exists():
                feather.write_feather(TABLE.slice(0, total), expected)
            jobs.append(_job(f"{case.name}@{i}", prefix, expected, verify_checksums=True))
        first = tmp_path / f"{case.name}-empty.parquet"
        first.write_bytes(data[: snapshots(path)[0].parquet_size])
        empty = tmp_path / "expected-0.feather"
        feather.write_feather(TABLE.slice(0, 0), empty)
        jobs.append(_job(f"{case.name}@empty", first, empty))
    stored_prefix = next(c for c in CASES if c.name == "gcm-ef-prefix")
    path, commits = built[stored_prefix.name]
    jobs.append(
        _job("stored-prefix@last", path / "data.parquet", tmp_path / "expected-1450.feather")
    )
    feather.write_feather(TABLE.slice(0, sum(SIZES)), tmp_path / "expected-1450.feather")
    results = run_pyarrow(tmp_path, jobs)
    assert results == {job["name"]: "ok" for job in jobs}


def test_opening_without_keys_is_an_encryption_error(
    built: dict[str, tuple[Path, list[Any]]], tmp_path: Path
) -> None:
    for name in ("gcm-ef-double", "gcm-pf-single"):
        path = tmp_path / name
        shutil.copytree(built[name][0], path)
        before = (path / "data.parquet").read_bytes()
        with pytest.raises(EncryptionError, match="keys"):
            _run(LiveFile.open, path)
        with pytest.raises(EncryptionError, match="keys"):
            _run(LiveFile.open, path, TABLE.schema)
        if name == "gcm-ef-double":
            with pytest.raises(EncryptionError):
                streamwrite.live.file.recover(path)
        assert (path / "data.parquet").read_bytes() == before


def test_wrong_keys_and_contradicting_settings(
    built: dict[str, tuple[Path, list[Any]]], tmp_path: Path
) -> None:
    path = tmp_path / "lf"
    shutil.copytree(built["gcm-ef-double"][0], path)
    other = InMemoryKms({k: bytes(reversed(v)) for k, v in MASTER_KEYS.items()})
    with pytest.raises(EncryptionError):
        _run(LiveFile.open, path, decryption=DecryptionConfig.from_kms(other))
    with pytest.raises(ConfigError, match="an encrypted footer, not a signed plaintext footer"):
        _run(LiveFile.open, path, encryption=Case("x", plaintext_footer=True).encryption())
    with pytest.raises(ConfigError, match="AES_GCM_V1"):
        _run(LiveFile.open, path, encryption=Case("x", algorithm="AES_GCM_CTR_V1").encryption())
    plain = tmp_path / "plain"
    _run(_plain_file, plain)
    with pytest.raises(ConfigError, match="without encryption"):
        _run(LiveFile.open, plain, encryption=Case("x").encryption())
    with pytest.raises(ConfigError, match="encryption="):
        _run(LiveFile.open, tmp_path / "new", TABLE.schema, decryption=Case("x").decryption())


async def _plain_file(path: Path) -> None:
    async with await LiveFile.open(path, TABLE.schema) as lf:
        await lf.append(TABLE.slice(0, 10))


def test_a_file_without_row_groups_reopens_with_encryption(tmp_path: Path) -> None:
    case = Case("empty")
    path = tmp_path / "lf"

    async def scenario() -> None:
        async with await LiveFile.open(path, TABLE.schema, encryption=case.encryption()):
            pass
        with pytest.raises(ConfigError, match="no row group yet"):
            await LiveFile.open(path, decryption=case.decryption())
        async with await LiveFile.open(path, encryption=case.encryption()) as lf:
            await lf.append(TABLE.slice(0, 300))
        async with await LiveFile.open(path, decryption=case.decryption()) as lf:
            await lf.append(TABLE.slice(300, 100))

    _run(scenario)
    assert streamwrite.read_table(path, decryption=case.decryption()).equals(TABLE.slice(0, 400))
    versions = _versions(case, path)
    assert len({serialize(v.crypto) for v in versions if v.crypto is not None}) == 1


def test_row_group_ordinal_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import streamwrite.layout.appender as appender_module

    monkeypatch.setattr(appender_module, "MAX_ORDINAL", 4)  # at most 5 row groups
    case = Case("limit")
    path = tmp_path / "lf"

    async def scenario() -> None:
        async with await LiveFile.open(
            path, TABLE.schema, encryption=case.encryption(), row_group_size=200
        ) as lf:
            await lf.append(TABLE.slice(0, 600))  # ordinals 0, 1, 2
            files = {p.name: p.read_bytes() for p in path.iterdir()}
            with pytest.raises(LimitError, match="ordinal 5") as info:
                await lf.append(TABLE.slice(600, 600))
            message = str(info.value)
            assert "at most 5 row groups" in message and "Compact" in message
            schema = lf._schema
            chunks = encode_row_group(TABLE.slice(0, 10), schema, lf.options)
            with pytest.raises(LimitError, match="ordinal 5"):
                await lf.commit_encoded([(chunks, 10)] * 3)
            assert {p.name: p.read_bytes() for p in path.iterdir()} == files  # nothing written
            commit = await lf.append(TABLE.slice(600, 400))  # ordinals 3, 4: still fine
            assert commit.num_row_groups == 5
            with pytest.raises(LimitError):
                await lf.append(TABLE.slice(1000, 1))
        # a plaintext live file has no such limit
        async with await LiveFile.open(tmp_path / "plain", TABLE.schema, row_group_size=100) as lf:
            assert (await lf.append(TABLE.slice(0, 700))).num_row_groups == 7

    _run(scenario)
    assert streamwrite.read_table(path, decryption=case.decryption()).equals(TABLE.slice(0, 1000))


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[5]], ids=lambda c: c.name)
def test_torn_tails_and_missing_pm_recover_from_the_encrypted_chain(
    case: Case, tmp_path: Path
) -> None:
    path = tmp_path / "lf"
    commits = _run(_build, case, path, [300, 250, 10, 400])
    committed = {p.name: p.read_bytes() for p in path.iterdir()}
    data = committed["data.parquet"]
    # a commit that tore: part of a new row group plus a fake "PARE"/"PAR1" footer tail
    rng = np.random.default_rng(1)
    junk = rng.bytes(5000) + b"PARE" + rng.bytes(300) + (200).to_bytes(4, "little") + b"PARE"
    (path / "data.parquet").write_bytes(data + junk)
    (path / "_pm").unlink()
    plan = streamwrite.live.file.recover(path, apply=True, decryption=case.decryption())
    assert plan.rebuilt_pm_reason == "_pm is missing"
    assert plan.torn_data_bytes == len(junk)
    assert (path / "data.parquet").read_bytes() == data
    assert (path / "_pm").read_bytes() == committed["_pm"]  # rebuilt byte for byte
    # torn tail with _pm intact, recovered on open; then the file goes on
    (path / "data.parquet").write_bytes(data + junk[:777])

    async def go_on() -> streamwrite.Commit:
        async with await LiveFile.open(path, encryption=case.encryption()) as lf:
            assert lf.recovery is not None and lf.recovery.torn_data_bytes == 777
            return await lf.append(TABLE.slice(960, 40))

    last = _run(go_on)
    assert last.num_rows == 1000 and last.parquet_size > commits[-1].parquet_size
    decryption = case.decryption()
    assert streamwrite.read_table(path, decryption=decryption).equals(TABLE.slice(0, 1000))
    for commit, total in zip(commits, [300, 550, 560, 960], strict=True):
        got = streamwrite.read_table(path, snapshot=commit.parquet_size, decryption=decryption)
        assert got.equals(TABLE.slice(0, total))


def _deks(case: Case, path: Path) -> list[bytes]:
    keys = LiveKeys(case.decryption(), None)
    version = _versions(case, path)[-1]
    encryptor = keys.encryptor(version, TABLE.column_names)
    out = [encryptor.footer_cipher._key]
    for i in range(len(TABLE.column_names)):
        cipher = encryptor.column_cipher(i)
        if cipher is not None:
            out.append(cipher._key)
    return out


@pytest.mark.parametrize("name", ["gcm-ef-double", "gcm-pf-single"])
def test_pm_holds_no_statistics_blooms_or_keys_of_encrypted_columns(
    name: str, built: dict[str, tuple[Path, list[Any]]]
) -> None:
    case = next(c for c in CASES if c.name == name)
    path, _ = built[name]
    pm = (path / "_pm").read_bytes()
    sidecar = read_sidecar(pm)
    header = sidecar.header
    names = [c.name for c in header.columns]
    encrypted = {*COLUMN_KEYS, *FOOTER_KEY_COLUMNS}
    newest = sidecar.footers[0][1]
    for offset in newest.row_group_offsets:
        block = read_row_group_block(pm, offset, header)
        for column, record in zip(names, block.chunks, strict=True):
            if column in encrypted:
                assert (record.min_stat, record.max_stat, record.null_count) == (None, None, None)
            else:
                assert record.min_stat is not None and record.null_count is not None
            assert record.total_compressed > 0 and record.num_values > 0
    bloom_names = [names[i] for i in header.bloom_columns]
    assert sorted(bloom_names) == ["order_id", "venue"]
    entries = newest.external_bloom
    for row in range(len(newest.row_group_offsets)):
        for k, column in enumerate(bloom_names):
            entry = entries[row * len(bloom_names) + k]
            assert (entry == (0, 0)) == (column == "order_id"), (column, entry)
    deks = _deks(case, path)
    assert len(set(deks)) == 4  # footer key (also qty), symbol, price, order_id: 4 DEKs
    data = (path / "data.parquet").read_bytes()
    for key in [*deks, *MASTER_KEYS.values()]:
        for blob in (pm, data):
            assert key not in blob and key.hex().encode() not in blob


# --- tables ----------------------------------------------------------------------------------

DAY_NS = 86_400 * 10**9


def _ticks(num_rows: int, start_day: int = 0, seed: int = 0) -> pa.Table:
    table = reference_table(num_rows, seed=seed, start_row=seed * 1_000_000)
    rng = np.random.default_rng(seed)
    ts = (start_day + rng.integers(0, 2, num_rows)) * DAY_NS + rng.integers(0, DAY_NS, num_rows)
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _sorted(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [("order_id", "ascending")]))


def test_encrypted_table_partitions(tmp_path: Path) -> None:
    case = Case("table")
    batches = [_ticks(700, seed=s) for s in range(3)]

    async def scenario() -> None:
        table = await open_table(
            tmp_path / "t",
            batches[0].schema,
            timestamp="ts",
            partition_by="day",
            encryption=case.encryption(),
            row_group_size=150,
            segment_row_groups=3,
        )
        async with table:
            await table.append(batches[0], app_id="job", batch_id=0)
            await table.append(batches[1], app_id="job", batch_id=1)
        with pytest.raises(EncryptionError):
            await open_table(tmp_path / "t")
        async with await open_table(
            tmp_path / "t", encryption=case.encryption(), row_group_size=150, segment_row_groups=3
        ) as table:
            await table.append(batches[2], app_id="job", batch_id=2)

    _run(scenario)
    expected = _sorted(pa.concat_tables(batches))
    got = streamwrite.read_table(tmp_path / "t", decryption=case.decryption())
    assert _sorted(got).equals(expected)
    partitions = sorted(p for p in (tmp_path / "t").iterdir() if p.is_dir())
    assert len(partitions) == 2
    segments = sorted((tmp_path / "t").glob("*/seg-*"))
    assert len(segments) > 4  # ~9 row groups of 150 rows per partition, 3 per segment
    uniques = set()
    for segment in segments:
        versions = _versions(case, segment)
        cryptos = {serialize(v.crypto) for v in versions if v.crypto is not None}
        assert len(cryptos) == 1
        rgs = versions[-1].metadata.row_groups or []
        assert [rg.ordinal for rg in rgs] == list(range(len(rgs)))
        crypto = versions[-1].crypto
        assert crypto is not None and crypto.encryption_algorithm is not None
        algorithm = crypto.encryption_algorithm.AES_GCM_V1
        assert algorithm is not None
        uniques.add(algorithm.aad_file_unique)
    assert len(uniques) == len(segments)  # each segment is a file with its own aad_file_unique


def test_supplied_aad_prefix_is_kept_and_never_stored(tmp_path: Path) -> None:
    path = tmp_path / "lf"
    prefix = b"tenant-7/trades"

    def encryption() -> FileEncryption:
        keys = ExplicitKeys(KEYS, "kf", {"price": "k1"})
        return FileEncryption(keys, aad_prefix=prefix, store_aad_prefix=False)

    async def scenario() -> None:
        async with await LiveFile.open(path, TABLE.schema, encryption=encryption()) as lf:
            await lf.append(TABLE.slice(0, 200))
        without = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"price": "k1"}))
        with pytest.raises(EncryptionError, match="supply"):
            await LiveFile.open(path, decryption=without)
        async with await LiveFile.open(path, encryption=encryption()) as lf:
            await lf.append(TABLE.slice(200, 300))

    _run(scenario)
    assert prefix not in (path / "data.parquet").read_bytes()
    decryption = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"price": "k1"}), aad_prefix=prefix)
    assert streamwrite.read_table(path, decryption=decryption).equals(TABLE.slice(0, 500))


def test_cli_inspect_and_recover_take_keys_for_encrypted_live_files(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "lf"

    async def scenario() -> None:
        keys = ExplicitKeys(KEYS, "kf", {"price": "k1"})
        async with await LiveFile.open(path, TABLE.schema, encryption=FileEncryption(keys)) as lf:
            await lf.append(TABLE.slice(0, 200))
            await lf.append(TABLE.slice(200, 100))

    _run(scenario)
    (path / "_pm").unlink()  # recovery must decrypt the footer chain to rebuild it
    with (path / "data.parquet").open("ab") as f:
        f.write(b"torn")
    cli = [sys.executable, "-m", "streamwrite.cli"]
    key_args = ["--footer-key", KEYS["kf"].hex(), "--column-key", f"price={KEYS['k1'].hex()}"]
    refused = subprocess.run([*cli, "recover", str(path)], capture_output=True, text=True)
    assert refused.returncode == 2 and "Encryption" in refused.stderr + refused.stdout
    done = subprocess.run(
        [*cli, "recover", str(path), "--apply", *key_args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "rebuild _pm" in done.stdout and "torn tail of 4 bytes" in done.stdout
    info = subprocess.run(
        [*cli, "inspect", str(path), "--json", *key_args], capture_output=True, text=True
    )
    assert info.returncode == 0, info.stderr
    chain = json.loads(info.stdout)["live"]["footer_chain"]
    assert [f.get("commit_seq") for f in chain] == [2, 1, 0]
    for secret in (KEYS["kf"], KEYS["k1"]):
        assert secret.hex() not in info.stdout + done.stdout
