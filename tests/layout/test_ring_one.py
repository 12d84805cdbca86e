"""Ring 1 is pure: importing any module of ``format/`` or ``layout/`` loads no third-party
array, Arrow, async, crypto or storage library, no kernel (``workers``), and nothing of
streamwrite outside ring 1 (DESIGN section 2). Each import runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BANNED = frozenset({"pyarrow", "numpy", "anyio", "cryptography", "fsspec", "workers"})
RING_ONE = ("streamwrite.format", "streamwrite.layout")
ALLOWED = ("streamwrite", "streamwrite.lazy", "streamwrite.errors", "streamwrite.options")
"""Loaded with ring 1: the package itself (its lazy export hooks) and the ranks below format."""
NAMED = (  # the modules issue 11 names; the glob below must keep finding them
    "streamwrite.layout.recovery",
    "streamwrite.layout.appender",
    "streamwrite.layout.file_writer",
    "streamwrite.format.txn",
)


def _ring_one_modules() -> list[str]:
    names = []
    for package in RING_ONE:
        base = ROOT.joinpath(*package.split("."))
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


MODULES = _ring_one_modules()


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(out.stdout.split())


def test_the_named_modules_are_among_those_checked() -> None:
    assert set(NAMED) <= set(MODULES)
    assert len(MODULES) > 20  # format/, format/thrift/, format/sidecar/, layout/


@pytest.mark.parametrize("module", MODULES)
def test_importing_a_ring_one_module_loads_only_ring_one(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert module in loaded
    assert sorted(name for name in loaded if name.split(".")[0] in BANNED) == []
    outside = sorted(
        name
        for name in loaded
        if name.split(".")[0] == "streamwrite"
        and name not in ALLOWED
        and not name.startswith(tuple(f"{p}." for p in RING_ONE))
        and name not in RING_ONE
    )
    assert outside == []


def test_recovery_loads_no_pyarrow_as_the_issue_states() -> None:
    # the issue's must-show command, verbatim
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import streamwrite.layout.recovery, sys; assert 'pyarrow' not in sys.modules",
        ],
        check=True,
        cwd=ROOT,
    )


# -- partitioning: the names and the option checks are ring 1, the rows are Arrow's ---------

SCHEMA = [("ts", "timestamp[us]"), ("n", "int64"), ("_t", "timestamp[ms]"), ("_k", "int64")]
CASES = [
    # (timestamp, partition_by, extra columns, expected ConfigError message pattern or None)
    ("ts", "day", [], None),
    ("ts", None, [], None),
    (None, None, [], None),
    ("ts", "week", [], r"partition_by must be one of \['day', 'hour', 'month'\] or None"),
    (None, "day", [], "partition_by needs a designated timestamp column"),
    ("nope", "day", [], r"'nope' is not a column of \['ts', 'n', '_t', '_k'"),
    ("n", "day", [], "'n' has type int64, not a timestamp"),
    ("_k", "day", [], "'_k' has type int64, not a timestamp"),  # type before directory name
    ("_t", "day", [], "letters, digits"),
    ("_t", None, [], None),  # unpartitioned: any timestamp name
    ("ts", "day", [("TS_DAY", "string")], "'TS_DAY' has the name of the partition column"),
    ("ts", "hour", [("ts_day", "string")], None),
    (None, None, [("SW_partition", "int32")], "'SW_partition' has the name of the partition"),
    ("ts", None, [("sw_partition", "int32")], "keep the table unpartitioned"),
]


@pytest.mark.parametrize(("timestamp", "partition_by", "extra", "error"), CASES)
def test_partitioning_checks_decide_from_names_alone_as_the_arrow_check_does(
    timestamp: str | None, partition_by: str | None, extra: list[tuple[str, str]], error: str | None
) -> None:
    import pyarrow as pa

    from streamwrite.arrow.partitioning import check_timestamp_field
    from streamwrite.errors import ConfigError
    from streamwrite.layout.partitioning import check_partitioning

    columns = [*SCHEMA, *extra]
    names = [name for name, _ in columns]
    kinds = dict(columns)
    wrong_type = (
        kinds[timestamp]
        if timestamp in kinds and not kinds[timestamp].startswith("timestamp")
        else None
    )
    schema = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in columns])
    if error is None:
        check_partitioning(names, timestamp, partition_by, wrong_type)
        check_timestamp_field(schema, timestamp, partition_by)
        return
    with pytest.raises(ConfigError, match=error) as pure:
        check_partitioning(names, timestamp, partition_by, wrong_type)
    with pytest.raises(ConfigError) as arrow:
        check_timestamp_field(schema, timestamp, partition_by)
    assert str(arrow.value) == str(pure.value)


def test_partition_names_are_built_without_arrow() -> None:
    from streamwrite.layout.partitioning import partition_column, partition_name

    assert partition_column("ts", "day") == "ts_day"
    assert partition_name("ts", "day", "2026-11-22") == "ts_day=2026-11-22"
    assert partition_name(None, None, "anything") == "sw_partition=all"
    assert partition_name("ts", None, "anything") == "sw_partition=all"
