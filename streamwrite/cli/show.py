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
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.inspect import (
    PINS_NOTE,
    ColumnChunkInfo,
    ColumnStatistics,
    CompactionStatus,
    FileInfo,
    FooterLink,
    LiveFileInfo,
    TableInfo,
)

__all__ = [
    "compaction_json",
    "file_json",
    "live_json",
    "print_compaction",
    "print_file",
    "print_live",
    "print_table",
    "stat_value",
    "table_json",
]


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


def stat_value(value: Any, arrow_type: pa.DataType) -> Any:
    """A typed statistics bound (``streamwrite.inspect``'s) as JSON-ready text or number
    (module docstring); None when unset."""
    if value is None:
        return None
    dtype = arrow_type
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if isinstance(value, np.datetime64):
        unit: Any = np.datetime_data(value.dtype)[0]
        text = str(np.datetime_as_string(value, unit=unit))
        return text + ("Z" if pa.types.is_timestamp(dtype) and dtype.tz is not None else "")
    if (pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype)) and isinstance(value, bytes):
        return "0x" + value.hex()
    return _jsonable(value)


def _statistics(stats: ColumnStatistics | None, arrow_type: pa.DataType) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "null_count": stats.null_count,
        "min": stat_value(stats.min, arrow_type),
        "max": stat_value(stats.max, arrow_type),
        "is_min_value_exact": stats.is_min_value_exact,
        "is_max_value_exact": stats.is_max_value_exact,
    }


def _chunk_json(chunk: ColumnChunkInfo, arrow_type: pa.DataType) -> dict[str, Any]:
    meta = chunk.metadata
    if meta is None:  # encrypted, no key for it (or damaged)
        return {"column": chunk.column, "encrypted": True}
    return {
        "column": chunk.column,
        "codec": meta.codec,
        "encodings": list(meta.encodings),
        "num_values": meta.num_values,
        "compressed_size": meta.compressed_size,
        "uncompressed_size": meta.uncompressed_size,
        "data_page_offset": meta.data_page_offset,
        "dictionary_page_offset": meta.dictionary_page_offset,
        "statistics": _statistics(meta.statistics, arrow_type),
        "bloom_filter": meta.bloom_filter_offset is not None,
        "bloom_filter_offset": meta.bloom_filter_offset,
        "bloom_filter_length": meta.bloom_filter_length,
        "column_index": chunk.column_index_offset is not None,
        "column_index_offset": chunk.column_index_offset,
        "offset_index": chunk.offset_index_offset is not None,
        "offset_index_offset": chunk.offset_index_offset,
        "encrypted": chunk.encrypted,
    }


def file_json(info: FileInfo) -> dict[str, Any]:
    """A JSON-ready description of the file's footer, schema and column chunks."""
    types = {c.name: c.arrow_type for c in info.columns}
    return {
        "version": info.version,
        "created_by": info.created_by,
        "num_rows": info.num_rows,
        "num_row_groups": info.num_row_groups,
        "footer_offset": info.footer_offset,
        "encryption_algorithm": info.encryption_algorithm,
        "key_value_metadata": {
            key: (value if key != "ARROW:schema" else f"<{len(value or '')} chars>")
            for key, value in info.key_value_metadata.items()
        },
        "schema": [
            {
                "name": c.name,
                "arrow_type": str(c.arrow_type),
                "physical_type": c.physical_type,
                "type_length": c.type_length,
                "repetition": c.repetition,
                "logical_type": c.logical_type,
                "max_definition_level": c.max_definition_level,
                "max_repetition_level": c.max_repetition_level,
            }
            for c in info.columns
        ],
        "row_groups": [
            {
                "index": rg.index,
                "num_rows": rg.num_rows,
                "total_byte_size": rg.total_byte_size,
                "total_compressed_size": rg.total_compressed_size,
                "file_offset": rg.file_offset,
                "columns": [_chunk_json(ch, types[ch.column]) for ch in rg.columns],
            }
            for rg in info.row_groups
        ],
    }


def _link_json(link: FooterLink) -> dict[str, Any]:
    if link.problem is not None:
        return {"parquet_size": link.parquet_size, "problem": link.problem}
    return {
        "commit_seq": link.commit_seq,
        "parquet_size": link.parquet_size,
        "footer_offset": link.footer_offset,
        "footer_length": link.footer_length,
        "num_row_groups": link.num_row_groups,
        "prev_size": link.prev_size,
    }


def live_json(info: LiveFileInfo) -> dict[str, Any]:
    """A JSON-ready summary of a live file: ``_pm`` header and footers, snapshots, the
    Parquet footer chain."""
    pm = info.sidecar
    return {
        "path": str(info.path),
        "committed_parquet_size": info.committed_size,
        "uncommitted_tail_bytes": info.uncommitted_bytes,
        "pm": {
            "committed_size": pm.committed_size,
            "feature_flags": pm.feature_flags,
            "designated_timestamp": pm.designated_timestamp,
            "sorting_columns": list(pm.sorting_columns),
            "bloom_columns": list(pm.bloom_columns),
            "columns": list(pm.columns),
            "footers": pm.num_footers,
            "unused_bytes": pm.unused_bytes,
        },
        "snapshots": [
            {
                "seq": s.seq,
                "parquet_size": s.parquet_size,
                "num_rows": s.num_rows,
                "num_row_groups": s.num_row_groups,
            }
            for s in info.snapshots
        ],
        "footer_chain": [_link_json(link) for link in info.footer_chain],
    }


def table_json(info: TableInfo) -> dict[str, Any]:
    """A JSON-ready description of a table (what ``streamwrite.inspect.tables`` says can be
    known of it); a segment that cannot be read has a ``problem``."""
    record = info.record
    now = time.time()
    by_partition: dict[str, list[dict[str, Any]]] = {p.name: [] for p in record.partitions}
    for state in info.segments:
        segment = state.record
        entry: dict[str, Any] = {
            "name": segment.name,
            "committed_size": segment.committed_size,
            "file_size": segment.file_size,
            "uncommitted_bytes": segment.uncommitted_bytes,
        }
        if state.info is not None:
            entry |= {
                "num_rows": state.info.num_rows,
                "num_row_groups": len(state.info.row_group_rows),
                "dead_bytes": state.info.dead_bytes,
                "encrypted": state.info.encrypted,
            }
        else:
            entry["problem"] = state.problem
        by_partition[segment.partition].append(entry)
    partitions = [
        {
            "name": name,
            "num_segments": len(segments),
            "num_rows": sum(s.get("num_rows", 0) for s in segments),
            "committed_size": sum(s["committed_size"] for s in segments),
            "dead_bytes": sum(s.get("dead_bytes", 0) for s in segments),
            "segments": segments,
        }
        for name, segments in by_partition.items()
    ]
    pids = record.writer_pids
    return {
        "table": str(record.path),
        "txn_version": record.version,
        "schema": [{"name": f.name, "arrow_type": str(f.type)} for f in record.schema],
        "timestamp": record.timestamp,
        "partition_by": record.partition_by,
        "num_rows": sum(p["num_rows"] for p in partitions),
        "writer_pids": None if pids is None else list(pids),
        "partitions": partitions,
        "retired": [
            {
                "path": r.path,
                "retired_seconds_ago": round(now - r.retired_at, 3),
                "on_disk": r.on_disk,
            }
            for r in record.retired
        ],
        "applied": dict(record.applied),
        "pins": PINS_NOTE,
    }


def compaction_json(status: CompactionStatus) -> list[dict[str, Any]]:
    """The decisions of ``compact --status --json``."""
    return [asdict(s) for s in status.partitions]


def print_file(info: dict[str, Any]) -> None:
    """Print :func:`file_json`'s description as text."""
    print(f"created_by: {info['created_by']}")
    print(
        f"rows: {info['num_rows']}  row groups: {info['num_row_groups']}  "
        f"footer at byte {info['footer_offset']}"
    )
    if info["encryption_algorithm"]:
        print(f"encryption: {info['encryption_algorithm']}")
    for key, value in info["key_value_metadata"].items():
        print(f"metadata {key}: {value}")
    print("schema:")
    for c in info["schema"]:
        levels = ""
        if c["max_repetition_level"] or c["max_definition_level"] > 1:  # a nested leaf
            levels = f", max def {c['max_definition_level']}, max rep {c['max_repetition_level']}"
        print(f"  {c['name']}: {c['arrow_type']} ({c['physical_type']}, {c['repetition']}{levels})")
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
    """Print :func:`live_json`'s description as text."""
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
    """Print :func:`table_json`'s description as text."""
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


def print_compaction(status: CompactionStatus) -> None:
    """Print compaction decisions and the notes on what they assumed."""
    for note in status.notes:
        print(note)
    for decision in status.partitions:
        verdict = f"compact {', '.join(decision.merge)}" if decision.compact else "leave"
        print(f"{decision.partition}: {verdict}")
        for reason in decision.reasons:
            print(f"  {reason}")
