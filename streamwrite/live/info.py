"""Read-only views of a live-file directory: its committed versions and the ``inspect`` summary.

Nothing here takes the writer's lock or changes a byte; the committed sizes come from ``_pm``
(never from the filesystem), so it is safe to run while a writer appends.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.live_keys import LiveKeys
from streamwrite.errors import StreamwriteError
from streamwrite.format.sidecar.codec import read_row_group_block, read_sidecar
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.appender import Commit
from streamwrite.layout.recovery import parse_footer_at

__all__ = ["describe_live", "snapshots_from_sidecar"]


def snapshots_from_sidecar(pm_data: bytes) -> list[Commit]:
    """Every committed version in a ``_pm`` file's footer chain, oldest first.

    Returns:
        One :class:`~streamwrite.Commit` per version, equal to the one its append returned.

    Raises:
        CorruptFileError: the ``_pm`` bytes are damaged.
    """
    sidecar = read_sidecar(pm_data)
    rows_by_block: dict[int, int] = {}
    result = []
    for seq, (_, footer) in enumerate(reversed(sidecar.footers)):
        num_rows = 0
        for offset in footer.row_group_offsets:
            if offset not in rows_by_block:
                block = read_row_group_block(pm_data, offset, sidecar.header)
                rows_by_block[offset] = block.num_rows
            num_rows += rows_by_block[offset]
        result.append(
            Commit(
                seq,
                footer.parquet_file_size,
                num_rows,
                len(footer.row_group_offsets),
                footer.parquet_footer_checksum,
            )
        )
    return result


def describe_live(directory: Path, decryption: DecryptionConfig | None = None) -> dict[str, Any]:
    """A JSON-ready summary: ``_pm`` header and footers, snapshots, the Parquet footer chain.

    An encrypted live file's footer chain needs ``decryption`` (else each footer shows as a
    problem); the ``_pm`` part needs no keys.
    """
    keys = None if decryption is None else LiveKeys(decryption, None)
    pm_data = (directory / LiveFileName.PM.value).read_bytes()
    data_path = directory / LiveFileName.DATA.value
    sidecar = read_sidecar(pm_data)
    newest = sidecar.footers[0][1]
    header = sidecar.header
    chain = []
    with data_path.open("rb") as data:

        def read(offset: int, size: int) -> bytes:
            data.seek(offset)
            return data.read(size)

        size = newest.parquet_file_size
        while size:
            try:
                version = parse_footer_at(read, size, keys)
            except StreamwriteError as exc:
                chain.append({"parquet_size": size, "problem": str(exc)})
                break
            chain.append(
                {
                    "commit_seq": version.seq,
                    "parquet_size": version.parquet_size,
                    "footer_offset": version.footer_offset,
                    "footer_length": version.footer_length,
                    "num_row_groups": len(version.metadata.row_groups or []),
                    "prev_size": version.prev_size,
                }
            )
            size = version.prev_size
    return {
        "path": str(directory),
        "committed_parquet_size": newest.parquet_file_size,
        "uncommitted_tail_bytes": data_path.stat().st_size - newest.parquet_file_size,
        "pm": {
            "committed_size": sidecar.committed_size,
            "feature_flags": header.feature_flags,
            "designated_timestamp": header.designated_timestamp,
            "sorting_columns": list(header.sorting_columns),
            "bloom_columns": [header.columns[i].name for i in header.bloom_columns],
            "columns": [c.name for c in header.columns],
            "footers": len(sidecar.footers),
            "unused_bytes": newest.unused_bytes,
        },
        "snapshots": [asdict(s) for s in snapshots_from_sidecar(pm_data)],
        "footer_chain": chain,
    }
