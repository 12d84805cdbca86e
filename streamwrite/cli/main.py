"""Command line: inspect, verify, recover and compact Parquet files, live files and tables.

``streamwrite inspect PATH [--json]``, ``streamwrite verify PATH``, ``streamwrite recover PATH
[--apply]``, ``streamwrite compact TABLE [--partition P] [--status]``, ``streamwrite tier TABLE
--cold-storage URL``, where PATH is a Parquet
file, a live file (a directory holding ``data.parquet`` + ``_pm``) or a table (a directory
holding ``_txn``). ``python -m streamwrite`` runs the same. The full usage with examples is
:data:`EPILOG` (``streamwrite --help``).

Nothing but ``recover --apply``, ``compact`` (without ``--status``) and ``tier`` changes a
byte; those take the table's ``_lock``. A path that does not exist is an error (exit 2): no command
creates a directory or a ``_lock`` file. Long work shows progress (tqdm) on stderr when both
stdout and stderr are terminals, unless ``--quiet``. Ctrl-C prints one line saying what was
done and exits 130.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import streamwrite
from streamwrite import inspect
from streamwrite.cli.index import add_index_parser
from streamwrite.cli.keys import add_key_options, decryption_from_args
from streamwrite.cli.scan import add_scan_parser
from streamwrite.cli.show import (
    compaction_json,
    file_json,
    live_json,
    print_compaction,
    print_file,
    print_live,
    print_table,
    table_json,
)
from streamwrite.errors import ConfigError, StreamwriteError

__all__ = ["EPILOG", "main"]

EXIT_OK, EXIT_PROBLEM, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

EPILOG = """\
PATH is a Parquet file, a live file (a directory holding data.parquet + _pm) or a
table (a directory holding _txn). Only `recover --apply`, `compact` and `tier` write. Long
work shows progress on stderr when stdout and stderr are terminals (-q/--quiet: none).

examples:
  streamwrite inspect trades.parquet             footer, schema, row groups, typed statistics
  streamwrite inspect ticks/ --json              a table: _txn version, partitions, segments,
                                                 dead bytes, retired segments, writer pid
  streamwrite verify ticks/                      check every page of every committed segment
  streamwrite verify live/                       ... and report a torn tail past the last commit
  streamwrite recover live/                      say what recovery would do
  streamwrite recover live/ --apply              cut a torn tail, rebuild _pm
  streamwrite compact ticks/ --status            the compaction decision (read-only, works while
                                                 a writer holds the table)
  streamwrite compact ticks/ --partition 'ts_day=2026-11-22' --target-rows 100000
  streamwrite tier ticks/ --cold-storage s3://bucket/ticks --cold-after 3600 \\
      --storage-options '{"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}}'
                                                 move settled segments to cold storage
  streamwrite scan ticks/ --filter "symbol = 'AAPL' and ts >= timestamp '2026-11-22 10:00Z'"
                                                 matching rows (--columns, --format csv|json,
                                                 --limit N; the grammar: scan --help)
  streamwrite scan ticks/ --filter "order_id = 'a1'" --explain
                                                 what each level skips, and why; bytes read
  streamwrite index build ticks/ symbol=valuelist,bloom price=minmax
                                                 build the skipping store (show, drop)
  streamwrite inspect enc.parquet --footer-key 00112233445566778899aabbccddeeff
  STREAMWRITE_KEYS='{"footer": "00..ff"}' streamwrite verify enc.parquet

exit status:
  0    success (verify: no problem found)
  1    verify found a problem (damage, or bytes past the last commit: run recover --apply)
  2    bad arguments, a path that does not exist or is not what the command needs, a file
       that cannot be read, a table held by another writer (compact, recover --apply)
  130  interrupted (Ctrl-C); the line printed says what was done
"""

_T = TypeVar("_T")


def _terminal(args: argparse.Namespace) -> bool:
    """Progress is shown: stdout and stderr are both terminals and no ``--quiet``."""
    return not args.quiet and sys.stderr.isatty() and sys.stdout.isatty()


def _progress(args: argparse.Namespace) -> inspect.Progress[Any]:
    """A tqdm wrapper on a terminal (:func:`_terminal`), else none."""
    enabled = _terminal(args)

    def wrap(items: Iterable[_T], total: int, desc: str) -> Iterator[_T]:
        if not enabled:
            return iter(items)
        from tqdm import tqdm  # type: ignore[import-untyped]

        bar = tqdm(items, total=total, desc=desc, unit=f" {desc}", file=sys.stderr)
        _BARS.append(bar)
        return iter(bar)

    return wrap


_BARS: list[Any] = []
"""Progress bars shown so far: closed before the Ctrl-C line, so that it comes last."""


def _close_bars() -> None:
    while _BARS:
        _BARS.pop().close()


def run_interruptible(work: Callable[[], Awaitable[_T]]) -> _T:
    """Run ``work`` in an event loop where Ctrl-C cancels it through anyio (shielded cleanup,
    such as deleting an unpublished segment, completes), then raises KeyboardInterrupt.

    A second Ctrl-C during that cleanup interrupts it at once.
    """
    import anyio

    interrupted = False

    async def main() -> list[_T]:
        nonlocal interrupted
        result: list[_T] = []
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _ in signals:
                        interrupted = True
                        group.cancel_scope.cancel()
                        return

            group.start_soon(watch)
            result.append(await work())
            group.cancel_scope.cancel()
        return result

    try:
        result = anyio.run(main)
    except BaseExceptionGroup as group:  # the task group wraps what ``work`` raised
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        raise error from None
    if interrupted or not result:
        raise KeyboardInterrupt
    return result[0]


def _existing(text: str) -> Path:
    """The path, which must exist (a mistyped path creates nothing)."""
    path = Path(text)
    if not path.exists():
        raise ConfigError(f"{text!r} does not exist (no such file or directory).")
    return path


def _readable_kind(path: Path) -> inspect.PathKind:
    """What ``path`` is: a Parquet file, a live file or a table (else a ConfigError)."""
    kind = inspect.path_kind(path)  # raises a ConfigError saying what a directory is not
    if kind is inspect.PathKind.PARTITION:
        raise ConfigError(
            f"{str(path)!r} is a partition of a table (or a live file without data.parquet): "
            "give the table's directory or one of its segments."
        )
    if kind is inspect.PathKind.DIRECTORY:
        raise ConfigError(
            f"{str(path)!r} is a {kind.value}, not a Parquet file, a live file or a table: "
            "give one of its files."
        )
    return kind


def _kind(path: Path) -> inspect.PathKind | None:
    """What ``path`` is, or None when it is a directory of no known kind."""
    try:
        return inspect.path_kind(path)
    except ConfigError:
        return None


def _inspect(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    decryption = decryption_from_args(args)
    args.interrupted = "interrupted: nothing was changed"
    kind = _readable_kind(path)
    if kind is inspect.PathKind.TABLE:
        table = table_json(inspect.describe_table(path, decryption, _progress(args)))
        if args.json:
            print(json.dumps(table, indent=2))
        else:
            print_table(table)
        return EXIT_OK
    live = None
    if kind is inspect.PathKind.LIVE_FILE:
        live = live_json(inspect.describe_live_file(path, decryption))
    info = file_json(inspect.describe_file(path, decryption=decryption))  # a live file: newest
    if live is not None:
        info = {"live": live, **info}
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    if live is not None:
        print_live(live)
    print_file(info)
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    decryption = decryption_from_args(args)
    args.interrupted = "interrupted: nothing was changed (verification incomplete)"
    if _readable_kind(path) is inspect.PathKind.TABLE:
        report = inspect.verify_table(path, decryption, _progress(args))
    else:  # a live file: also the bytes past its last commit
        report = inspect.verify_file(path, decryption=decryption, progress=_progress(args))
    for note in report.notes:
        print(f"NOTE {note}")
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    status = "OK" if report.ok else "FAILED"
    print(
        f"{status}: {report.num_row_groups} row groups, {report.num_pages} pages checked, "
        f"{len(report.problems)} problems"
    )
    return EXIT_OK if report.ok else EXIT_PROBLEM


def _recover(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    args.interrupted = (
        "interrupted: recovery may be half done; run it again (it is idempotent)"
        if args.apply
        else "interrupted: nothing was changed"
    )
    kind = _kind(path)
    if kind is inspect.PathKind.TABLE:
        return _recover_table(path, args)
    if kind is not inspect.PathKind.LIVE_FILE:
        raise ConfigError(
            f"{args.path!r} is not a live file (a directory holding data.parquet and _pm) "
            "or a table (a directory holding _txn)."
        )
    recovery = inspect.recover_live_file(
        path, apply=args.apply, decryption=decryption_from_args(args)
    )
    verb = "did" if args.apply else "would do (run with --apply to do it)"
    print(f"recovery of {args.path} {verb}:")
    for line in recovery.description:
        print(f"  {line}")
    return EXIT_OK


def _recover_table(path: Path, args: argparse.Namespace) -> int:
    """A table recovers when it is opened: each segment is rolled back to its ``_txn`` size,
    unpublished segments are deleted (``open_table``)."""
    record = inspect.read_table_record(path)
    tails = [
        f"{s.path}: cut {s.uncommitted_bytes} bytes past _txn's {s.committed_size}"
        for s in record.segments
        if (s.uncommitted_bytes or 0) > 0
    ]
    if not args.apply:
        print(f"recovery of {args.path} would do (run with --apply to do it):")
        for line in tails or ["nothing past the committed sizes _txn lists"]:
            print(f"  {line}")
        print("  delete segment directories _txn neither lists nor retires")
        return EXIT_OK

    async def run() -> None:
        table = await streamwrite.open_table(path, compaction_interval=None)
        await table.close()

    run_interruptible(run)
    print(f"recovery of {args.path} did:")
    for line in tails or ["nothing past the committed sizes _txn lists"]:
        print(f"  {line}")
    return EXIT_OK


def _policy(args: argparse.Namespace) -> streamwrite.CompactionPolicy:
    options: dict[str, Any] = {"sort_by_timestamp": args.sort}
    if args.target_rows is not None:
        options["target_row_group_rows"] = args.target_rows
    if args.grace is not None:
        options["grace_seconds"] = args.grace
    return streamwrite.CompactionPolicy(**options)


def _compact(args: argparse.Namespace) -> int:
    path = _existing(args.table)
    if _kind(path) is not inspect.PathKind.TABLE:
        raise ConfigError(f"{args.table!r} is not a table (a directory holding _txn).")
    policy = _policy(args)
    args.interrupted = "interrupted: nothing was changed"
    if args.status:
        status = inspect.compaction_status(
            path,
            policy,
            decryption=decryption_from_args(args),
            partition=args.partition,
            progress=_progress(args),
        )
        if args.json:
            print(json.dumps(compaction_json(status), indent=2))
        else:
            print_compaction(status)
        return EXIT_OK
    return _compact_run(path, policy, args)


def _compact_run(path: Path, policy: streamwrite.CompactionPolicy, args: argparse.Namespace) -> int:
    published = 0
    args.interrupted = "compaction cancelled; the table is unchanged"
    bar: Any = None
    if _terminal(args):
        from tqdm import tqdm

        total = 1 if args.partition else len(inspect.read_table_record(path).partitions)
        bar = tqdm(total=total, desc="compact", unit="partition", file=sys.stderr)
        _BARS.append(bar)

    def step(name: str) -> None:
        nonlocal published
        if name == "sweep":  # one partition's swap is published
            published += 1
            args.interrupted = (
                f"compaction cancelled after {published} partition(s) were compacted and "
                "published; the rest of the table is unchanged"
            )
        if bar is not None:
            bar.set_postfix_str(name)

    async def run() -> list[Any]:
        table = await streamwrite.open_table(path, compaction=policy, compaction_interval=None)
        try:
            results: list[Any] = await table.compact(args.partition, hook=step)
            return results
        finally:
            await table.close()

    try:
        outcome = run_interruptible(run)
        if bar is not None:
            bar.update(bar.total - bar.n)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps([asdict(item) for item in outcome], indent=2))
        return EXIT_OK
    if not outcome:
        print(f"{args.table}: nothing to compact")
    for result in outcome:
        print(
            f"{result.partition}: {len(result.merged)} segment(s), {result.bytes_before:,} bytes "
            f"-> {result.segment.name}, {result.segment.size:,} bytes; {result.num_rows:,} rows; "
            f"{result.raw_row_groups} row groups copied raw, {result.reencoded_row_groups} "
            f"re-encoded; {result.seconds:.2f} s"
        )
    if outcome and policy.grace_seconds > 0:
        print(
            f"replaced segments stay {policy.grace_seconds:g} s for readers of other processes; "
            "a later compact or open of the table deletes them"
        )
    return EXIT_OK


def _tier(args: argparse.Namespace) -> int:
    path = _existing(args.table)
    if _kind(path) is not inspect.PathKind.TABLE:
        raise ConfigError(f"{args.table!r} is not a table (a directory holding _txn).")
    try:
        options = None if args.storage_options is None else json.loads(args.storage_options)
    except ValueError as exc:
        raise ConfigError(f"--storage-options is not JSON: {exc}.") from exc
    args.interrupted = "tiering cancelled; every segment moved so far is published"

    async def run() -> list[str]:
        table = await streamwrite.open_table(
            path,
            compaction_interval=None,
            cold_storage=args.cold_storage,
            storage_options=options,
            cold_after=args.cold_after,
        )
        try:
            return await table.tier()
        finally:
            await table.close()

    moved = run_interruptible(run)
    if args.json:
        print(json.dumps(moved))
    else:
        for name in moved or [f"{args.table}: nothing to tier"]:
            print(name)
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from streamwrite import daemon

    overrides = list(args.set)
    for flag, key in (
        ("data_root", "data_root"),
        ("http_listen", "http.listen"),
        ("flight_listen", "flight.listen"),
    ):
        value = getattr(args, flag)
        if value is not None:
            overrides.append(f"{key}={json.dumps(value)}")
    config = daemon.load_config(args.config, overrides=overrides)
    try:
        run = daemon.run
    except ImportError as exc:  # aiohttp / prometheus-client: the daemon extra
        raise ConfigError(
            f"streamwrite serve needs the daemon extra ({exc.name} is missing): "
            "pip install 'streamwrite[daemon]'."
        ) from exc
    run(config)
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="streamwrite",
        description=(__doc__ or "").splitlines()[0],
        epilog=EPILOG,
        formatter_class=raw,
    )
    parser.add_argument(
        "--version", action="version", version=f"streamwrite {streamwrite.__version__}"
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = (
        ("inspect", "footer, schema, row groups, typed statistics; a table's segments"),
        ("verify", "check every page, CRC, statistic, page index and bloom filter"),
        ("recover", "report (and with --apply do) recovery of a live file or table"),
        ("compact", "merge a table's small segments (takes the table's lock; --status does not)"),
        ("tier", "move a table's settled segments to its cold storage (takes its lock)"),
        ("serve", "run the ingest daemon: ILP over HTTP and Arrow Flight into tables"),
    )
    made = {
        name: sub.add_parser(
            name, help=text, description=text, epilog=EPILOG, formatter_class=raw, parents=[common]
        )
        for name, text in commands
    }
    made["inspect"].add_argument("path", help="a Parquet file, live file or table")
    made["inspect"].add_argument("--json", action="store_true", help="print JSON")
    made["verify"].add_argument("path", help="a Parquet file, live file or table")
    made["recover"].add_argument("path", help="a live file (data.parquet + _pm) or a table")
    made["recover"].add_argument("--apply", action="store_true", help="cut torn tails, rebuild _pm")
    compact = made["compact"]
    compact.add_argument("table", help="a table directory (holding _txn)")
    compact.add_argument("--partition", help="only this partition (a key of _txn)")
    compact.add_argument("--status", action="store_true", help="only show the decision (read-only)")
    compact.add_argument("--sort", action="store_true", help="sort merged rows by timestamp")
    compact.add_argument("--target-rows", type=int, help="rows per merged row group")
    compact.add_argument("--grace", type=float, help="seconds old segments stay for readers")
    compact.add_argument("--json", action="store_true", help="print JSON")
    tier = made["tier"]
    tier.add_argument("table", help="a table directory (holding _txn)")
    tier.add_argument("--cold-storage", required=True, help="the cold root URL (s3://b/prefix)")
    tier.add_argument("--storage-options", help="fsspec keyword arguments, as JSON")
    tier.add_argument("--cold-after", type=float, default=0.0, help="seconds since last write")
    tier.add_argument("--json", action="store_true", help="print JSON")
    tier.set_defaults(run=_tier)
    serve = made["serve"]
    serve.add_argument("--config", help="the daemon's TOML file (streamwrite.daemon.config)")
    serve.add_argument("--data-root", help="the directory of the tables (data_root)")
    serve.add_argument("--http-listen", help="host:port of ILP over HTTP (http.listen)")
    serve.add_argument("--flight-listen", help="host:port of Arrow Flight (flight.listen)")
    serve.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="any other setting (a TOML value); flags win over the file and STREAMWRITE_*",
    )  # fmt: skip
    serve.set_defaults(run=_serve)
    add_scan_parser(sub, [common], EPILOG)
    add_index_parser(sub, [common], EPILOG)
    for name in ("inspect", "verify", "recover", "compact"):
        add_key_options(made[name])
    made["inspect"].set_defaults(run=_inspect)
    made["verify"].set_defaults(run=_verify)
    made["recover"].set_defaults(run=_recover)
    compact.set_defaults(run=_compact)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Returns:
        The exit status: 0 success, 1 ``verify`` found a problem, 2 an error, 130 Ctrl-C.
    """
    args = argparse.Namespace(interrupted="interrupted: nothing was changed", command=None)
    try:
        args = _parser().parse_args(argv)
        args.interrupted = "interrupted: nothing was changed"
        status: int = args.run(args)
    except KeyboardInterrupt:
        _close_bars()
        print(f"streamwrite {args.command}: {args.interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (StreamwriteError, OSError) as exc:
        print(f"streamwrite {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return status


if __name__ == "__main__":
    sys.exit(main())
