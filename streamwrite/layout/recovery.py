"""Recovery of a live file on open, without I/O: what is committed, and the actions to get there.

Rules (DESIGN section 3):

- The commit point is ``_pm``'s PARQUET_META_FILE_SIZE. Its newest footer names the committed
  size of ``data.parquet``; bytes past it are a torn tail (an append that never committed) and
  are truncated, silently but counted, before the next append. Bytes of ``_pm`` past its
  committed size are truncated too.
- The Parquet footer at the committed size must decode, list the same row groups as the
  ``_pm`` footer, and carry ``streamwrite.commit_seq``; ``data.parquet`` shorter than its
  committed size, or an unreadable footer there, is damage inside the committed prefix:
  :class:`~streamwrite.errors.CorruptFileError` naming the offset, and nothing is changed.
- A missing or corrupt ``_pm``, or one that does not describe ``data.parquet`` (stale), is
  rebuilt from the Parquet footer chain: the newest complete footer (found by scanning back
  from the end for a ``PAR1`` that ends a decodable footer) and its ``streamwrite.prev_size``
  links back to the first commit. Every version of the chain becomes a ``_pm`` footer, so
  snapshots survive the rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    FormatError,
    StreamwriteError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.sidecar import Sidecar, patch_committed_size, read_sidecar
from streamwrite.format.thrift import deserialize
from streamwrite.layout.actions import Action, Fsync, LiveFileName, Truncate, WriteAt
from streamwrite.layout.file_writer import KV_COMMIT_SEQ, KV_PREV_SIZE

__all__ = [
    "FooterVersion",
    "ReadAt",
    "newest_footer",
    "RecoveryPlan",
    "parse_footer_at",
    "plan_recovery",
    "plan_rollback",
]

ReadAt = Callable[[int, int], bytes]
MAGIC = b"PAR1"
_SCAN_WINDOW = 1 << 20


@dataclass(frozen=True, slots=True)
class FooterVersion:
    """One committed version of data.parquet: the footer ending at ``parquet_size``."""

    parquet_size: int
    footer_offset: int
    footer_length: int
    metadata: t.FileMetaData
    seq: int
    prev_size: int


@dataclass
class RecoveryPlan:
    """What recovery found and the actions that restore the committed state."""

    versions: list[FooterVersion]
    """Committed versions, oldest first; the last is the current one."""
    pm_bytes: bytes
    """The committed ``_pm`` contents (existing or rebuilt)."""
    pm_size: int
    actions: list[Action] = field(default_factory=list)
    torn_data_bytes: int = 0
    torn_pm_bytes: int = 0
    rebuilt_pm_reason: str | None = None

    @property
    def current(self) -> FooterVersion:
        return self.versions[-1]

    def describe(self) -> list[str]:
        """Sentences saying what recovery does (for ``streamwrite recover``)."""
        lines = [
            f"committed: commit {self.current.seq}, data.parquet {self.current.parquet_size} "
            f"bytes, {len(self.versions)} snapshots"
        ]
        if self.torn_data_bytes:
            lines.append(f"truncate a torn tail of {self.torn_data_bytes} bytes from data.parquet")
        if self.rebuilt_pm_reason is not None:
            lines.append(f"rebuild _pm from the footer chain: {self.rebuilt_pm_reason}")
        elif self.torn_pm_bytes:
            lines.append(f"truncate {self.torn_pm_bytes} uncommitted bytes from _pm")
        if len(lines) == 1:
            lines.append("nothing to do")
        return lines


def _key_values(metadata: t.FileMetaData) -> dict[str, str]:
    return {kv.key: kv.value or "" for kv in metadata.key_value_metadata or [] if kv.key}


def parse_footer_at(read: ReadAt, parquet_size: int) -> FooterVersion:
    """Decode the Parquet footer that ends at ``parquet_size``.

    Returns:
        The version; ``seq``/``prev_size`` from streamwrite's key/value metadata (0 if absent).

    Raises:
        CorruptFileError: no decodable footer ends there.
    """
    if parquet_size < 12:
        raise CorruptFileError(f"{parquet_size} bytes cannot hold a Parquet footer.", 0)
    tail = read(parquet_size - 8, 8)
    if len(tail) != 8 or tail[4:] != MAGIC:
        raise CorruptFileError("No PAR1 magic ends the footer.", parquet_size - 4)
    footer_length = int.from_bytes(tail[:4], "little")
    footer_offset = parquet_size - 8 - footer_length
    if footer_length == 0 or footer_offset < 4:
        raise CorruptFileError(f"Footer length {footer_length} does not fit.", parquet_size - 8)
    raw = read(footer_offset, footer_length)
    try:
        metadata, end = deserialize(t.FileMetaData, raw)
    except FormatError as exc:
        raise CorruptFileError(f"The footer does not decode: {exc}", footer_offset) from exc
    if end != footer_length:
        raise CorruptFileError("The footer has trailing bytes.", footer_offset + end)
    kv = _key_values(metadata)
    try:
        seq = int(kv.get(KV_COMMIT_SEQ, "0"))
        prev = int(kv.get(KV_PREV_SIZE, "0"))
    except ValueError as exc:
        raise CorruptFileError(f"Bad streamwrite key/value metadata: {exc}", footer_offset) from exc
    if not 0 <= prev < parquet_size:
        raise CorruptFileError(f"{KV_PREV_SIZE} {prev} does not precede the footer.", footer_offset)
    return FooterVersion(parquet_size, footer_offset, footer_length, metadata, seq, prev)


def _chain(read: ReadAt, newest: FooterVersion) -> list[FooterVersion]:
    """All versions from the first commit to ``newest``, oldest first, each validated."""
    versions = [newest]
    while versions[-1].prev_size:
        version = parse_footer_at(read, versions[-1].prev_size)
        later = versions[-1]
        if version.seq != later.seq - 1 or len(version.metadata.row_groups or []) > len(
            later.metadata.row_groups or []
        ):
            raise CorruptFileError(
                f"The footer chain breaks between commit {version.seq} and {later.seq}.",
                later.footer_offset,
            )
        versions.append(version)
    versions.reverse()
    return versions


def newest_footer(read: ReadAt, data_size: int) -> FooterVersion:
    """Scan back from the end for the newest decodable footer of a streamwrite live file."""
    end = data_size
    while end >= 12:
        start = max(0, end - _SCAN_WINDOW)
        window = read(start, end - start)
        position = len(window)
        while True:
            position = window.rfind(MAGIC, 0, position)
            if position < 0:
                break
            candidate = start + position + 4
            try:
                version = parse_footer_at(read, candidate)
            except CorruptFileError:
                continue  # the next rfind looks before this match
            if KV_COMMIT_SEQ in _key_values(version.metadata) or version.prev_size == 0:
                return version
        end = start + 3 if start > 0 else 0
    raise CorruptFileError("data.parquet holds no complete footer.", 0)


def _sidecar_matches(sidecar: Sidecar, version: FooterVersion) -> bool:
    footer = sidecar.footers[0][1]
    return footer.parquet_file_size == version.parquet_size and len(
        footer.row_group_offsets
    ) == len(version.metadata.row_groups or [])


def plan_recovery(
    data_size: int,
    read: ReadAt,
    pm_data: bytes | None,
    rebuild: Callable[[list[FooterVersion]], bytes],
) -> RecoveryPlan:
    """Work out the committed state of a live file and the actions that restore it.

    Args:
        data_size: the filesystem size of data.parquet (only an upper bound).
        read: reads ``size`` bytes of data.parquet at ``offset``.
        pm_data: the whole ``_pm`` file, or None if it is missing.
        rebuild: builds committed ``_pm`` bytes for a chain of versions (oldest first).

    Returns:
        The plan; its actions are empty when the files are already exactly committed.

    Raises:
        CorruptFileError: damage inside the committed prefix of data.parquet.
    """
    reason: str | None = None
    sidecar: Sidecar | None = None
    if pm_data is None:
        reason = "_pm is missing"
    else:
        try:
            sidecar = read_sidecar(pm_data)
            if not sidecar.footers:
                raise CorruptFileError("_pm has no committed footer.", 0)
        except UnsupportedError:
            raise
        except StreamwriteError as exc:
            reason = f"_pm is corrupt ({exc})"
            sidecar = None
    if sidecar is not None:
        committed_size = sidecar.footers[0][1].parquet_file_size
        if committed_size > data_size:
            raise CorruptFileError(
                f"data.parquet has {data_size} bytes but {committed_size} are committed.",
                data_size,
            )
        newest = parse_footer_at(read, committed_size)
        if _sidecar_matches(sidecar, newest):
            versions = _chain(read, newest)
            plan = RecoveryPlan(
                versions,
                pm_data[: sidecar.committed_size] if pm_data else b"",
                sidecar.committed_size,
            )
            plan.torn_pm_bytes = len(pm_data or b"") - sidecar.committed_size
            if plan.torn_pm_bytes:
                plan.actions += [
                    Truncate(LiveFileName.PM, sidecar.committed_size),
                    Fsync(LiveFileName.PM),
                ]
            _truncate_data(plan, data_size)
            return plan
        reason = "_pm does not describe data.parquet (stale)"
    newest = newest_footer(read, data_size)
    versions = _chain(read, newest)
    pm_bytes = rebuild(versions)
    plan = RecoveryPlan(versions, pm_bytes, len(pm_bytes), rebuilt_pm_reason=reason)
    plan.actions += [
        Truncate(LiveFileName.PM, 0),
        WriteAt(LiveFileName.PM, 0, pm_bytes),
        Fsync(LiveFileName.PM),
    ]
    _truncate_data(plan, data_size)
    return plan


def plan_rollback(pm_data: bytes, parquet_size: int) -> list[Action]:
    """Actions that make the committed version of size ``parquet_size`` the newest again.

    The ``_pm`` header is patched back first (the commit point moves), then both files are
    truncated; a crash in between leaves torn tails that :func:`plan_recovery` removes.

    Raises:
        ConfigError: no committed version has that size.
    """
    sidecar = read_sidecar(pm_data)
    for pm_size, footer in sidecar.footers:
        if footer.parquet_file_size == parquet_size:
            return [
                WriteAt(LiveFileName.PM, 0, patch_committed_size(pm_size)),
                Fsync(LiveFileName.PM),
                Truncate(LiveFileName.DATA, parquet_size),
                Fsync(LiveFileName.DATA),
                Truncate(LiveFileName.PM, pm_size),
                Fsync(LiveFileName.PM),
            ]
    sizes = [footer.parquet_file_size for _, footer in sidecar.footers]
    raise ConfigError(
        f"{parquet_size} is not a committed size of this live file; they are {sizes}."
    )


def _truncate_data(plan: RecoveryPlan, data_size: int) -> None:
    committed = plan.current.parquet_size
    if data_size > committed:
        plan.torn_data_bytes = data_size - committed
        plan.actions[:0] = [Truncate(LiveFileName.DATA, committed), Fsync(LiveFileName.DATA)]
