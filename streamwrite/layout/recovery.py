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
- An intact ``_pm`` is the record of what was committed, and ``data.parquet`` is checked
  against it before anything is trusted: the leading magic, then every committed version's
  Parquet tail against the XXH64 its ``_pm`` footer records (footers written before
  streamwrite recorded it are counted in :attr:`RecoveryPlan.unchecked_footers`), and the
  ``streamwrite.prev_size`` chain of the Parquet footers must name exactly the versions the
  ``_pm`` chain lists. A mismatch is damage inside the committed prefix
  (:class:`~streamwrite.errors.CorruptFileError`), never a reason to rebuild ``_pm``: a
  rebuild would take the damaged footer for a valid one.
- A missing or corrupt ``_pm``, or one without checksums that does not describe
  ``data.parquet`` (stale), is rebuilt from the Parquet footer chain: the newest complete
  footer (found by scanning back from the end for a ``PAR1`` that ends a decodable footer) and
  its ``streamwrite.prev_size`` links back to the first commit. What the rebuild trusts is the
  chain's own consistency: each earlier footer ends exactly where the later one's
  ``streamwrite.prev_size`` says, has the commit sequence number before it, the same schema,
  and the later footer's first row groups are exactly its row groups. Every version of the
  chain becomes a ``_pm`` footer with the checksum of the tail it was read from, so
  snapshots survive the rebuild.
- Inside a table the commit point is the table's ``_txn`` and a segment's ``_pm`` header is no
  barrier (it may be durable before its blocks, ``_pm`` before the data): the table brings each
  listed segment to exactly its ``_txn`` version with :func:`plan_recovery_at` (verify the
  Parquet footer at that size against the XXH64 ``_txn`` recorded, keep ``_pm`` if it holds
  that version intact, else rebuild it, truncate both files), never with :func:`plan_recovery`.
- Encrypted live files (Parquet modular encryption) end every footer with ``PARE`` (encrypted
  footer: ``FileCryptoMetaData`` then the FOOTER module) or with ``PAR1`` after a signed
  plaintext footer (``FileMetaData`` then a 28-byte nonce || tag). Reading an encrypted footer,
  and checking a signature, needs the footer key: the caller passes :class:`FooterKeys`. The
  chain walk decrypts every footer. Without keys an encrypted footer is an
  :class:`~streamwrite.errors.EncryptionError`; a signed plaintext footer is read unverified.
  While scanning for the newest footer, a candidate that fails to decrypt is skipped (the
  bytes ``PARE`` may occur inside ciphertext); if no candidate decodes, the first decryption
  error is raised (wrong keys), not "no footer".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    EncryptionError,
    FormatError,
    StreamwriteError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.footer import KV_COMMIT_SEQ, KV_PREV_SIZE
from streamwrite.format.sidecar.codec import (
    Sidecar,
    parquet_footer_checksum,
    patch_committed_size,
    read_sidecar,
)
from streamwrite.format.thrift.codec import deserialize
from streamwrite.layout.actions import Action, Fsync, LiveFileName, Truncate, WriteAt

__all__ = [
    "FooterKeys",
    "FooterVersion",
    "ReadAt",
    "newest_footer",
    "RecoveryPlan",
    "parse_footer_at",
    "plan_recovery",
    "plan_recovery_at",
    "plan_rollback",
]

ReadAt = Callable[[int, int], bytes]
MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"
FOOTER_SIGNATURE_SIZE = 28
"""nonce (12) || GCM tag (16) after a signed plaintext footer."""
_SCAN_WINDOW = 1 << 20


class FooterKeys(Protocol):
    """Opens the footers of an encrypted file with its footer key (kept by the caller)."""

    def decrypt_footer(self, crypto: t.FileCryptoMetaData, module: bytes) -> t.FileMetaData:
        """Returns the FileMetaData in the encrypted FOOTER ``module`` described by ``crypto``.

        Raises:
            EncryptionError: wrong key or AAD prefix, or tampered bytes.
            FormatError: the plaintext is not a FileMetaData.
        """
        ...

    def verify_footer(self, crypto: t.FileCryptoMetaData, body: bytes, signature: bytes) -> None:
        """Checks the signature of a plaintext footer ``body``.

        Raises:
            EncryptionError: wrong key or AAD prefix, or tampered bytes.
        """
        ...


@dataclass(frozen=True, slots=True)
class FooterVersion:
    """One committed version of data.parquet: the footer ending at ``parquet_size``."""

    parquet_size: int
    footer_offset: int
    footer_length: int
    metadata: t.FileMetaData
    seq: int
    prev_size: int
    crypto: t.FileCryptoMetaData | None = None
    """The file's encryption (algorithm with ``aad_file_unique``, footer key metadata); for a
    signed plaintext footer, built from ``FileMetaData.encryption_algorithm`` and
    ``footer_signing_key_metadata``. None for a plaintext file."""
    encrypted_footer: bool = False
    """True for a ``PARE`` footer."""


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
    unchecked_footers: int = 0
    """Committed versions whose ``_pm`` footer has no Parquet footer checksum (written before
    streamwrite recorded them): their Parquet footers could not be verified."""

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
        if self.unchecked_footers:
            lines.append(
                f"unchecked: {self.unchecked_footers} of {len(self.versions)} Parquet footers "
                "have no checksum in _pm (written before streamwrite recorded them)"
            )
        return lines


def _key_values(metadata: t.FileMetaData) -> dict[str, str]:
    return {kv.key: kv.value or "" for kv in metadata.key_value_metadata or [] if kv.key}


def _decode_metadata(raw: bytes, footer_offset: int) -> tuple[t.FileMetaData, int]:
    try:
        return deserialize(t.FileMetaData, raw)
    except FormatError as exc:
        raise CorruptFileError(f"The footer does not decode: {exc}", footer_offset) from exc


def _open_footer(
    raw: bytes, encrypted: bool, footer_offset: int, keys: FooterKeys | None
) -> tuple[t.FileMetaData, t.FileCryptoMetaData | None]:
    """The FileMetaData of the footer bytes ``raw`` (between the last module and the length)."""
    if encrypted:
        try:
            crypto, end = deserialize(t.FileCryptoMetaData, raw)
        except FormatError as exc:
            raise CorruptFileError(
                f"The FileCryptoMetaData of the encrypted footer does not decode: {exc}",
                footer_offset,
            ) from exc
        if crypto.encryption_algorithm is None:
            raise CorruptFileError("The FileCryptoMetaData names no algorithm.", footer_offset)
        if keys is None:
            raise EncryptionError(
                "The live file's footer is encrypted (PARE magic): opening it needs its keys "
                "(encryption=FileEncryption(...) or decryption=DecryptionConfig...)."
            )
        try:
            return keys.decrypt_footer(crypto, raw[end:]), crypto
        except FormatError as exc:
            raise CorruptFileError(str(exc), footer_offset + end) from exc
    metadata, end = _decode_metadata(raw, footer_offset)
    if metadata.encryption_algorithm is None:
        if end != len(raw):
            raise CorruptFileError("The footer has trailing bytes.", footer_offset + end)
        return metadata, None
    if len(raw) - end != FOOTER_SIGNATURE_SIZE:
        raise CorruptFileError(
            f"The signed plaintext footer leaves {len(raw) - end} bytes for its "
            f"{FOOTER_SIGNATURE_SIZE}-byte signature.",
            footer_offset + end,
        )
    crypto = t.FileCryptoMetaData(
        encryption_algorithm=metadata.encryption_algorithm,
        key_metadata=metadata.footer_signing_key_metadata,
    )
    if keys is not None:
        keys.verify_footer(crypto, raw[:end], raw[end:])
    return metadata, crypto


def parse_footer_at(
    read: ReadAt, parquet_size: int, keys: FooterKeys | None = None
) -> FooterVersion:
    """Decode the Parquet footer that ends at ``parquet_size`` (decrypting it with ``keys``).

    Returns:
        The version; ``seq``/``prev_size`` from streamwrite's key/value metadata (0 if absent).

    Raises:
        CorruptFileError: no decodable footer ends there.
        EncryptionError: an encrypted footer without ``keys``; wrong keys; a tampered footer.
    """
    if parquet_size < 12:
        raise CorruptFileError(f"{parquet_size} bytes cannot hold a Parquet footer.", 0)
    tail = read(parquet_size - 8, 8)
    if len(tail) != 8 or tail[4:] not in (MAGIC, ENCRYPTED_MAGIC):
        raise CorruptFileError("No PAR1 or PARE magic ends the footer.", parquet_size - 4)
    footer_length = int.from_bytes(tail[:4], "little")
    footer_offset = parquet_size - 8 - footer_length
    if footer_length == 0 or footer_offset < 4:
        raise CorruptFileError(f"Footer length {footer_length} does not fit.", parquet_size - 8)
    raw = bytes(read(footer_offset, footer_length))
    encrypted = tail[4:] == ENCRYPTED_MAGIC
    metadata, crypto = _open_footer(raw, encrypted, footer_offset, keys)
    kv = _key_values(metadata)
    try:
        seq = int(kv.get(KV_COMMIT_SEQ, "0"))
        prev = int(kv.get(KV_PREV_SIZE, "0"))
    except ValueError as exc:
        raise CorruptFileError(f"Bad streamwrite key/value metadata: {exc}", footer_offset) from exc
    if not 0 <= prev < parquet_size:
        raise CorruptFileError(f"{KV_PREV_SIZE} {prev} does not precede the footer.", footer_offset)
    return FooterVersion(
        parquet_size, footer_offset, footer_length, metadata, seq, prev, crypto, encrypted
    )


def _chain(read: ReadAt, newest: FooterVersion, keys: FooterKeys | None) -> list[FooterVersion]:
    """All versions from the first commit to ``newest``, oldest first, each validated (and
    decrypted with ``keys``): consecutive footers have consecutive commit numbers, the same
    schema, and the earlier one's row groups begin the later one's."""
    versions = [newest]
    while versions[-1].prev_size:
        version = parse_footer_at(read, versions[-1].prev_size, keys)
        later = versions[-1]
        earlier_groups = version.metadata.row_groups or []
        later_groups = later.metadata.row_groups or []
        broken = (
            "commit numbers"
            if version.seq != later.seq - 1
            else "schemas"
            if version.metadata.schema != later.metadata.schema
            else "row groups"
            if later_groups[: len(earlier_groups)] != earlier_groups
            else None
        )
        if broken is not None:
            raise CorruptFileError(
                f"The footer chain breaks between commit {version.seq} (footer at "
                f"{version.footer_offset}) and commit {later.seq} (footer at "
                f"{later.footer_offset}): their {broken} do not continue each other.",
                later.footer_offset,
            )
        versions.append(version)
    versions.reverse()
    return versions


def newest_footer(read: ReadAt, data_size: int, keys: FooterKeys | None = None) -> FooterVersion:
    """Scan back from the end for the newest decodable footer of a streamwrite live file.

    The magic looked for is the file's leading one (``PARE`` for encrypted footers).

    Raises:
        CorruptFileError: no complete footer.
        EncryptionError: footers are encrypted and ``keys`` is None, or none decrypts.
    """
    magic = bytes(read(0, 4)) if data_size >= 4 else MAGIC
    if magic not in (MAGIC, ENCRYPTED_MAGIC):
        magic = MAGIC
    first_error: EncryptionError | None = None
    end = data_size
    while end >= 12:
        start = max(0, end - _SCAN_WINDOW)
        window = read(start, end - start)
        position = len(window)
        while True:
            position = window.rfind(magic, 0, position)
            if position < 0:
                break
            candidate = start + position + 4
            try:
                version = parse_footer_at(read, candidate, keys)
            except CorruptFileError:
                continue  # the next rfind looks before this match
            except EncryptionError as exc:
                if keys is None:
                    raise
                first_error = first_error or exc
                continue
            if KV_COMMIT_SEQ in _key_values(version.metadata) or version.prev_size == 0:
                return version
        end = start + 3 if start > 0 else 0
    if first_error is not None:
        raise EncryptionError(
            f"No footer of data.parquet decrypts with the keys given: {first_error}"
        )
    raise CorruptFileError("data.parquet holds no complete footer.", 0)


def _check_committed(sidecar: Sidecar, data_size: int, read: ReadAt) -> tuple[bool, int]:
    """Check data.parquet against an intact ``_pm``: leading magic, and each committed
    version's Parquet tail against its recorded XXH64.

    Returns:
        Whether the newest version's checksum was verified, and how many versions had none.

    Raises:
        CorruptFileError: data.parquet is shorter than committed, its magic or a committed
            Parquet footer is damaged.
    """
    committed_size = sidecar.footers[0][1].parquet_file_size
    if committed_size > data_size:
        raise CorruptFileError(
            f"data.parquet has {data_size} bytes but {committed_size} are committed.",
            data_size,
        )
    magic = bytes(read(0, 4))
    if magic not in (MAGIC, ENCRYPTED_MAGIC):
        raise CorruptFileError(
            f"data.parquet starts with {magic!r}, not PAR1 or PARE: its committed prefix is "
            "damaged.",
            0,
        )
    unchecked = 0
    for _pm_size, footer in sidecar.footers:
        stored = footer.parquet_footer_checksum
        if stored is None:
            unchecked += 1
            continue
        offset, size = footer.parquet_footer_offset, footer.parquet_footer_length + 8
        actual = parquet_footer_checksum(read(offset, size))
        if actual != stored:
            raise CorruptFileError(
                f"The committed Parquet footer of data.parquet at bytes [{offset}, "
                f"{offset + size}) has XXH64 {actual:#018x}, but _pm recorded {stored:#018x}: "
                "damage inside the committed prefix.",
                offset,
            )
    return sidecar.footers[0][1].parquet_footer_checksum is not None, unchecked


def _check_chain_agrees(sidecar: Sidecar, versions: list[FooterVersion]) -> None:
    """The Parquet footer chain must name exactly the versions the ``_pm`` chain lists."""
    recorded = [footer.parquet_file_size for _, footer in reversed(sidecar.footers)]
    walked = [version.parquet_size for version in versions]
    if recorded != walked:
        raise CorruptFileError(
            f"The Parquet footers of data.parquet chain through sizes {walked} "
            f"(streamwrite.prev_size), but _pm lists the committed sizes {recorded}.",
            versions[-1].footer_offset,
        )


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
    keys: FooterKeys | None = None,
) -> RecoveryPlan:
    """Work out the committed state of a live file and the actions that restore it.

    Args:
        data_size: the filesystem size of data.parquet (only an upper bound).
        read: reads ``size`` bytes of data.parquet at ``offset``.
        pm_data: the whole ``_pm`` file, or None if it is missing.
        rebuild: builds committed ``_pm`` bytes for a chain of versions (oldest first).
        keys: opens encrypted footers (encrypted live files).

    Returns:
        The plan; its actions are empty when the files are already exactly committed.

    Raises:
        CorruptFileError: damage inside the committed prefix of data.parquet (also a committed
            Parquet footer whose checksum does not match the one ``_pm`` recorded).
        EncryptionError: encrypted footers without ``keys``, or keys that do not open them.
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
        verified, unchecked = _check_committed(sidecar, data_size, read)
        newest = parse_footer_at(read, sidecar.footers[0][1].parquet_file_size, keys)
        if not _sidecar_matches(sidecar, newest) and verified:
            raise CorruptFileError(
                "The newest committed Parquet footer of data.parquet matches the checksum _pm "
                "recorded but not the row groups _pm lists.",
                newest.footer_offset,
            )
        if _sidecar_matches(sidecar, newest):
            versions = _chain(read, newest, keys)
            _check_chain_agrees(sidecar, versions)
            plan = RecoveryPlan(
                versions,
                pm_data[: sidecar.committed_size] if pm_data else b"",
                sidecar.committed_size,
                unchecked_footers=unchecked,
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
    newest = newest_footer(read, data_size, keys)
    versions = _chain(read, newest, keys)
    pm_bytes = rebuild(versions)
    plan = RecoveryPlan(versions, pm_bytes, len(pm_bytes), rebuilt_pm_reason=reason)
    plan.actions += [
        Truncate(LiveFileName.PM, 0),
        WriteAt(LiveFileName.PM, 0, pm_bytes),
        Fsync(LiveFileName.PM),
    ]
    _truncate_data(plan, data_size)
    return plan


def _sidecar_at(pm_data: bytes | None, parquet_size: int) -> tuple[Sidecar, bytes] | str:
    """The ``_pm`` as of the committed version of size ``parquet_size``, and its bytes (the
    header's size field patched back to that version), or why there is none."""
    if not pm_data:
        return "_pm is missing"
    try:
        newest = read_sidecar(pm_data)
    except UnsupportedError:
        raise
    except StreamwriteError as exc:
        return f"_pm is corrupt ({exc})"
    for pm_size, footer in newest.footers:
        if footer.parquet_file_size == parquet_size:
            view = patch_committed_size(pm_size) + pm_data[8:pm_size]
            return read_sidecar(view), view
    return f"_pm does not hold the version of {parquet_size} bytes (stale)"


def plan_recovery_at(
    parquet_size: int,
    footer_xxh64: int | None,
    data_size: int,
    read: ReadAt,
    pm_data: bytes | None,
    rebuild: Callable[[list[FooterVersion]], bytes],
    keys: FooterKeys | None = None,
) -> RecoveryPlan:
    """Bring a table's segment to exactly the version its ``_txn`` records: ``data.parquet``
    of ``parquet_size`` bytes whose Parquet tail has XXH64 ``footer_xxh64`` (None: not
    recorded). Inside a table ``_pm`` is no commit point (its header may be durable before its
    blocks, or ``_pm`` before the data), so it is kept only if it holds that version intact
    (its size field is patched back to it), else rebuilt from the Parquet footer chain ending
    at ``parquet_size``.

    Actions, in order (each idempotent: a crash between two is recovered by planning again)::

        _pm kept        WriteAt(pm, 0, size field of that version), Fsync(pm)   if it differs
        _pm rebuilt     Truncate(pm, 0), WriteAt(pm, 0, rebuilt), Fsync(pm)
        then            Truncate(data, parquet_size), Fsync(data)                if longer
                        Truncate(pm, its size), Fsync(pm)                        if longer

    Raises:
        CorruptFileError: damage at or below ``parquet_size``: ``data.parquet`` shorter than
            it, a damaged leading magic, no decodable footer ending there, a footer XXH64
            other than ``footer_xxh64``, a footer chain that breaks, or a kept ``_pm`` whose
            versions disagree with the data.
        EncryptionError: encrypted footers without ``keys``, or keys that do not open them.
    """
    if data_size < parquet_size:
        raise CorruptFileError(
            f"data.parquet has {data_size} bytes but the table's _txn records {parquet_size} "
            "committed: damage inside the committed prefix.",
            data_size,
        )
    magic = bytes(read(0, 4))
    if magic not in (MAGIC, ENCRYPTED_MAGIC):
        raise CorruptFileError(
            f"data.parquet starts with {magic!r}, not PAR1 or PARE: its committed prefix is "
            "damaged.",
            0,
        )
    newest = parse_footer_at(read, parquet_size, keys)
    tail_size = newest.footer_length + 8
    if footer_xxh64 is not None:
        actual = parquet_footer_checksum(read(newest.footer_offset, tail_size))
        if actual != footer_xxh64:
            raise CorruptFileError(
                f"The Parquet footer of data.parquet at bytes [{newest.footer_offset}, "
                f"{parquet_size}) has XXH64 {actual:#018x}, but the table's _txn recorded "
                f"{footer_xxh64:#018x}: damage inside the committed prefix.",
                newest.footer_offset,
            )
    versions = _chain(read, newest, keys)
    kept = _sidecar_at(pm_data, parquet_size)
    actions: list[Action] = []
    if isinstance(kept, tuple):
        sidecar, pm_bytes = kept
        _check_committed(sidecar, data_size, read)
        if not _sidecar_matches(sidecar, newest):
            raise CorruptFileError(
                "The Parquet footer the table's _txn names does not list the row groups _pm "
                "records for it.",
                newest.footer_offset,
            )
        _check_chain_agrees(sidecar, versions)
        plan = RecoveryPlan(versions, pm_bytes, len(pm_bytes))
        assert pm_data is not None
        if pm_data[:8] != pm_bytes[:8]:
            actions += [WriteAt(LiveFileName.PM, 0, pm_bytes[:8]), Fsync(LiveFileName.PM)]
        plan.torn_pm_bytes = len(pm_data) - len(pm_bytes)
    else:
        pm_bytes = rebuild(versions)
        plan = RecoveryPlan(versions, pm_bytes, len(pm_bytes), rebuilt_pm_reason=kept)
        actions += [
            Truncate(LiveFileName.PM, 0),
            WriteAt(LiveFileName.PM, 0, pm_bytes),
            Fsync(LiveFileName.PM),
        ]
    if data_size > parquet_size:
        plan.torn_data_bytes = data_size - parquet_size
        actions += [Truncate(LiveFileName.DATA, parquet_size), Fsync(LiveFileName.DATA)]
    if plan.torn_pm_bytes > 0:
        actions += [Truncate(LiveFileName.PM, plan.pm_size), Fsync(LiveFileName.PM)]
    plan.actions = actions
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
