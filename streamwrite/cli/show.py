"""What the command line prints: JSON-ready descriptions and their text form.

Statistics are typed values, never hex: a bound is decoded as the column's Arrow type (from
``ARROW:schema`` when the file has it) and printed as JSON-ready text::

    timestamp   ISO-8601, "2026-11-22T09:30:00.000001Z" (Z when UTC-adjusted; nanoseconds kept)
    date, time  ISO-8601, "2026-11-22", "09:30:00.000500"
    decimal     "12.3400" (a string, so no digit is lost)
    string      the text;  binary: "0x" + hex
    int, float, bool        JSON numbers and booleans (NaN and infinities as strings)
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.arrow.schema import ColumnSpec
from streamwrite.compaction.policy import PartitionStatus
from streamwrite.errors import StreamwriteError
from streamwrite.format import structs as t
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.metadata import typed_value

__all__ = [
    "describe",
    "print_compaction",
    "print_file",
    "print_live",
    "print_table",
    "stat_value",
]

_Enum = type[t.Type] | type[t.Encoding] | type[t.CompressionCodec]


def _name(value: int | None, enum: _Enum) -> str | None:
    if value is None:
        return None
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _timestamp_text(raw: bytes, spec: ColumnSpec, dtype: pa.TimestampType) -> str:
    ticks = int.from_bytes(raw, "little", signed=True)
    if spec.physical_type == t.Type.INT96:
        nanos = int.from_bytes(raw[:8], "little")
        days = int.from_bytes(raw[8:12], "little")
        ticks, unit = (days - 2440588) * 86_400_000_000_000 + nanos, "ns"
    else:
        unit = dtype.unit
    unit_name: Any = unit
    moment: Any = np.array([ticks], dtype=f"datetime64[{unit}]")
    text = str(np.datetime_as_string(moment, unit=unit_name)[0])
    return text + ("Z" if dtype.tz is not None else "")


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "0x" + value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def stat_value(raw: bytes | None, spec: ColumnSpec) -> Any:
    """A statistics bound as a JSON-ready typed value (module docstring); None when unset."""
    if raw is None:
        return None
    dtype = spec.field.type
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_timestamp(dtype):
        return _timestamp_text(raw, spec, dtype)
    try:
        value = typed_value(raw, spec)
    except ValueError:
        value = bytes(raw)
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "0x" + bytes(raw).hex()
    return _jsonable(value)


def _statistics(stats: t.Statistics | None, spec: ColumnSpec) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "null_count": stats.null_count,
        "min": stat_value(stats.min_value, spec),
        "max": stat_value(stats.max_value, spec),
        "is_min_value_exact": stats.is_min_value_exact,
        "is_max_value_exact": stats.is_max_value_exact,
    }


def describe(pf: ParquetFile) -> dict[str, Any]:
    """A JSON-ready description of the file's footer, schema and column chunks."""
    md = pf.thrift_metadata
    columns = []
    for spec in pf.parquet_schema.columns:
        e = spec.element
        columns.append(
            {
                "name": spec.name,
                "arrow_type": str(spec.field.type),
                "physical_type": spec.physical_type.name,
                "type_length": spec.type_length,
                "repetition": spec.repetition.name,
                "logical_type": None if e.logicalType is None else repr(e.logicalType),
            }
        )
    row_groups = []
    for i, rg in enumerate(md.row_groups or []):
        chunks = []
        for spec in pf.parquet_schema.columns:
            chunk = (rg.columns or [])[spec.index]
            try:
                meta = pf.column_metadata(i, spec.index)
            except StreamwriteError:  # encrypted, no key for it (or damaged)
                chunks.append({"column": spec.name, "encrypted": True})
                continue
            chunks.append(
                {
                    "column": spec.name,
                    "codec": _name(meta.codec, t.CompressionCodec),
                    "encodings": [_name(e, t.Encoding) for e in meta.encodings or []],
                    "num_values": meta.num_values,
                    "compressed_size": meta.total_compressed_size,
                    "uncompressed_size": meta.total_uncompressed_size,
                    "data_page_offset": meta.data_page_offset,
                    "dictionary_page_offset": meta.dictionary_page_offset,
                    "statistics": _statistics(meta.statistics, spec),
                    "bloom_filter": meta.bloom_filter_offset is not None,
                    "bloom_filter_offset": meta.bloom_filter_offset,
                    "bloom_filter_length": meta.bloom_filter_length,
                    "column_index": chunk.column_index_offset is not None,
                    "column_index_offset": chunk.column_index_offset,
                    "offset_index": chunk.offset_index_offset is not None,
                    "offset_index_offset": chunk.offset_index_offset,
                    "encrypted": chunk.crypto_metadata is not None,
                }
            )
        row_groups.append(
            {
                "index": i,
                "num_rows": rg.num_rows,
                "total_byte_size": rg.total_byte_size,
                "total_compressed_size": rg.total_compressed_size,
                "file_offset": rg.file_offset,
                "columns": chunks,
            }
        )
    return {
        "version": md.version,
        "created_by": md.created_by,
        "num_rows": md.num_rows,
        "num_row_groups": len(md.row_groups or []),
        "footer_offset": pf.footer_offset,
        "encryption_algorithm": pf.encryption_algorithm,
        "unsupported_columns": pf.unsupported_columns,
        "key_value_metadata": {
            kv.key: (kv.value if kv.key != "ARROW:schema" else f"<{len(kv.value or '')} chars>")
            for kv in md.key_value_metadata or []
        },
        "schema": columns,
        "row_groups": row_groups,
    }


def print_file(info: dict[str, Any]) -> None:
    """Print :func:`describe`'s description as text."""
    print(f"created_by: {info['created_by']}")
    print(
        f"rows: {info['num_rows']}  row groups: {info['num_row_groups']}  "
        f"footer at byte {info['footer_offset']}"
    )
    if info["encryption_algorithm"]:
        print(f"encryption: {info['encryption_algorithm']}")
    if info["unsupported_columns"]:
        print(f"nested columns (not shown): {', '.join(info['unsupported_columns'])}")
    for key, value in info["key_value_metadata"].items():
        print(f"metadata {key}: {value}")
    print("schema:")
    for c in info["schema"]:
        print(f"  {c['name']}: {c['arrow_type']} ({c['physical_type']}, {c['repetition']})")
    for rg in info["row_groups"]:
        print(
            f"row group {rg['index']}: {rg['num_rows']} rows, "
            f"{rg['total_compressed_size']} bytes at {rg['file_offset']}"
        )
        for ch in rg["columns"]:
            if ch.get("encrypted") and "codec" not in ch:
                print(f"  {ch['column']}: encrypted (no key)")
                continue
            stats = ch["statistics"] or {}
            extras = [name for name in ("bloom_filter", "column_index", "offset_index") if ch[name]]
            print(
                f"  {ch['column']}: {ch['codec']} {'/'.join(ch['encodings'])} "
                f"{ch['compressed_size']}/{ch['uncompressed_size']} bytes, "
                f"nulls={stats.get('null_count')} min={_text(stats.get('min'))} "
                f"max={_text(stats.get('max'))} {' '.join(extras)}"
                + (" encrypted" if ch["encrypted"] else "")
            )


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def print_live(live: dict[str, Any]) -> None:
    """Print ``describe_live``'s description as text."""
    pm = live["pm"]
    print(
        f"live file {live['path']}: committed data.parquet size "
        f"{live['committed_parquet_size']}, uncommitted tail {live['uncommitted_tail_bytes']} bytes"
    )
    print(
        f"_pm: {pm['committed_size']} bytes, {pm['footers']} footers, feature flags "
        f"{pm['feature_flags']:#x}, bloom columns {pm['bloom_columns']}, "
        f"dead bytes in data.parquet {pm['unused_bytes']}"
    )
    print("snapshots (seq parquet_size rows row_groups):")
    for s in live["snapshots"]:
        print(
            f"  {s['seq']:>5} {s['parquet_size']:>12} {s['num_rows']:>10} {s['num_row_groups']:>5}"
        )
    print("footer chain, newest first (commit_seq parquet_size footer_length prev_size):")
    for f in live["footer_chain"]:
        if "problem" in f:
            print(f"  at {f['parquet_size']}: {f['problem']}")
        else:
            print(
                f"  {f['commit_seq']:>5} {f['parquet_size']:>12} {f['footer_length']:>8} "
                f"{f['prev_size']:>12}"
            )


def print_table(info: dict[str, Any]) -> None:
    """Print ``describe_table``'s description as text."""
    pids = info["writer_pids"]
    writer = "unknown" if pids is None else f"pid {', '.join(map(str, pids))}" if pids else "none"
    print(
        f"table {info['table']}: _txn version {info['txn_version']}, {info['num_rows']:,} rows, "
        f"{len(info['partitions'])} partition(s), partitioned by {info['partition_by']} on "
        f"{info['timestamp']}; writer holding the table: {writer}"
    )
    print("schema: " + ", ".join(f"{c['name']}: {c['arrow_type']}" for c in info["schema"]))
    for p in info["partitions"]:
        print(
            f"partition {p['name']}: {p['num_segments']} segment(s), {p['num_rows']:,} rows, "
            f"{p['committed_size']:,} bytes, {p['dead_bytes']:,} dead bytes"
        )
        for s in p["segments"]:
            if "problem" in s:
                print(f"  {s['name']}: {s['problem']}")
                continue
            tail = s["uncommitted_bytes"]
            print(
                f"  {s['name']}: {s['num_rows']:,} rows in {s['num_row_groups']} row groups, "
                f"{s['committed_size']:,} bytes committed, {s['dead_bytes']:,} dead"
                + (f", {tail:,} bytes past the commit" if tail else "")
                + (" (encrypted)" if s["encrypted"] else "")
            )
    for r in info["retired"]:
        where = "still on disk" if r["on_disk"] else "deleted"
        print(f"retired {r['path']}: {r['retired_seconds_ago']:.0f} s ago, {where}")
    for app_id, batch_id in info["applied"].items():
        print(f"applied batch id {batch_id} for app id {app_id!r}")
    print(f"pins: {info['pins']}")


def print_compaction(statuses: list[PartitionStatus], notes: list[str]) -> None:
    """Print compaction decisions and the notes on what they assumed."""
    for note in notes:
        print(note)
    for status in statuses:
        verdict = f"compact {', '.join(status.merge)}" if status.compact else "leave"
        print(f"{status.partition}: {verdict}")
        for reason in status.reasons:
            print(f"  {reason}")
