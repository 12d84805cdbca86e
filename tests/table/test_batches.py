"""Batch ids never drop rows silently (issue 10, item 2), and default commits (item 4).

A replay of the last committed batch id is Spark's replay: a quiet skip. An id below it is not a
replay (a query restarted from a new checkpoint under the same app id starts again at 0):
``StaleBatchError`` unless ``on_stale="skip"``, which skips with a warning. Negative ids and ids
that are not integers are a ``ConfigError``.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

import streamwrite
from streamwrite.errors import ConfigError, StaleBatchError
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

BATCH = reference_table(300)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def test_an_id_below_the_last_committed_one_raises_and_writes_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            await table.append(BATCH, app_id="job", batch_id=7)
            with pytest.raises(StaleBatchError) as info:
                await table.append(BATCH.slice(0, 10), app_id="job", batch_id=3)
            assert (info.value.app_id, info.value.batch_id, info.value.last_batch_id) == (
                "job",
                3,
                7,
            )
            message = str(info.value)
            assert "'job'" in message and "3" in message and "7" in message
            assert isinstance(info.value, streamwrite.StreamwriteError)
            # The table stays usable, and the refused rows were not buffered.
            commit = await table.append(BATCH.slice(0, 5), app_id="job", batch_id=8)
            assert commit is not None and not commit.skipped and commit.num_rows == 5

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 305


def test_a_replay_of_the_last_id_stays_a_quiet_skip(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            await table.append(BATCH, app_id="job", batch_id=7)
            with caplog.at_level(logging.WARNING):
                again = await table.append(BATCH, app_id="job", batch_id=7)
            assert again is not None and again.skipped and again.num_rows == 0
            assert table.metrics.batches_skipped == 1
        # Across a reopen too (Spark replays after a restart).
        async with await open_table(tmp_path / "t") as table:
            again = await table.append(BATCH, app_id="job", batch_id=7)
            assert again is not None and again.skipped

    _run(scenario)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert streamwrite.read_table(tmp_path / "t").num_rows == 300


def test_on_stale_skip_opts_back_into_skipping_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            await table.append(BATCH, app_id="job", batch_id=7)
            with caplog.at_level(logging.WARNING, logger="streamwrite"):
                older = await table.append(BATCH, app_id="job", batch_id=2, on_stale="skip")
            assert older is not None and older.skipped
            with pytest.raises(ConfigError, match="on_stale"):
                await table.append(BATCH, app_id="job", batch_id=2, on_stale="ignore")

    _run(scenario)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "'job'" in warnings[0] and "2" in warnings[0]
    assert streamwrite.read_table(tmp_path / "t").num_rows == 300


@pytest.mark.parametrize("bad", [-1, -5, 1.5, "3", True])
def test_negative_or_non_integer_ids_are_config_errors(tmp_path: Path, bad: object) -> None:
    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            with pytest.raises(ConfigError, match="batch_id"):
                await table.append(BATCH, app_id="new-app", batch_id=bad)  # type: ignore[arg-type]
            assert table.metrics.batches_skipped == 0

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 0


def test_a_numpy_integer_id_is_accepted(tmp_path: Path) -> None:
    import numpy as np

    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            commit = await table.append(BATCH, app_id="job", batch_id=np.int64(4))
            assert commit is not None and not commit.skipped

    _run(scenario)


def test_default_settings_commit_appended_rows_within_about_a_second(tmp_path: Path) -> None:
    """Issue 10 item 4: with no commit option, rows become durable without flush()."""

    async def scenario() -> None:
        async with await open_table(tmp_path / "t", BATCH.schema) as table:
            for start in range(0, 300, 100):
                assert await table.append(BATCH.slice(start, 100)) is None
            with anyio.fail_after(10):  # ~1 s by the timer; generous for a loaded machine
                while streamwrite.read_table(tmp_path / "t").num_rows < 300:
                    await anyio.sleep(0.05)
            # The timer took every row (nothing is buffered for flush to commit); flush is a
            # barrier behind that commit, whose _txn readers may see before it is counted.
            assert table.metrics.rows_buffered == 0
            assert await table.flush() is None
            assert table.metrics.commits >= 1

    _run(scenario)


def test_a_bad_value_is_refused_at_append_and_the_table_goes_on(tmp_path: Path) -> None:
    """A null in a REQUIRED column is refused whole, before it is buffered (nothing is lost)."""
    import pyarrow as pa

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])

    async def scenario() -> None:
        async with await open_table(tmp_path / "t", schema) as table:
            await table.append(pa.table({"id": [1, 2]}, schema=schema))
            bad = pa.table({"id": pa.array([3, None], pa.int64())}, schema=schema)
            with pytest.raises(streamwrite.SchemaError, match="'id'"):
                await table.append(bad, app_id="a", batch_id=0)
            await table.append(pa.table({"id": [4]}, schema=schema), app_id="a", batch_id=0)

    _run(scenario)
    assert sorted(streamwrite.read_table(tmp_path / "t")["id"].to_pylist()) == [1, 2, 4]


def test_open_table_names_itself_for_a_misspelt_option_and_creates_nothing(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        with pytest.raises(TypeError, match=r"open_table\(\).*'compresion'.*'compression'"):
            await open_table(tmp_path / "t", BATCH.schema, compresion="zstd")
        with pytest.raises(ConfigError, match="BOOLEAN"):
            import pyarrow as pa

            await open_table(
                tmp_path / "t",
                pa.schema([("flag", pa.bool_())]),
                bloom_filter_options={"flag": True},
            )

    _run(scenario)
    assert not (tmp_path / "t").exists()
