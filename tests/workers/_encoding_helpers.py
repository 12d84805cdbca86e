"""Shared helpers for the encoding kernel tests."""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.errors import FormatError

Decoder = Callable[[bytes], object]


def pyarrow_file(array: pa.Array, encoding: str | None, dictionary: bool = False) -> bytes:
    """Bytes of an uncompressed, data page v2 file holding ``array`` in one column."""
    out = io.BytesIO()
    kwargs: dict[str, object] = {}
    if encoding is not None:
        kwargs["column_encoding"] = {"x": encoding}
    pq.write_table(
        pa.table({"x": array}),
        out,
        use_dictionary=dictionary,
        compression="NONE",
        data_page_version="2.0",
        write_statistics=False,
        **kwargs,
    )
    return out.getvalue()


def assert_rejects_or_decodes(
    encoded: bytes, decode: Decoder, seed: int, trials: int = 60, errors: tuple[type, ...] = ()
) -> None:
    """Truncate and mutate ``encoded``; ``decode`` must return or raise FormatError."""
    rng = random.Random(seed)
    allowed = (FormatError, *errors)
    candidates = [encoded[:cut] for cut in range(len(encoded))] if len(encoded) < 40 else []
    for _ in range(trials):
        data = bytearray(encoded)
        if data and rng.random() < 0.5:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        if data and rng.random() < 0.5:
            del data[rng.randrange(len(data)) :]
        candidates.append(bytes(data))
    for data in candidates:
        with contextlib.suppress(*allowed):
            decode(data)
