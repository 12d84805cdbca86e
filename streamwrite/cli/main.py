"""Command line: inspect, verify, recover and compact Parquet files, live files and tables.

``streamwrite inspect PATH [--json]``, ``streamwrite verify PATH``, ``streamwrite recover PATH
[--apply]``, ``streamwrite compact TABLE [--partition P] [--status]``, where PATH is a Parquet
file, a live file (a directory holding ``data.parquet`` + ``_pm``) or a table (a directory
holding ``_txn``). ``python -m streamwrite`` runs the same. The full usage with examples is
:data:`EPILOG` (``streamwrite --help``).

Nothing but ``recover --apply`` and ``compact`` (without ``--status``) changes a byte; those
two take the table's ``_lock``. A path that does not exist is an error (exit 2): no command
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
from streamwrite.cli import table as cli_table
from streamwrite.cli.keys import add_key_options, decryption_from_args
from streamwrite.cli.show import describe, print_compaction, print_file, print_live, print_table
from streamwrite.errors import ConfigError, StreamwriteError
from streamwrite.layout.actions import LiveFileName
from streamwrite.reader.file import ParquetFile

__all__ = ["EPILOG", "main"]

EXIT_OK, EXIT_PROBLEM, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

EPILOG = """\
PATH is a Parquet file, a live file (a directory holding data.parquet + _pm) or a
table (a directory holding _txn). Only `recover --apply` and `compact` write. Long
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


def _progress(args: argparse.Namespace) -> cli_table.Progress[Any]:
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


def _is_live(path: Path) -> bool:
    return path.is_dir() and (path / LiveFileName.DATA.value).is_file()


def _not_readable_dir(path: Path) -> ConfigError:
    from streamwrite.reader.directory import DirectoryKind, classify_directory

    kind = classify_directory(path)  # raises a ConfigError saying what it is not
    if kind is DirectoryKind.LIVE:  # no data.parquet: a table's partition
        return ConfigError(
            f"{str(path)!r} is a partition of a table (or a live file without data.parquet): "
            "give the table's directory or one of its segments."
        )
    return ConfigError(
        f"{str(path)!r} is a {kind.value}, not a Parquet file, a live file or a table: "
        "give one of its files."
    )


def _inspect(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    decryption = decryption_from_args(args)
    args.interrupted = "interrupted: nothing was changed"
    if path.is_dir() and cli_table.is_table(path):
        info = cli_table.describe_table(path, decryption, _progress(args))
        if args.json:
            print(json.dumps(info, indent=2))
        else:
            print_table(info)
        return EXIT_OK
    if path.is_dir() and not _is_live(path):
        raise _not_readable_dir(path)
    live = None
    if path.is_dir():
        from streamwrite.live.info import describe_live

        live = describe_live(path, decryption)
    with ParquetFile(path, decryption=decryption) as pf:  # a live directory: its newest commit
        info = describe(pf)
    if live is not None:
        info = {"live": live, **info}
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    if live is not None:
        print_live(live)
    print_file(info)
    return EXIT_OK


def _verify_one(
    source: Path, size: int | None, args: argparse.Namespace, progress: bool
) -> tuple[int, int, list[str]]:
    from streamwrite.reader.verify import verify_file

    report = verify_file(
        source,
        decryption=args.decryption,
        snapshot=size,
        progress=_progress(args) if progress else None,
    )
    return report.num_row_groups, report.num_pages, report.problems


def _torn_tail(path: Path) -> list[str]:
    """The live file's bytes past its last commit, as a problem."""
    from streamwrite.reader.tail import committed_size

    committed = committed_size(path)
    size = (path / LiveFileName.DATA.value).stat().st_size
    if size <= committed:
        return []
    return [
        f"data.parquet holds {size - committed} bytes past its last commit (at byte "
        f"{committed}): a writer is appending, or a crash left a torn tail; other readers "
        f"cannot open the bare file until it is cut. Run: streamwrite recover {path} --apply"
    ]


def _verify(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    args.decryption = decryption_from_args(args)
    args.interrupted = "interrupted: nothing was changed (verification incomplete)"
    notes: list[str] = []
    if path.is_dir() and cli_table.is_table(path):
        verify = lambda d, s: _verify_one(d, s, args, progress=False)  # noqa: E731
        row_groups, pages, problems, notes = cli_table.verify_table(path, verify, _progress(args))
    elif path.is_dir() and not _is_live(path):
        raise _not_readable_dir(path)
    else:
        row_groups, pages, problems = _verify_one(path, None, args, progress=True)
        if path.is_dir():
            problems = _torn_tail(path) + problems
    for note in notes:
        print(f"NOTE {note}")
    for problem in problems:
        print(f"PROBLEM {problem}")
    status = "OK" if not problems else "FAILED"
    print(f"{status}: {row_groups} row groups, {pages} pages checked, {len(problems)} problems")
    return EXIT_OK if not problems else EXIT_PROBLEM


def _recover(args: argparse.Namespace) -> int:
    path = _existing(args.path)
    args.interrupted = (
        "interrupted: recovery may be half done; run it again (it is idempotent)"
        if args.apply
        else "interrupted: nothing was changed"
    )
    if path.is_dir() and cli_table.is_table(path):
        return _recover_table(path, args)
    if not _is_live(path):
        raise ConfigError(
            f"{args.path!r} is not a live file (a directory holding data.parquet and _pm) "
            "or a table (a directory holding _txn)."
        )
    from streamwrite.live.file import recover

    plan = recover(path, apply=args.apply, decryption=decryption_from_args(args))
    verb = "did" if args.apply else "would do (run with --apply to do it)"
    print(f"recovery of {args.path} {verb}:")
    for line in plan.describe():
        print(f"  {line}")
    return EXIT_OK


def _recover_table(path: Path, args: argparse.Namespace) -> int:
    """A table recovers when it is opened: each segment is rolled back to its ``_txn`` size,
    unpublished segments are deleted (``open_table``)."""
    record = cli_table.read_record(path)
    tails = []
    for name, size in record.files():
        data = path.joinpath(*name.split("/")) / LiveFileName.DATA.value
        if data.is_file() and data.stat().st_size > size:
            tails.append(f"{name}: cut {data.stat().st_size - size} bytes past _txn's {size}")
    if not args.apply:
        print(f"recovery of {args.path} would do (run with --apply to do it):")
        for line in tails or ["nothing past the committed sizes _txn lists"]:
            print(f"  {line}")
        print("  delete segment directories _txn neither lists nor retires")
        return EXIT_OK
    from streamwrite.table.api import open_table

    async def run() -> None:
        table = await open_table(path, compaction_interval=None)
        await table.close()

    run_interruptible(run)
    print(f"recovery of {args.path} did:")
    for line in tails or ["nothing past the committed sizes _txn lists"]:
        print(f"  {line}")
    return EXIT_OK


def _policy(args: argparse.Namespace) -> Any:
    from streamwrite.compaction.policy import CompactionPolicy

    options: dict[str, Any] = {"sort_by_timestamp": args.sort}
    if args.target_rows is not None:
        options["target_row_group_rows"] = args.target_rows
    if args.grace is not None:
        options["grace_seconds"] = args.grace
    return CompactionPolicy(**options)


def _compact(args: argparse.Namespace) -> int:
    path = _existing(args.table)
    if not (path.is_dir() and cli_table.is_table(path)):
        raise ConfigError(f"{args.table!r} is not a table (a directory holding _txn).")
    policy = _policy(args)
    args.interrupted = "interrupted: nothing was changed"
    if args.status:
        from streamwrite.options import DEFAULT_ROW_GROUP_SIZE

        target = policy.target_row_group_rows or DEFAULT_ROW_GROUP_SIZE
        statuses, notes = cli_table.table_compaction_status(
            path, policy, target, decryption_from_args(args), args.partition, _progress(args)
        )
        if args.json:
            print(json.dumps([asdict(s) for s in statuses], indent=2))
        else:
            print_compaction(statuses, notes)
        return EXIT_OK
    return _compact_run(path, policy, args)


def _compact_run(path: Path, policy: Any, args: argparse.Namespace) -> int:

    from streamwrite.table.api import open_table

    published = 0
    args.interrupted = "compaction cancelled; the table is unchanged"
    bar: Any = None
    if _terminal(args):
        from tqdm import tqdm

        total = 1 if args.partition else len(cli_table.read_record(path).partitions)
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
        table = await open_table(path, compaction=policy, compaction_interval=None)
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
