"""Picklable jobs and :func:`run_job`, the only entry point of the process pool.

A job is a frozen dataclass holding numpy arrays (which pickle with out-of-band buffers) and
settings; ``run_job(job)`` returns the job's result. The inline executor calls the same function
in-process, so pool and inline output are byte-identical.

The job of an encrypted column chunk also carries its :class:`~workers.chunk.ChunkCrypto` (the
column's ``ModuleCipher``, which pickles, and the row group and column ordinals), so pages and
bloom filters are encrypted in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.chunk import ChunkCrypto, ChunkSettings, EncodedChunk, encode_chunk

__all__ = ["EncodeChunkJob", "run_job"]


@dataclass(frozen=True, slots=True)
class EncodeChunkJob:
    """Encode one column chunk (see :func:`workers.chunk.encode_chunk`)."""

    settings: ChunkSettings
    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    crypto: ChunkCrypto | None = None

    def run(self) -> EncodedChunk:
        """Returns: the encoded chunk."""
        return encode_chunk(self.settings, self.values, self.def_levels, self.num_rows, self.crypto)


def run_job(job: EncodeChunkJob) -> EncodedChunk:
    """Run one job and return its result (called in a worker process or inline)."""
    return job.run()
