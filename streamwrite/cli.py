"""Command line: ``streamwrite inspect FILE|DIR [--json]``, ``streamwrite verify FILE|DIR``,
``streamwrite recover DIR [--apply]`` (a DIR is a live file: data.parquet + _pm) and
``streamwrite compact TABLE [--partition P] [--status]`` (a table directory with ``_txn``).

Exit status: 0 on success, 1 when ``verify`` finds a problem, 2 when the file cannot be read
or the arguments are wrong.

Encrypted files: ``inspect`` and ``verify`` take explicit keys as ``--footer-key HEX``,
``--column-key NAME=HEX`` (repeatable) and ``--aad-prefix TEXT``, or ``--keys-file PATH``, or the
environment variable ``STREAMWRITE_KEYS``; the last two hold JSON
``{"footer": HEX, "columns": {NAME: HEX}, "aad_prefix": TEXT}``. Options win over the file, the
file over the environment. Key bytes are never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from streamwrite.decryption import DecryptionConfig
from streamwrite.errors import ConfigError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.reader import ParquetFile

__all__ = ["main"]

KEYS_ENV = "STREAMWRITE_KEYS"
"""Environment variable holding the keys JSON (as ``--keys-file``)."""


_Enum = type[t.Type] | type[t.Encoding] | type[t.CompressionCodec]


def _name(value: int | None, enum: _Enum) -> str | None:
    if value is None:
        return None
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _stat(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def describe(pf: ParquetFile) -> dict[str, Any]:
    """A JSON-ready description of the file's footer, schema and column chunks."""
    md = pf.metadata
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
            stats = meta.statistics
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
                    "statistics": None
                    if stats is None
                    else {
                        "null_count": stats.null_count,
                        "min_value": _stat(stats.min_value),
                        "max_value": _stat(stats.max_value),
                        "is_min_value_exact": stats.is_min_value_exact,
                        "is_max_value_exact": stats.is_max_value_exact,
                    },
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


def _print_text(info: dict[str, Any]) -> None:
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
                f"nulls={stats.get('null_count')} min={stats.get('min_value')} "
                f"max={stats.get('max_value')} {' '.join(extras)}"
                + (" encrypted" if ch["encrypted"] else "")
            )


def _print_live(live: dict[str, Any]) -> None:
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


def _hex_key(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise ConfigError(f"The {what} must be a hex string.")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise ConfigError(f"The {what} is not valid hex.") from None  # never echo the value
    if len(key) not in (16, 24, 32):
        raise ConfigError(f"The {what} is {len(key)} bytes long; AES needs 16, 24 or 32 bytes.")
    return key


def _keys_json(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"The keys in {where} are not valid JSON.") from None
    if not isinstance(data, dict) or not isinstance(data.get("columns", {}), dict):
        raise ConfigError(
            f'The keys in {where} must be {{"footer": HEX, "columns": {{NAME: HEX}}, '
            '"aad_prefix": TEXT}.'
        )
    return data


def decryption_from_args(args: argparse.Namespace) -> DecryptionConfig | None:
    """The keys given by options, ``--keys-file`` or ``STREAMWRITE_KEYS`` (in that order).

    Returns:
        The config, or None when no key was given.

    Raises:
        ConfigError: Malformed keys (the message never holds key bytes).
    """
    data: dict[str, Any] = {}
    if args.keys_file is not None:
        try:
            text = Path(args.keys_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Cannot read the keys file {args.keys_file!r}: {exc}") from None
        data = _keys_json(text, f"the file {args.keys_file!r}")
    elif os.environ.get(KEYS_ENV):
        data = _keys_json(os.environ[KEYS_ENV], f"${KEYS_ENV}")
    footer = data.get("footer")
    footer_key = None if footer is None else _hex_key(footer, "footer key")
    columns = {
        str(name): _hex_key(value, f"key of column {name!r}")
        for name, value in data.get("columns", {}).items()
    }
    prefix = data.get("aad_prefix")
    if args.footer_key is not None:
        footer_key = _hex_key(args.footer_key, "--footer-key")
    for item in args.column_key:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError("--column-key takes NAME=HEX.")
        columns[name] = _hex_key(value, f"key of column {name!r}")
    if args.aad_prefix is not None:
        prefix = args.aad_prefix
    if prefix is not None and not isinstance(prefix, str):
        raise ConfigError("aad_prefix must be a string.")
    if footer_key is None and not columns and prefix is None:
        return None
    return DecryptionConfig.from_keys(
        footer_key=footer_key,
        column_keys=columns,
        aad_prefix=None if prefix is None else prefix.encode("utf-8"),
    )


def _add_key_options(parser: argparse.ArgumentParser) -> None:
    keys = parser.add_argument_group("decryption keys (encrypted files)")
    keys.add_argument("--footer-key", metavar="HEX", help="footer key, hex")
    keys.add_argument(
        "--column-key", metavar="NAME=HEX", action="append", default=[], help="a column's key"
    )
    keys.add_argument("--aad-prefix", metavar="TEXT", help="AAD prefix the file does not store")
    keys.add_argument(
        "--keys-file",
        metavar="PATH",
        help=f'JSON {{"footer": HEX, "columns": {{NAME: HEX}}, "aad_prefix": TEXT}} '
        f"(default: ${KEYS_ENV})",
    )


def _inspect(args: argparse.Namespace) -> int:
    path = Path(args.file)
    decryption = decryption_from_args(args)
    live = None
    if path.is_dir():
        from streamwrite.live_info import describe_live

        live = describe_live(path, decryption)
    with ParquetFile(path, decryption=decryption) as pf:  # a live directory: its newest commit
        info = describe(pf)
    if live is not None:
        info = {"live": live, **info}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    if live is not None:
        _print_live(live)
    _print_text(info)
    return 0


def _recover(args: argparse.Namespace) -> int:
    from streamwrite.live import recover

    plan = recover(args.path, apply=args.apply, decryption=decryption_from_args(args))
    verb = "did" if args.apply else "would do (run with --apply to do it)"
    print(f"recovery of {args.path} {verb}:")
    for line in plan.describe():
        print(f"  {line}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from streamwrite.verify import verify_file

    report = verify_file(args.file, decryption=decryption_from_args(args))
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    status = "OK" if report.ok else "FAILED"
    print(
        f"{status}: {report.num_row_groups} row groups, {report.num_pages} pages checked, "
        f"{len(report.problems)} problems"
    )
    return 0 if report.ok else 1


def _policy(args: argparse.Namespace) -> Any:
    from streamwrite.compaction import CompactionPolicy

    options: dict[str, Any] = {"sort_by_timestamp": args.sort}
    if args.target_rows is not None:
        options["target_row_group_rows"] = args.target_rows
    if args.grace is not None:
        options["grace_seconds"] = args.grace
    return CompactionPolicy(**options)


def _compact(args: argparse.Namespace) -> int:
    import anyio

    from streamwrite.table import open_table

    policy = _policy(args)

    async def run() -> list[Any]:
        table = await open_table(args.table, compaction=policy, compaction_interval=None)
        try:
            if args.status:
                return await table.compaction_status(explicit=True)
            return await table.compact(args.partition)
        finally:
            await table.close()

    outcome = anyio.run(run)
    if args.json:
        print(json.dumps([asdict(item) for item in outcome], indent=2))
    elif args.status:
        for status in outcome:
            verdict = f"compact {', '.join(status.merge)}" if status.compact else "leave"
            print(f"{status.partition}: {verdict}")
            for reason in status.reasons:
                print(f"  {reason}")
    elif not outcome:
        print(f"{args.table}: nothing to compact")
    for result in [] if args.status or args.json else outcome:
        print(
            f"{result.partition}: {len(result.merged)} segment(s), {result.bytes_before:,} bytes "
            f"-> {result.segment.name}, {result.segment.size:,} bytes; {result.num_rows:,} rows; "
            f"{result.raw_row_groups} row groups copied raw, {result.reencoded_row_groups} "
            f"re-encoded; {result.seconds:.2f} s"
        )
    if outcome and not args.status and policy.grace_seconds > 0:
        print(
            f"replaced segments stay {policy.grace_seconds:g} s for readers of other processes; "
            "a later compact or open of the table deletes them"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="streamwrite", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help="show footer, schema, row groups and column chunks")
    inspect.add_argument("file")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    _add_key_options(inspect)
    inspect.set_defaults(run=_inspect)
    verify = sub.add_parser("verify", help="check every page, CRC, page index and bloom filter")
    verify.add_argument("file")
    _add_key_options(verify)
    verify.set_defaults(run=_verify)
    recover = sub.add_parser("recover", help="report (and with --apply do) live-file recovery")
    recover.add_argument("path", help="a live-file directory (data.parquet + _pm)")
    recover.add_argument("--apply", action="store_true", help="truncate torn tails, rebuild _pm")
    _add_key_options(recover)
    recover.set_defaults(run=_recover)
    compact = sub.add_parser(
        "compact", help="merge a table's small segments (the table's writer lock is taken)"
    )
    compact.add_argument("table", help="a table directory (_txn + partitions)")
    compact.add_argument("--partition", help="only this partition")
    compact.add_argument("--status", action="store_true", help="only show the decision")
    compact.add_argument("--sort", action="store_true", help="sort merged rows by timestamp")
    compact.add_argument("--target-rows", type=int, help="rows per merged row group")
    compact.add_argument("--grace", type=float, help="seconds old segments stay for readers")
    compact.add_argument("--json", action="store_true", help="print JSON")
    compact.set_defaults(run=_compact)
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except (StreamwriteError, OSError) as exc:
        print(f"streamwrite {args.command}: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
