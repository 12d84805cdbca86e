"""Read-only view of a live file's committed versions, from its ``_pm`` footer chain.

Nothing here takes the writer's lock or changes a byte; the committed sizes come from ``_pm``
(never from the filesystem), so it is safe to run while a writer appends.
:mod:`streamwrite.inspect` builds the ``streamwrite inspect`` summary on it.
"""

from __future__ import annotations

from streamwrite.format.sidecar.codec import read_row_group_block, read_sidecar
from streamwrite.layout.appender import Commit

__all__ = ["snapshots_from_sidecar"]


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
