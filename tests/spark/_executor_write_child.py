"""Child process of ``test_executor_write``: a Spark driver killed mid-batch, and third-party
readers of a table directory.

Usage:

- ``python _executor_write_child.py crash SOURCE STAGED_TABLE MOVED_TABLE``: a driver with its
  own light Spark session reads the Parquet files under ``SOURCE`` and, as
  ``streamwrite.spark.write`` does, opens each table, stages the rows on the executors
  (batch ``("crash", 0)``). For ``STAGED_TABLE`` it stops there and prints ``staged``; for
  ``MOVED_TABLE`` it also verifies and renames the staged segments into the table (the
  adoption's steps before the ``_txn`` publish) and prints ``moved``. Then it sleeps until
  SIGKILLed: a driver crash between staging and publish, in two places.
- ``python _executor_write_child.py read TABLE``: read ``TABLE`` with pyarrow
  (``ds.dataset(table, partitioning="hive")``) and DuckDB (``read_parquet('table/**/*.parquet')``)
  and print one JSON object: per engine ``[rows, sum of value, distinct values]``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

APP_ID = "crash"
BATCH_ID = 0


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


def crash(source: str, staged_table: str, moved_table: str) -> None:
    import anyio

    from streamwrite import open_table
    from streamwrite.spark import table_schema_for
    from streamwrite.spark.writing import _arrow_schema, stage_rows
    from streamwrite.table.staged import move_staged, verify_staged
    from tests.spark.conftest import build_session

    spark = build_session("streamwrite-crash-child")
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(source)
    schema = table_schema_for(_arrow_schema(df))
    options = {"timestamp": "ts", "partition_by": "day", "compaction_interval": None}

    async def main() -> None:
        staged_one = await open_table(staged_table, schema, **options)
        segments = stage_rows(df, staged_one.stage(APP_ID, BATCH_ID))
        assert segments
        say("staged")
        moved = await open_table(moved_table, schema, **options)
        batch = moved.stage(APP_ID, BATCH_ID)
        segments = stage_rows(df, batch)
        columns = tuple(c.name for c in moved.parquet_schema.columns)
        segments = verify_staged(Path(moved_table), segments, batch.directory, columns)
        moves = [(s, moved._machine.allocate_segment(s.partition)) for s in segments]
        move_staged(Path(moved_table), moves)
        say("moved")
        while True:
            time.sleep(1)

    anyio.run(main)


def read(table: str) -> None:
    import duckdb
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    values = ds.dataset(table, partitioning="hive").to_table().column("value")
    found = {
        "pyarrow": [len(values), pc.sum(values).as_py(), len(pc.unique(values))],
        "duckdb": list(
            duckdb.connect()
            .sql(
                f"SELECT count(*), sum(value), count(DISTINCT value) "
                f"FROM read_parquet('{table}/**/*.parquet')"
            )
            .fetchall()[0]
        ),
    }
    print(json.dumps(found))


if __name__ == "__main__":
    if sys.argv[1] == "crash":
        crash(*sys.argv[2:5])
    else:
        read(sys.argv[2])
