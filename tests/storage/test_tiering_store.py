"""What tiering needs of ``ObjectStore`` beyond its own tests: a store that listed a root
sees objects another process (or store) put there afterwards (recovery lists the root, then
reads the newest ``_txn_log`` object; a crash child put it)."""

from __future__ import annotations

from typing import Any

from streamwrite.io.remote import open_store


def test_objects_put_after_a_listing_are_listed_and_read(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    url = f"s3://{bucket}/t"
    reader = open_store(url, storage_options)
    writer = open_store(url, storage_options)
    writer.put_if_absent("_txn_log/00000000000000000001.json", b"one")
    writer.put_if_absent("p/seg-000000/data.parquet", b"data")
    assert reader.list("") == ["_txn_log/00000000000000000001.json", "p/seg-000000/data.parquet"]
    writer.put_if_absent("_txn_log/00000000000000000002.json", b"two")
    assert reader.list("") == [
        "_txn_log/00000000000000000001.json",
        "_txn_log/00000000000000000002.json",
        "p/seg-000000/data.parquet",
    ]
    assert reader.read_all("_txn_log/00000000000000000002.json") == b"two"
    writer.put_if_absent("_txn_log/00000000000000000003.json", b"three")
    assert reader.list("_txn_log")[-1] == "_txn_log/00000000000000000003.json"
    assert reader.read_all("_txn_log/00000000000000000003.json") == b"three"
    assert reader.size("_txn_log/00000000000000000003.json") == 5
    writer.delete(["_txn_log/00000000000000000001.json"])
    assert reader.list("_txn_log")[0] == "_txn_log/00000000000000000002.json"
