"""The tail of a Parquet file and the footer-chain keys of a live file.

Tail grammar (parquet-format "File Format", 7.3 "Parquet Modular Encryption")::

    tail := FileMetaData footer_length(u32 LE) "PAR1"                     plaintext footer
          | FileMetaData nonce(12) tag(16) footer_length(u32 LE) "PAR1"   signed plaintext footer
          | FileCryptoMetaData footer_module footer_length(u32 LE) "PARE" encrypted footer

A live file appends a new cumulative footer after the previous one at each commit; every
footer's ``key_value_metadata`` chains it to the one before (DESIGN section 3)::

    streamwrite.prev_size   = the committed data.parquet size before this commit (decimal)
    streamwrite.commit_seq  = this footer's commit sequence number, from 0 (decimal)
"""

from __future__ import annotations

__all__ = ["FORMAT_VERSION", "KV_COMMIT_SEQ", "KV_PREV_SIZE", "MAGIC", "TAIL_SIZE"]

MAGIC = b"PAR1"
"""The magic at both ends of a file with a plaintext footer."""
TAIL_SIZE = 8
"""``footer_length`` (4 bytes) and the magic (4 bytes)."""
FORMAT_VERSION = 2
"""``FileMetaData.version`` written."""
KV_PREV_SIZE = "streamwrite.prev_size"
"""Footer key/value: the committed data.parquet size before this footer's commit (live files)."""
KV_COMMIT_SEQ = "streamwrite.commit_seq"
"""Footer key/value: the commit sequence number of this footer (live files, from 0)."""
