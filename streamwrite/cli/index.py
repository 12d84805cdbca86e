"""``streamwrite index build|show|drop TABLE``: a table's data-skipping configuration and
store.

::

    streamwrite index build ticks/ symbol=valuelist,bloom price=minmax ts=time_index
    streamwrite index build ticks/ --skipping '{"order_id": [["bloom", {"fpp": 0.001}]]}'
    streamwrite index build ticks/            rebuild with the table's own configuration
    streamwrite index show ticks/             the configuration, what the store holds
    streamwrite index drop ticks/             remove the configuration and the store

``build`` and ``drop`` take the table's writer lock (a table open for writing elsewhere is an
error, exit 2, unless ``--lock-timeout`` seconds are enough for it to close) and publish a new
``_txn`` version (``streamwrite.build_index`` / ``streamwrite.drop_index``); a bad
configuration changes nothing. ``show`` reads only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import streamwrite
from streamwrite.cli.skipping_spec import parse_skipping
from streamwrite.errors import ConfigError

__all__ = ["add_index_parser", "describe_index"]

SKIPPING_DIRECTORY = "_skipping"
"""Where a table keeps its skipping store (files xskipper and Spark can read)."""


def _table(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise ConfigError(f"{text!r} does not exist (no such file or directory).")
    if not (path / "_txn").is_file():
        raise ConfigError(f"{text!r} is not a table (a directory holding _txn).")
    return path


def _kinds(kinds: list[Any]) -> str:
    parts = []
    for kind in kinds:
        if isinstance(kind, list | tuple) and len(kind) == 2 and isinstance(kind[1], dict):
            params = ":".join(f"{k}={v}" for k, v in sorted(kind[1].items()))
            parts.append(f"{kind[0]}:{params}" if params else str(kind[0]))
        else:
            parts.append(str(kind))
    return ",".join(parts)


def describe_index(path: Path) -> list[str]:
    """Returns: lines describing the table's skipping configuration and store (newest
    ``_txn``): each column's kinds (``COLUMN=KIND:PARAM=V,...``, the form ``index build``
    takes), the segments the store holds of those listed, and the store's files."""
    snapshot = streamwrite.read_snapshot(path)
    record = snapshot.record
    value = None if record is None else record.skipping
    lines = [f"table {path} (_txn version {snapshot.version})"]
    if not value:
        return [*lines, "no skipping configuration (streamwrite index build TABLE COLUMN=KINDS)"]
    config = value.get("config") or {}
    lines.append("configuration:")
    lines += [f"  {column}={_kinds(list(kinds))}" for column, kinds in sorted(config.items())]
    store = value.get("store") or {}
    held = store.get("segments") if isinstance(store, dict) else None
    listed = {name: size for name, size in snapshot.files}
    if isinstance(held, dict):
        current = sum(
            1
            for name, entry in held.items()
            if name in listed
            and isinstance(entry, list | tuple)
            and len(entry) > 1
            and entry[1] == listed[name]  # the store's [..., committed size, ...] entry
        )
        lines.append(
            f"store: {current} of the {len(listed)} listed segments indexed at their "
            "committed size (the others are pruned by their own footers)"
        )
    directory = path / SKIPPING_DIRECTORY
    files = [p for p in directory.rglob("*") if p.is_file()] if directory.is_dir() else []
    total = sum(p.stat().st_size for p in files)
    lines.append(f"store files: {len(files)} under {directory}, {total:,} bytes")
    return lines


def _build(args: argparse.Namespace) -> int:
    path = _table(args.table)
    given = args.skipping is not None or args.items
    config = parse_skipping(args.skipping, args.items) if given else None
    args.interrupted = "interrupted: the table's _txn names the store it had, or the new one"
    record = streamwrite.build_index(path, config, lock_timeout=args.lock_timeout)
    print(f"built the skipping store of {args.table} (_txn version {record.version})")
    for line in describe_index(path)[1:]:
        print(line)
    return 0


def _show(args: argparse.Namespace) -> int:
    path = _table(args.table)
    if args.json:
        record = streamwrite.read_snapshot(path).record
        print(json.dumps(None if record is None else record.skipping, indent=2, sort_keys=True))
        return 0
    for line in describe_index(path):
        print(line)
    return 0


def _drop(args: argparse.Namespace) -> int:
    path = _table(args.table)
    args.interrupted = "interrupted: the table has its store, or none"
    record = streamwrite.drop_index(path, lock_timeout=args.lock_timeout)
    print(f"dropped the skipping configuration and store of {args.table} (_txn version "
          f"{record.version})")  # fmt: skip
    return 0


def add_index_parser(sub: Any, parents: list[argparse.ArgumentParser], epilog: str) -> None:
    """Add ``index build|show|drop`` to the command line's subparsers."""
    raw = argparse.RawDescriptionHelpFormatter
    text = "a table's data-skipping configuration and store: build, show, drop"
    index = sub.add_parser("index", help=text, description=text, epilog=epilog, formatter_class=raw)
    actions = index.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="(re)build the skipping store (takes the table's lock)",
        description=__doc__,
        formatter_class=raw,
        parents=parents,
    )
    build.add_argument("table", help="a table directory (holding _txn)")
    build.add_argument(
        "items",
        nargs="*",
        metavar="COLUMN=KINDS",
        help="e.g. symbol=valuelist,bloom order_id=bloom:fpp=0.001 (none: the table's own)",
    )
    build.add_argument("--skipping", help='JSON, e.g. \'{"symbol": ["valuelist", "bloom"]}\'')
    show = actions.add_parser("show", help="the configuration and the store", parents=parents)
    show.add_argument("table", help="a table directory (holding _txn)")
    show.add_argument("--json", action="store_true", help="print _txn's skipping JSON")
    drop = actions.add_parser(
        "drop", help="remove the configuration and the store", parents=parents
    )
    drop.add_argument("table", help="a table directory (holding _txn)")
    for action in (build, drop):
        action.add_argument(
            "--lock-timeout",
            type=float,
            default=0.0,
            help="seconds to wait for a writer of the table to close it (default 0)",
        )
    build.set_defaults(run=_build, command="index build")
    show.set_defaults(run=_show, command="index show")
    drop.set_defaults(run=_drop, command="index drop")
