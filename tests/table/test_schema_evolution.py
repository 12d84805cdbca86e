"""Schema evolution: ``Table.add_columns``, the schema history in ``_txn``, readers of segments of
several schemas (ours, the snapshot view, pyarrow, DuckDB, polars), compaction across a schema
change, encryption of added columns, and add_columns racing the commit pipeline."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.cli import main as cli_main
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    SchemaError,
    StateError,
    UnsupportedError,
    WorkerError,
)
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.format.txn import (
    TXN_FILE,
    Segment,
    TxnRecord,
    decode_txn,
    encode_txn,
    encode_txn_payload,
)
from streamwrite.layout.table import CommitPolicy, TableMachine
from streamwrite.pool.executor import InlineExecutor
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import open_table

DAY_US = 86_400 * 10**6
TS = pa.timestamp("us", tz="UTC")
BASE = pa.schema([("ts", TS), ("id", pa.int64()), ("price", pa.float64())])
VENUE = pa.field("venue", pa.dictionary(pa.int32(), pa.string()))
SIZE = pa.field("size", pa.int32())
WIDE = pa.schema([*BASE, VENUE, SIZE])
KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}
ROOT = Path(__file__).resolve().parents[2]
READERS = Path(__file__).with_name("_evolution_readers.py")


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _rows(start: int, num_rows: int, schema: pa.Schema = BASE, days: int = 2) -> pa.Table:
    """Rows ``id`` start..start+n-1 over ``days`` days; the added columns (if ``schema`` has
    them) hold values derived from the id (every third null)."""
    ids = np.arange(start, start + num_rows, dtype=np.int64)
    columns: dict[str, Any] = {
        "ts": pa.array((ids % days) * DAY_US + ids, TS),
        "id": pa.array(ids),
        "price": pa.array(ids * 0.5),
    }
    if "venue" in schema.names:
        venue = [None if i % 3 == 0 else f"v{i % 5}" for i in ids]
        columns["venue"] = pa.array(venue, pa.string()).dictionary_encode()
    if "size" in schema.names:
        columns["size"] = pa.array([None if i % 3 == 1 else int(i % 1000) for i in ids], pa.int32())
    return pa.table(columns).cast(schema)


def _expected(parts: list[pa.Table], schema: pa.Schema = WIDE) -> pa.Table:
    """``parts`` widened to ``schema`` (nulls where a part lacks a column), sorted by id."""
    widened = []
    for part in parts:
        columns = [
            part[f.name] if f.name in part.column_names else pa.nulls(part.num_rows, f.type)
            for f in schema
        ]
        widened.append(pa.Table.from_arrays(columns, schema=schema))
    return _plain(pa.concat_tables(widened))


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded (dictionaries differ between row groups), sorted by id."""
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            table = table.set_column(i, field.name, table[i].cast(field.type.value_type))
    return table.sort_by("id").combine_chunks()


def _sorted(table: pa.Table) -> pa.Table:
    return _plain(table)


def _txn(path: Path) -> TxnRecord:
    return decode_txn((path / TXN_FILE).read_bytes())


async def _open(path: Path, schema: pa.Schema | None = BASE, **options: Any) -> streamwrite.Table:
    settings: dict[str, Any] = {
        "timestamp": "ts",
        "partition_by": "day",
        "commit_interval": None,
        "compaction_interval": None,
    }
    if schema is None:
        settings = {"commit_interval": None, "compaction_interval": None}
    return await open_table(path, schema, **{**settings, **options})


def _segment_columns(path: Path) -> dict[str, list[str]]:
    """``partition/segment`` -> the column names of each listed segment's committed footer."""
    record = _txn(path)
    found = {}
    for name, size in record.files():
        data = (path / name / "data.parquet").read_bytes()[:size]
        found[name] = pq.ParquetFile(io.BytesIO(data)).schema_arrow.names
    return found


# -- the _txn record -----------------------------------------------------------------------


def test_txn_schema_history_is_additive_and_round_trips() -> None:
    record = TxnRecord(
        version=4,
        schema="s0",
        timestamp="ts",
        partition_by="day",
        partitions={"ts_day=1970-01-01": (Segment("seg-000000", 123, 7),)},
    )
    payload = encode_txn_payload(record)
    assert b"schemas" not in payload  # a table that never changed: what format 4 always wrote
    assert record.schema_history == ((0, "s0"),)
    evolved = record.evolved("s1").evolved("s2")
    assert evolved.version == 6 and evolved.schema == "s2"
    assert evolved.schemas == ((0, "s0"), (5, "s1"), (6, "s2"))
    assert decode_txn(encode_txn(evolved)) == evolved
    assert evolved.next({}).schemas == evolved.schemas  # commits keep the history
    # A reader of format 4 that predates the key parses the record all the same: the CRC32
    # covers every key, and unknown keys are not looked at.
    body = json.loads(encode_txn_payload(evolved))
    assert body["schemas"] == [[0, "s0"], [5, "s1"], [6, "s2"]]
    for bad in (((0, "s0"), (5, "s1")), ((3, "s2"), (1, "s2")), ((0, "s0"), (9, "s2"))):
        data = encode_txn(TxnRecord(version=6, schema="s2", schemas=bad))
        with pytest.raises(CorruptFileError, match="schema history"):
            decode_txn(data)


def test_the_machine_seals_every_newest_segment_for_a_schema_change() -> None:
    """Sans I/O: an open newest segment whose row groups are committed closes now, one with a
    row group still to commit stays sealed until that commit is published, and a listed
    newest segment that was never opened is not reopened for appending."""
    day, other, idle = "ts_day=1970-01-01", "ts_day=1970-01-02", "ts_day=1970-01-03"
    record = TxnRecord(partitions={idle: (Segment("seg-000000", 100),)})
    machine = TableMachine(record, CommitPolicy(), 0.0)
    for partition in (day, other):
        machine.roll_over(partition, machine.allocate_segment(partition))
        machine.buffer(partition, 1, 8, 0.0)
        machine.cut(partition, 1, 0, "seg-000000")
    machine.accept(2, 16)
    unit = machine.take_unit(None, 0.0)
    machine.begin_commit(unit)
    machine.segment_committed(unit.segments[0], Segment("seg-000000", 10))  # day only
    machine.published(machine.finish_commit(unit))
    assert machine.seal_all() == [(day, "seg-000000", True), (other, "seg-000000", False)]
    for partition in (day, other, idle):
        assert machine.newest(partition) is None and machine.newest_to_open(partition) is None
        assert machine.next_row_group(partition) is None  # the next row group rolls over
    assert machine.sealed_segments(other) == {"seg-000000"}
    assert machine.roll_over(day, machine.allocate_segment(day)) == (None, False)


# -- add_columns ---------------------------------------------------------------------------


def test_add_columns_publishes_a_wider_schema_and_old_rows_read_as_nulls(tmp_path: Path) -> None:
    path = tmp_path / "t"
    first, second, third = _rows(0, 30), _rows(30, 20, BASE.append(VENUE)), _rows(50, 25, WIDE)

    async def go() -> None:
        table = await _open(path)
        await table.append(first)
        await table.append(_rows(1000, 1))  # buffered: committed before the schema change
        version = table.version
        commit = await table.add_columns([VENUE])
        assert commit.version == version + 2 and commit.num_rows == 0
        assert _txn(path).version == commit.version  # durable when it returns
        assert table.schema.equals(BASE.append(VENUE))
        await table.append(second)
        with pytest.raises(SchemaError):  # appends after the change carry the new schema
            await table.append(_rows(2000, 3))
        await table.add_columns([SIZE])
        await table.append(third)
        await table.flush()
        assert table.schema.equals(WIDE)
        with table.snapshot() as snapshot:
            assert snapshot.schema is not None and snapshot.schema.equals(WIDE)
            got = snapshot.read(["size", "id"])  # a projection, in the order asked
            assert got.schema.names == ["size", "id"] and got.num_rows == 76
            only_new = snapshot.read(["size"])  # segments without the column: nulls, all rows
            assert only_new.num_rows == 76
            assert only_new["size"].null_count == 76 - third["size"].drop_null().length()
            with pytest.raises(SchemaError, match="no column 'nope'"):
                snapshot.read(["id", "nope"])
        await table.close()

    _run(go)
    want = _expected([first, _rows(1000, 1), second, third])
    got = streamwrite.read_table(path)
    assert got.schema.names == WIDE.names  # the current order
    assert _sorted(got).equals(want)
    record = _txn(path)
    assert [v for v, _ in record.schemas] == [0, 2, 4]  # each after the commit of the rows before
    # Every segment has a schema of the history: the base, +venue, +venue+size.
    assert {tuple(c) for c in _segment_columns(path).values()} == {
        tuple(BASE.names),
        tuple(BASE.append(VENUE).names),
        tuple(WIDE.names),
    }


def test_add_columns_refuses_bad_fields_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _open(path)
        await table.append(_rows(0, 10))
        version, payload = table.version, (path / TXN_FILE).read_bytes()
        bad: list[tuple[Any, type[Exception], str]] = [
            ([pa.field("price", pa.int64())], SchemaError, "has a column of that name"),
            ([VENUE, VENUE], SchemaError, "repeat"),
            ([pa.field("x", pa.int64(), nullable=False)], SchemaError, "must be nullable"),
            ([pa.field("x", pa.dense_union([pa.field("i", pa.int64())]))], UnsupportedError, "x"),
            ([], SchemaError, "at least one"),
            (VENUE, SchemaError, "sequence"),
            (["x"], SchemaError, "pyarrow.Field"),
            ([pa.field("ts_day", pa.string())], ConfigError, "ts_day"),
        ]
        for fields, error, message in bad:
            with pytest.raises(error, match=message or None):
                await table.add_columns(fields)
        assert table.version == version and table.schema.equals(BASE)
        assert (path / TXN_FILE).read_bytes() == payload
        await table.append(_rows(10, 5))  # still open and writable
        await table.close()

    _run(go)
    assert _sorted(streamwrite.read_table(path)).equals(_plain(_rows(0, 15)))


def test_add_columns_on_a_table_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _open(path)
        await table.add_columns([VENUE, SIZE])
        assert streamwrite.read_table(path).schema.equals(WIDE)
        assert streamwrite.read_table(path).num_rows == 0
        await table.append(_rows(0, 12, WIDE))
        await table.close()

    _run(go)
    assert _sorted(streamwrite.read_table(path)).equals(_plain(_rows(0, 12, WIDE)))
    assert _txn(path).schemas[0][0] == 0 and len(_txn(path).schemas) == 2


class _FailingExecutor:
    """An executor whose second ``run_all`` raises, as a crashed worker process would."""

    def __init__(self) -> None:
        self.calls = 0
        self.inline = InlineExecutor()

    async def run(self, job: Any, priority: int = 0) -> Any:
        return await self.inline.run(job, priority)

    async def run_all(self, jobs: Any, priority: int = 0) -> Any:
        self.calls += 1
        if self.calls == 2:
            raise WorkerError("injected: the worker process died")
        return await self.inline.run_all(jobs, priority)

    async def aclose(self) -> None:
        pass


def test_add_columns_on_a_closed_or_poisoned_table(tmp_path: Path) -> None:
    async def go() -> None:
        table = await _open(tmp_path / "closed")
        await table.close()
        with pytest.raises(StateError, match="closed"):
            await table.add_columns([VENUE])
        # The buffered rows' encoding fails inside add_columns: the table is poisoned and
        # the schema on disk is the old one.
        table = await _open(tmp_path / "poisoned", executor=_FailingExecutor())
        await table.append(_rows(0, 5, days=1), app_id="a", batch_id=0)  # encode 1
        await table.append(_rows(5, 5, days=1))  # buffered
        with pytest.raises(WorkerError):
            await table.add_columns([VENUE])  # encode 2 fails
        with pytest.raises(StateError, match="failed a commit"):
            await table.add_columns([VENUE])
        with pytest.raises(StateError):
            await table.append(_rows(10, 5, BASE.append(VENUE), days=1))
        await table.close()

    _run(go)
    record = _txn(tmp_path / "poisoned")
    assert not record.schemas and record.schema == _txn(tmp_path / "closed").schema
    assert _sorted(streamwrite.read_table(tmp_path / "poisoned")).equals(
        _plain(_rows(0, 5, days=1))
    )


# -- add_columns racing the commit pipeline ------------------------------------------------


@pytest.mark.parametrize("background", [True, False], ids=["async-with", "leaders"])
def test_add_columns_racing_pipelined_appends(tmp_path: Path, background: bool) -> None:
    """Appends accepted before add_columns (wait=False tickets, group commits, a batch id in
    flight) commit with the old schema; an old-schema append that waited for the buffer lock
    meanwhile is refused whole; appends after it carry the new schema, in new segments."""
    path = tmp_path / "t"
    narrow = BASE.append(VENUE)
    outcome: dict[str, Any] = {}

    async def go() -> None:
        table = await _open(path, commit_rows=25, row_group_size=10, segment_row_groups=4)
        if background:
            await table.__aenter__()
        tickets = [await table.append(_rows(i * 10, 10), wait=False) for i in range(7)]
        tickets.append(await table.append(_rows(70, 10), app_id="job", batch_id=0, wait=False))

        async def late_old_append() -> None:
            try:
                await table.append(_rows(500, 5))
                outcome["late"] = "accepted"
            except SchemaError:
                outcome["late"] = "refused"

        async def new_appends() -> None:
            while "venue" not in table.schema.names:  # the new schema is published
                await anyio.sleep(0)
            for i in range(4):
                tickets.append(await table.append(_rows(100 + i * 10, 10, narrow), wait=False))

        async with anyio.create_task_group() as tg:
            tg.start_soon(late_old_append)
            tg.start_soon(new_appends)
            outcome["commit"] = await table.add_columns([VENUE])
        await table.flush()  # inside async with, durable() waits for a commit it does not ask
        commits = [await ticket.durable() for ticket in tickets]
        outcome["versions"] = [c.version for c in commits]
        if background:
            await table.__aexit__(None, None, None)
        else:
            await table.close()

    _run(go)
    schema_version = outcome["commit"].version
    versions = outcome["versions"]
    old = [v for v in versions[:8]]
    assert max(old) < schema_version < min(versions[8:]), versions
    # The late append either came before add_columns took the buffer lock (accepted: old
    # rows) or after (refused: it does not carry the new schema).
    parts = [_rows(0, 80)] + [_rows(100 + i * 10, 10, narrow) for i in range(4)]
    if outcome["late"] == "accepted":
        parts.append(_rows(500, 5))
    assert _sorted(streamwrite.read_table(path)).equals(_expected(parts, narrow))
    record = _txn(path)
    assert _txn(path).applied == {"job": 0} and record.schemas[-1][0] == schema_version
    for name, columns in _segment_columns(path).items():
        assert columns in (BASE.names, narrow.names), name


def test_reopening_takes_the_current_schema_and_names_an_older_one(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _open(path)
        await table.append(_rows(0, 10))
        await table.add_columns([VENUE])
        await table.close()  # each partition's listed newest segment has the old schema
        with pytest.raises(ConfigError, match=r"before version 2: columns \['venue'\] were added"):
            await _open(path, BASE)
        with pytest.raises(ConfigError, match="not ts"):
            await _open(path, pa.schema([("ts", TS)]))
        table = await _open(path, BASE.append(VENUE))
        assert table.schema.equals(BASE.append(VENUE))
        await table.append(_rows(10, 10, BASE.append(VENUE)))  # a new segment per partition
        await table.close()
        table = await _open(path, None)
        assert table.schema.equals(BASE.append(VENUE))
        await table.append(_rows(20, 10, BASE.append(VENUE)))  # appended to those segments
        await table.close()

    _run(go)
    columns = _segment_columns(path)
    assert sorted(columns) == [
        f"ts_day=1970-01-0{day}/seg-00000{n}" for day in (1, 2) for n in (0, 1)
    ]
    assert all(c == (BASE.names if n.endswith("0") else WIDE.names[:4]) for n, c in columns.items())
    want = _expected([_rows(0, 10), _rows(10, 20, BASE.append(VENUE))], BASE.append(VENUE))
    assert _sorted(streamwrite.read_table(path)).equals(want)


# -- encryption ----------------------------------------------------------------------------


def test_added_columns_of_an_encrypted_table_use_the_footer_key(tmp_path: Path) -> None:
    """Decision: a column added to an encrypted table is never plaintext: it is encrypted
    with the footer key (the key source gives keys only to columns that existed). Old and
    new segments reopen with the caller's settings; compaction re-encrypts across them."""
    path = tmp_path / "t"

    def encryption(plaintext_footer: bool) -> FileEncryption:
        return FileEncryption(
            ExplicitKeys(KEYS, "kf", {"price": "k1"}), plaintext_footer=plaintext_footer
        )

    decryption = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"price": "k1"}))
    for plaintext_footer in (False, True):
        where = path / str(plaintext_footer)

        async def go(where: Path = where, plaintext_footer: bool = plaintext_footer) -> None:
            options = {"encryption": encryption(plaintext_footer), "segment_row_groups": 2}
            table = await _open(where, **options)
            await table.append(_rows(0, 20))
            await table.add_columns([VENUE, SIZE])
            await table.append(_rows(20, 20, WIDE))
            await table.close()
            table = await _open(where, None, **options)  # both kinds of segment check out
            await table.append(_rows(40, 20, WIDE))
            await table.flush()
            results = await table.compact()
            assert results and all(r.raw_row_groups == 0 for r in results)
            await table.close()

        _run(go)
        want = _expected([_rows(0, 20), _rows(20, 40, WIDE)])
        assert _sorted(streamwrite.read_table(where, decryption=decryption)).equals(want)
        for name in _txn(where).partitions:
            segment = where / name / _txn(where).partitions[name][-1].name
            with ParquetFile(segment, decryption=decryption) as pf:
                chunks = (pf.thrift_metadata.row_groups or [])[0].columns or []
                names = pf.schema_arrow.names
                crypto = {n: c.crypto_metadata for n, c in zip(names, chunks, strict=True)}
            assert crypto["price"] is not None and crypto["price"].ENCRYPTION_WITH_COLUMN_KEY
            for added in ("venue", "size"):
                assert crypto[added] is not None and crypto[added].ENCRYPTION_WITH_FOOTER_KEY
            assert crypto["id"] is None  # the table's own rule for unlisted columns holds
        with pytest.raises(streamwrite.EncryptionError):
            streamwrite.read_table(where)


# -- compaction ----------------------------------------------------------------------------


def test_compaction_merges_segments_of_different_schemas_into_the_newest(tmp_path: Path) -> None:
    """Decision: a run of segments of several schemas merges into one segment of the newest
    schema (rows of older ones widened with nulls, re-encoded); full row groups of the newest
    schema are still copied raw. Every committed prefix of the merged segment is a valid
    Parquet file that pyarrow reads with page checksums verified."""
    path = tmp_path / "t"
    options: dict[str, Any] = {
        "row_group_size": 40,
        "segment_row_groups": 3,
        "compaction": CompactionPolicy(grace_seconds=0, target_row_group_rows=40),
    }
    parts = [_rows(0, 50, days=1), _rows(50, 15, BASE.append(VENUE), days=1)]
    parts.append(_rows(65, 90, WIDE, days=1))

    async def go() -> Any:
        table = await _open(path, **options)
        await table.append(parts[0])
        await table.add_columns([VENUE])
        await table.append(parts[1])
        await table.add_columns([SIZE])
        for start, num_rows in ((65, 40), (105, 40), (145, 10)):  # two full row groups
            await table.append(_rows(start, num_rows, WIDE, days=1))
            await table.flush()
        before = streamwrite.read_table(path)
        results = await table.compact()
        await table.close()
        return before, results

    before, results = _run(go)
    (result,) = results
    assert len(result.merged) >= 3 and result.raw_row_groups >= 2
    after = streamwrite.read_table(path)
    assert _sorted(after).equals(_sorted(before)) and _sorted(after).equals(_expected(parts))
    (segment,) = _txn(path).partitions["ts_day=1970-01-01"]
    directory = path / "ts_day=1970-01-01" / segment.name
    assert _segment_columns(path) == {f"ts_day=1970-01-01/{segment.name}": WIDE.names}
    data = (directory / "data.parquet").read_bytes()
    sidecar = read_sidecar((directory / "_pm").read_bytes())
    sizes = sorted(footer.parquet_file_size for _, footer in sidecar.footers)  # every commit
    assert sizes[-1] == segment.size
    for size in sizes:
        prefix = pq.read_table(io.BytesIO(data[:size]), page_checksum_verification=True)
        assert prefix.schema.names == WIDE.names
    assert _plain(pq.read_table(io.BytesIO(data[: segment.size]))).equals(_expected(parts))


# -- third-party readers, the snapshot view, the CLI ---------------------------------------


def _evolved_table(path: Path) -> pa.Table:
    async def go() -> None:
        table = await _open(path, segment_row_groups=2, row_group_size=10)
        await table.append(_rows(0, 30))
        await table.add_columns([VENUE, SIZE])
        await table.append(_rows(30, 30, WIDE))
        await table.close()

    _run(go)
    return _expected([_rows(0, 30), _rows(30, 30, WIDE)])


def test_third_party_readers_of_an_evolved_table(tmp_path: Path) -> None:
    """What pyarrow, DuckDB and polars give for a table directory (and the snapshot view)
    holding segments of two schemas: the right rows when told the schema or to unify by name;
    by default pyarrow and DuckDB take the first file's schema (all rows, added columns
    dropped) and polars refuses. Documented in ``streamwrite.table.snapshot_fs``."""
    path = tmp_path / "t"
    want = _evolved_table(path)
    expected = tmp_path / "expected.arrow"
    with pa.OSFile(str(expected), "wb") as sink, pa.ipc.new_file(sink, want.schema) as writer:
        writer.write_table(want)
    proc = subprocess.run(
        [sys.executable, str(READERS), str(path), str(expected)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results = {line["form"]: line for line in map(json.loads, proc.stdout.splitlines())}
    exact = [
        "pyarrow ds.dataset(schema=current)",
        "pyarrow ds.dataset(view, schema=fs.schema)",
        "duckdb union_by_name",
        "duckdb view union_by_name",
        "polars scan_parquet(schema, missing_columns=insert)",
        "polars concat diagonal",
    ]
    for form in exact:
        assert results[form]["outcome"] == "equal", (form, results[form])
    for form in ("pyarrow pq.read_table", "duckdb default"):
        assert results[form]["outcome"] == "added columns dropped", (form, results[form])
    assert results["polars default"]["outcome"].startswith("error: SchemaError")


def test_cli_inspect_and_verify_an_evolved_table(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "t"
    _evolved_table(path)
    assert cli_main(["inspect", "--json", "-q", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in shown["schema"]] == WIDE.names and shown["num_rows"] == 60
    assert cli_main(["verify", "-q", str(path)]) == 0


def test_the_readme_snippet(tmp_path: Path, monkeypatch: Any) -> None:
    """The README's "Schema evolution" snippet, as pasted (in an async function)."""
    monkeypatch.chdir(tmp_path)

    async def snippet() -> pa.Table:
        schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("price", pa.float64())])
        async with await streamwrite.open_table(
            "ticks", schema, timestamp="ts", partition_by="day"
        ) as table:
            await table.append(pa.table({"ts": [0, 1], "price": [1.5, 2.5]}, schema=schema))
            await table.add_columns([pa.field("venue", pa.string())])  # nullable, at the end
            await table.append(
                pa.table({"ts": [2], "price": [3.5], "venue": ["XNAS"]}, schema=table.schema)
            )
        return streamwrite.read_table("ticks")  # older rows: venue is null

    got = _run(snippet)
    assert got.sort_by("ts").to_pydict()["venue"] == [None, None, "XNAS"]
