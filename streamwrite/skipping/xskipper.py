"""xskipper's Parquet metadata store, version 4 (spec 004): names, Spark schema JSON, files.

Layout (``/work/shared/spec/data-skipping.md`` section 2)::

    <table>/_skipping/<sha256 hex of tableIdentifier>/<file>       (no .parquet suffix)
    tableIdentifier = the table's absolute path, no trailing "/"

One row per sealed segment::

    obj_name                      string  "<abs path of data.parquet>#<mtime in ms>"
    virtual_<partition column>    the partition column's Spark type (partitioned tables)
    <c>_minmax_<len>              struct<min: T, max: T>       all null / empty: {null, null}
    <c>_valuelist_<len>           array<T> (3-level LIST)      all null / empty: []
    <c>_bloomfilter_<len>         binary: Java-serialized BloomFilterMetaData (UDT)
                                  all null / empty: an empty filter

Column names: each indexed column with ``#`` -> ``##`` then ``.`` -> ``$#$``; name =
``'_'.join(cols) + '_' + index + '_' + '-'.join(len(col))``. Parquet key/value metadata:
``org.apache.spark.sql.parquet.row.metadata`` = the Spark StructType JSON (compact), where
``obj_name`` carries ``{"tableIdentifier": id, "version": 4}`` (plus ``"encryption"``
``{"encryption.column.keys": "label:col,col;...", "encryption.footer.key": label
[, "encryption.plaintext.footer": "true"]}`` when encrypted, labels only) and each index column
``{"index": {"cols": [c], "name": index[, "params": {...}][, "key_metadata": label]}}``;
``org.apache.spark.version``; and ours, ``streamwrite.skipping.rows`` = JSON
``[[segment name, committed size], ...]`` in row order.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.kms import KeyWrapper
from streamwrite.encode import encode_row_group
from streamwrite.errors import ConfigError, StreamwriteIOError
from streamwrite.io.local import fsync_directory
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.skipping.bloom import SparkBloomFilter
from streamwrite.skipping.config import IndexSpec, SkippingConfig
from streamwrite.skipping.sketch import SegmentSketch

__all__ = [
    "BLOOM_UDT",
    "ROWS_KEY",
    "SPARK_SCHEMA_KEY",
    "StoreEntry",
    "column_name",
    "spark_type",
    "store_directory",
    "table_identifier",
    "write_store_file",
    "xskipper_table",
]

SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"
SPARK_VERSION_KEY = "org.apache.spark.version"
SPARK_VERSION = "4.0.0"
ROWS_KEY = "streamwrite.skipping.rows"
BLOOM_UDT = (
    "io.xskipper.metadatastore.parquet.ParquetBaseClauseTranslator$BloomFilterMetaDataTypeUDT"
)
VERSION = 4


@dataclass(frozen=True)
class StoreEntry:
    """One sealed segment to index.

    Attributes:
        segment: The table's name for the segment (the key of ``prune``'s ``segments``).
        path: Absolute path of the segment's Parquet file.
        committed_size: Its committed size in bytes.
        sketch: Its sketch.
        mtime_ms: The file's modification time in ms (None: read with ``os.stat``).
        partition: Partition column values (``virtual_<name>`` columns), as Arrow scalars.
    """

    segment: str
    path: str
    committed_size: int
    sketch: SegmentSketch
    mtime_ms: int | None = None
    partition: Mapping[str, pa.Scalar] = field(default_factory=dict)

    def obj_name(self) -> str:
        """Returns: xskipper's key, ``<path>#<mtime ms>``.

        Raises:
            StreamwriteIOError: The file cannot be stat'ed (and no ``mtime_ms`` was given).
        """
        mtime = self.mtime_ms
        if mtime is None:
            try:
                mtime = os.stat(self.path).st_mtime_ns // 1_000_000
            except OSError as exc:
                raise StreamwriteIOError(
                    f"Cannot read the modification time of segment {self.segment!r} at "
                    f"{self.path}: {exc}."
                ) from exc
        return f"{_identifier_path(self.path)}#{mtime}"


def _identifier_path(path: str) -> str:
    text = str(Path(path).absolute()) if not str(path).startswith("/") else str(path)
    return text.rstrip("/") or "/"


def table_identifier(table_path: str | os.PathLike[str]) -> str:
    """Returns: xskipper's ``tableIdentifier`` of a local table (absolute path, no trailing /)."""
    return _identifier_path(os.fspath(Path(table_path).absolute()))


def store_directory(table_path: str | os.PathLike[str]) -> Path:
    """Returns: ``<table>/_skipping/<sha256(tableIdentifier)>``."""
    digest = hashlib.sha256(table_identifier(table_path).encode()).hexdigest()
    return Path(table_path) / "_skipping" / digest


def column_name(columns: Sequence[str], index_name: str) -> str:
    """xskipper v2+ ``getColumnNameForCols``: ``temp`` + ``minmax`` -> ``temp_minmax_4``.

    Returns:
        The metadata column name.
    """
    escaped = [c.replace("#", "##").replace(".", "$#$") for c in columns]
    return "_".join(escaped) + "_" + index_name + "_" + "-".join(str(len(c)) for c in escaped)


def spark_type(dtype: pa.DataType) -> str:
    """Returns: the Spark SQL type name in a StructType JSON for an Arrow primitive type.

    Raises:
        ConfigError: A type the store cannot describe to Spark.
    """
    simple = {
        pa.int8(): "byte",
        pa.int16(): "short",
        pa.int32(): "integer",
        pa.int64(): "long",
        pa.uint8(): "short",
        pa.uint16(): "integer",
        pa.uint32(): "long",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.date32(): "date",
        pa.string(): "string",
        pa.large_string(): "string",
        pa.binary(): "binary",
        pa.large_binary(): "binary",
    }
    for arrow, name in simple.items():
        if dtype.equals(arrow):
            return name
    if pa.types.is_timestamp(dtype):
        return "timestamp" if dtype.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    if pa.types.is_uint64(dtype):
        return "decimal(20,0)"
    if pa.types.is_fixed_size_binary(dtype):
        return "binary"
    raise ConfigError(f"The skipping store cannot describe type {dtype} to Spark.")


def store_type(dtype: pa.DataType) -> pa.DataType:
    """Returns: the Arrow type the store writes values of ``dtype`` as (Spark-readable)."""
    if pa.types.is_timestamp(dtype):
        return pa.timestamp("us", dtype.tz)
    if pa.types.is_date64(dtype):
        return pa.date32()
    if pa.types.is_fixed_size_binary(dtype):
        return pa.binary()
    return dtype


def _to_store(values: pa.Array, target: pa.DataType, rounding: str) -> pa.Array:
    if values.type.equals(target):
        return values
    if pa.types.is_timestamp(values.type) and values.type.unit == "ns":
        mask = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        ints = np.asarray(values.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
        micros = ints // 1000 if rounding == "floor" else -((-ints) // 1000)
        return pa.array(micros, pa.int64(), mask=mask).cast(target)
    return values.cast(target)


def _java_double(value: float) -> str:
    if value != 0 and not 1e-3 <= abs(value) < 1e7:
        mantissa, exponent = f"{value:.16E}".split("E")
        digits = repr(float(mantissa)).rstrip("0")
        digits = digits + "0" if digits.endswith(".") else digits
        return f"{digits}E{int(exponent)}"
    return repr(float(value))


def _index_metadata(index: IndexSpec, label: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"cols": [index.column], "name": index.xskipper_name}
    if index.kind == "bloom":
        meta["params"] = {
            "io.xskipper.index.bloom.ndv": str(index.ndv),
            "io.xskipper.index.bloom.fpp": _java_double(index.fpp),
        }
    if label is not None:
        meta["key_metadata"] = label
    return {"index": meta}


def _field_json(name: str, dtype: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": dtype, "nullable": True, "metadata": dict(metadata)}


def _struct_json(fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "struct", "fields": fields}


@dataclass(frozen=True)
class StoreEncryption:
    """How store files are encrypted: the store's FileEncryption and the labels of the spec."""

    encryption: FileEncryption
    footer_label: str
    plaintext_footer: bool
    column_labels: Mapping[str, str]  # top-level store column -> master key label


def store_encryption(
    table_encryption: FileEncryption | None, config: SkippingConfig, partitions: Sequence[str]
) -> StoreEncryption | None:
    """Derive the store's encryption from the table's: ``obj_name`` and ``virtual_*`` under
    the footer key, each index column under its indexed column's key (plaintext if that
    column is plaintext).

    Returns:
        The store's encryption, or None for a plaintext table.

    Raises:
        ConfigError: The table's keys are explicit (no master key labels to record).
    """
    if table_encryption is None:
        return None
    keys = table_encryption.keys
    if not isinstance(keys, KeyWrapper):
        raise ConfigError(
            "An encrypted skipping store needs the table's FileEncryption to hold a KeyWrapper "
            "(master key labels, which the store records as xskipper does), not ExplicitKeys."
        )
    table_config = keys.config
    footer = table_config.footer_key_id
    labels: dict[str, str] = {"obj_name": footer}
    labels.update({f"virtual_{p}": footer for p in partitions})
    for index in config.store_indexes:
        label = table_config.column_keys.get(index.column)
        if label is None and index.column in table_encryption.footer_key_columns:
            label = footer
        if label is not None:
            labels[column_name([index.column], index.xskipper_name)] = label
    leaves: dict[str, str] = {}
    for top, label in labels.items():
        for leaf in _leaf_suffixes(top, config):
            leaves[top + leaf] = label
    wrapper = KeyWrapper(keys.kms, replace(table_config, column_keys=leaves))
    return StoreEncryption(
        FileEncryption(wrapper), footer, table_encryption.plaintext_footer, labels
    )


def _leaf_suffixes(top: str, config: SkippingConfig) -> list[str]:
    for index in config.store_indexes:
        if column_name([index.column], index.xskipper_name) == top:
            if index.kind == "minmax":
                return [".min", ".max"]
            if index.kind == "valuelist":
                return [".list.element"]
    return [""]


def _key_list(labels: Mapping[str, str]) -> str:
    by_label: dict[str, list[str]] = {}
    for column, label in labels.items():
        by_label.setdefault(label, []).append(column)
    return ";".join(f"{label}:{','.join(cols)}" for label, cols in by_label.items())


def xskipper_table(
    entries: Sequence[StoreEntry],
    config: SkippingConfig,
    identifier: str,
    partition_types: Mapping[str, pa.DataType],
    encryption: StoreEncryption | None = None,
) -> tuple[pa.Table, str]:
    """The v4 rows of ``entries`` (at least one) and the Spark schema JSON.

    Returns:
        ``(table, spark schema json)``.

    Raises:
        ConfigError: No entries.
        StreamwriteIOError: A segment file without ``mtime_ms`` cannot be stat'ed.
    """
    if not entries:
        raise ConfigError("A skipping store file needs at least one row.")
    labels = {} if encryption is None else dict(encryption.column_labels)
    obj_meta: dict[str, Any] = {"tableIdentifier": identifier, "version": VERSION}
    if encryption is not None:
        enc = {
            "encryption.column.keys": _key_list(labels),
            "encryption.footer.key": encryption.footer_label,
        }
        if encryption.plaintext_footer:
            enc["encryption.plaintext.footer"] = "true"
        obj_meta["encryption"] = enc
    arrays: list[pa.Array] = [pa.array([e.obj_name() for e in entries], pa.string())]
    names = ["obj_name"]
    fields_json = [_field_json("obj_name", "string", obj_meta)]
    for name, dtype in partition_types.items():
        target = store_type(dtype)
        values = [e.partition.get(name) for e in entries]
        arrays.append(pa.array(values, dtype).cast(target))
        names.append(f"virtual_{name}")
        fields_json.append(_field_json(f"virtual_{name}", spark_type(target), {}))
    for index in config.store_indexes:
        col = column_name([index.column], index.xskipper_name)
        sketches = [e.sketch.columns[index.column] for e in entries]
        dtype = store_type(sketches[0].dtype)
        meta = _index_metadata(index, labels.get(col))
        if index.kind == "minmax":
            mins = _scalars([s.min for s in sketches], sketches, "floor", dtype)
            maxs = _scalars([s.max for s in sketches], sketches, "ceil", dtype)
            if pa.types.is_floating(dtype):  # NaN present: Java's order puts it last
                has_nan = np.array([s.nan_count > 0 for s in sketches], dtype=bool)
                nan = pa.scalar(float("nan"), dtype)
                maxs = pc.if_else(pa.array(has_nan), nan, maxs)
                only_nan = has_nan & np.array([s.min is None for s in sketches], dtype=bool)
                mins = pc.if_else(pa.array(only_nan), nan, mins)
            arrays.append(pa.StructArray.from_arrays([mins, maxs], names=["min", "max"]))
            stype = spark_type(dtype)
            fields_json.append(
                _field_json(
                    col,
                    _struct_json([_field_json("min", stype, {}), _field_json("max", stype, {})]),
                    meta,
                )
            )
        elif index.kind == "valuelist":
            parts = [s.distinct() for s in sketches]
            flat = [
                _to_store(p, dtype, "floor") if p is not None else pa.array([], dtype)
                for p in parts
            ]
            offsets = np.zeros(len(flat) + 1, dtype=np.int32)
            np.cumsum([len(p) for p in flat], out=offsets[1:])
            values = pa.concat_arrays(flat) if flat else pa.array([], dtype)
            arrays.append(pa.ListArray.from_arrays(pa.array(offsets), values))
            fields_json.append(
                _field_json(
                    col,
                    {"type": "array", "elementType": spark_type(dtype), "containsNull": True},
                    meta,
                )
            )
        else:
            blobs = []
            for s in sketches:
                assert s.bloom is not None
                blobs.append(s.bloom.to_java_bytes())
            arrays.append(pa.array(blobs, pa.binary()))
            udt = {"type": "udt", "class": BLOOM_UDT, "pyClass": None, "sqlType": "binary"}
            fields_json.append(_field_json(col, udt, meta))
        names.append(col)
    table = pa.Table.from_arrays(arrays, names=names)
    spark_json = json.dumps(_struct_json(fields_json), separators=(",", ":"))
    return table, spark_json


def _scalars(
    values: list[pa.Scalar | None], sketches: Sequence[Any], rounding: str, dtype: pa.DataType
) -> pa.Array:
    source = sketches[0].dtype
    arr = pa.array(values, source)
    return _to_store(arr, dtype, rounding)


def write_store_file(
    directory: Path,
    table: pa.Table,
    spark_json: str,
    rows: Sequence[tuple[str, int]],
    encryption: StoreEncryption | None = None,
) -> tuple[str, int]:
    """Write one store file with streamwrite's writer: a hidden temporary file, fsync,
    rename to a new name (``part-<hex>-c000``, no ``.parquet``), fsync the directory.

    Returns:
        ``(file name, size in bytes)``.

    Raises:
        StreamwriteIOError: Writing or syncing fails (nothing is left under the final name).
    """
    schema = arrow_to_parquet(table.schema)
    names = [spec.name for spec in schema.columns]
    options = make_write_options(
        names,
        compression="snappy",
        key_value_metadata={
            SPARK_SCHEMA_KEY: spark_json,
            SPARK_VERSION_KEY: SPARK_VERSION,
            ROWS_KEY: json.dumps([list(r) for r in rows], separators=(",", ":")),
        },
    )
    encryptor = None if encryption is None else encryption.encryption._open_file(names)
    writer = FileWriter(schema, options, encryptor=encryptor)
    chunks = encode_row_group(table, schema, options, encryptor=encryptor)
    data = writer.start() + writer.add_row_group(chunks, table.num_rows) + writer.footer()
    name = f"part-00000-{secrets.token_hex(16)}-c000"
    temp = directory / f".{name}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, directory / name)
        fsync_directory(directory)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise StreamwriteIOError(
            f"Writing skipping store file {directory / name} failed: {exc}."
        ) from exc
    return name, len(data)


def read_store_file(
    path: Path, table_encryption: FileEncryption | None
) -> tuple[pa.Table, dict[str, str]]:
    """Read back one store file (pyarrow; encrypted files through the table's KMS).

    Returns:
        ``(rows, key/value metadata)``.

    Raises:
        StreamwriteIOError: The file cannot be read.
    """
    import pyarrow.parquet as pq

    props = None
    if table_encryption is not None:
        import pyarrow.parquet.encryption as pe

        keys = table_encryption.keys
        assert isinstance(keys, KeyWrapper)
        kms = keys.kms

        class _Client(pe.KmsClient):  # type: ignore[misc]
            def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
                return kms.wrap_key(key_bytes, master_key_identifier)

            def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
                return kms.unwrap_key(wrapped_key, master_key_identifier)

        factory = pe.CryptoFactory(lambda _config: _Client())
        props = factory.file_decryption_properties(pe.KmsConnectionConfig())
    try:
        pf = pq.ParquetFile(path, decryption_properties=props)
        table = pf.read()
        meta = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    except (OSError, ValueError) as exc:
        raise StreamwriteIOError(f"Reading skipping store file {path} failed: {exc}.") from exc
    return table, meta


def empty_bloom(index: IndexSpec) -> SparkBloomFilter:
    """Returns: the empty filter of ``index`` (an all-null segment's bloom value)."""
    return SparkBloomFilter.create(index.ndv, index.fpp)
