"""Read-only views of a live file (a directory holding ``data.parquet`` + ``_pm``), and its
recovery.

The views take no lock and change no byte; committed sizes come from ``_pm`` (never from the
file's length), so they are safe while a writer appends. :func:`recover_live_file` takes the
writer's lock (``_pm`` is the lock file), also when it only plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.live_keys import LiveKeys
from streamwrite.errors import StreamwriteError
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.appender import Commit
from streamwrite.layout.recovery import parse_footer_at
from streamwrite.live.file import recover
from streamwrite.live.info import snapshots_from_sidecar
from streamwrite.reader.tail import committed_size

__all__ = [
    "FooterLink",
    "LiveFileInfo",
    "LiveFileSize",
    "LiveRecovery",
    "SidecarInfo",
    "describe_live_file",
    "live_file_size",
    "recover_live_file",
]


@dataclass(frozen=True, slots=True)
class LiveFileSize:
    """A live file's ``data.parquet``: its committed size and its length on disk."""

    committed_size: int
    """The newest commit's size, from ``_pm``."""
    file_size: int
    """The length of ``data.parquet`` now."""

    @property
    def uncommitted_bytes(self) -> int:
        """Bytes past the newest commit (a writer appending, or a torn tail); 0 if none."""
        return max(self.file_size - self.committed_size, 0)


def live_file_size(path: str | Path) -> LiveFileSize:
    """The committed size and the on-disk length of a live file's ``data.parquet``.

    Returns:
        Both sizes.

    Raises:
        CorruptFileError: ``_pm`` is missing, unreadable or damaged (reopening the live file
            rebuilds it).
        ConfigError: ``path`` is a table's partition (segments inside, no ``_pm``).
        OSError: ``data.parquet`` cannot be read.
    """
    directory = Path(path)
    committed = committed_size(directory)
    return LiveFileSize(committed, (directory / LiveFileName.DATA.value).stat().st_size)


@dataclass(frozen=True, slots=True)
class SidecarInfo:
    """The ``_pm`` sidecar: its header and newest footer."""

    committed_size: int
    """Bytes of ``_pm`` that are committed."""
    feature_flags: int
    designated_timestamp: int
    """The designated timestamp column's index, or -1."""
    sorting_columns: tuple[int, ...]
    bloom_columns: tuple[str, ...]
    columns: tuple[str, ...]
    num_footers: int
    unused_bytes: int
    """Dead bytes of ``data.parquet`` (superseded footers) at the newest commit."""


@dataclass(frozen=True, slots=True)
class FooterLink:
    """One Parquet footer of the chain ``data.parquet`` holds (each commit appends one that
    names the previous commit's size); ``problem`` set when it cannot be read."""

    parquet_size: int
    """The committed size this footer ends."""
    commit_seq: int | None = None
    footer_offset: int | None = None
    footer_length: int | None = None
    num_row_groups: int | None = None
    prev_size: int | None = None
    """The previous commit's size (0: the first commit)."""
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class LiveFileInfo:
    """A live file: its committed size, ``_pm`` summary, snapshots and footer chain."""

    path: Path
    committed_size: int
    uncommitted_bytes: int
    """Bytes of ``data.parquet`` past the newest commit."""
    sidecar: SidecarInfo
    snapshots: tuple[Commit, ...]
    """Every committed version, oldest first."""
    footer_chain: tuple[FooterLink, ...]
    """The Parquet footers, newest first, down to the first commit or the first that cannot
    be read."""


def describe_live_file(
    path: str | Path, decryption: DecryptionConfig | None = None
) -> LiveFileInfo:
    """Summarise a live file: ``_pm`` header and footers, snapshots, the Parquet footer chain.

    An encrypted live file's footer chain needs ``decryption`` (else its newest footer is a
    :class:`FooterLink` with a ``problem``); the ``_pm`` part needs no keys.

    Returns:
        The summary.

    Raises:
        CorruptFileError: ``_pm`` is damaged.
        OSError: ``_pm`` or ``data.parquet`` cannot be read.
    """
    directory = Path(path)
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
                chain.append(FooterLink(size, problem=str(exc)))
                break
            chain.append(
                FooterLink(
                    version.parquet_size,
                    version.seq,
                    version.footer_offset,
                    version.footer_length,
                    len(version.metadata.row_groups or []),
                    version.prev_size,
                )
            )
            size = version.prev_size
    return LiveFileInfo(
        directory,
        newest.parquet_file_size,
        data_path.stat().st_size - newest.parquet_file_size,
        SidecarInfo(
            sidecar.committed_size,
            header.feature_flags,
            header.designated_timestamp,
            tuple(header.sorting_columns),
            tuple(header.columns[i].name for i in header.bloom_columns),
            tuple(c.name for c in header.columns),
            len(sidecar.footers),
            newest.unused_bytes,
        ),
        tuple(snapshots_from_sidecar(pm_data)),
        tuple(chain),
    )


@dataclass(frozen=True, slots=True)
class LiveRecovery:
    """What recovery of a live file found, and did or would do."""

    applied: bool
    """The actions were carried out (else only planned)."""
    commit_seq: int
    """The newest committed version recovery keeps."""
    committed_size: int
    num_snapshots: int
    torn_data_bytes: int
    """Bytes past the newest commit cut from ``data.parquet``."""
    torn_pm_bytes: int
    rebuilt_pm_reason: str | None
    """Why ``_pm`` is rebuilt from the footer chain, or None."""
    unchecked_footers: int
    """Committed footers ``_pm`` has no checksum for (written before they were recorded)."""
    description: tuple[str, ...]
    """Sentences saying all of the above."""


def recover_live_file(
    path: str | Path, *, apply: bool = False, decryption: DecryptionConfig | None = None
) -> LiveRecovery:
    """What recovery of the live file at ``path`` does: cut a torn tail past its newest
    commit, rebuild a missing, stale or damaged ``_pm``; with ``apply``, do it (reopening the
    live file does the same). It holds the writer's lock while it runs, in both modes.

    Returns:
        The findings and actions.

    Raises:
        CorruptFileError: damage inside the committed prefix.
        EncryptionError: an encrypted live file without keys, or keys that do not open it.
        StreamwriteIOError: the live file is open for writing elsewhere, or cannot be opened.
    """
    plan = recover(path, apply=apply, decryption=decryption)
    return LiveRecovery(
        apply,
        plan.current.seq,
        plan.current.parquet_size,
        len(plan.versions),
        plan.torn_data_bytes,
        plan.torn_pm_bytes,
        plan.rebuilt_pm_reason,
        plan.unchecked_footers,
        tuple(plan.describe()),
    )


for _export in __all__:  # documented and pickled as streamwrite.inspect.NAME (anyio's style)
    if getattr(globals()[_export], "__module__", None) == __name__:
        globals()[_export].__module__ = "streamwrite.inspect"
