"""A nested leaf's encode job crosses the shared-memory arena with its repetition levels."""

from __future__ import annotations

import pickle

import numpy as np

from streamwrite.format.enums import Type
from streamwrite.options import DataPageVersion
from tests.workers._levels_reference import make_settings, random_levels
from workers.jobs import EncodeChunkJob
from workers.shm import job_nbytes, pack_job, unpack_job


def test_rep_levels_travel_in_the_arena() -> None:
    rng = np.random.default_rng(2)
    defs, rep = random_levels(rng, 500, 2, 1, 3.0)
    values = rng.integers(0, 9, int(np.count_nonzero(defs == 2))).astype(np.int64)
    settings = make_settings(Type.INT64, 2, 1, DataPageVersion.V1, data_page_row_limit=64)
    job = EncodeChunkJob(settings, values, defs, 500, rep_levels=rep)
    size = job_nbytes(job)
    assert rep is not None and size >= values.nbytes + defs.nbytes + rep.nbytes
    arena = memoryview(bytearray(size))
    shared = pack_job(job, "segment", arena)
    assert shared.job.rep_levels is None and shared.rep_levels is not None
    assert len(pickle.dumps(shared)) < rep.nbytes  # the levels are not pickled
    unpacked = unpack_job(pickle.loads(pickle.dumps(shared)), arena)
    assert isinstance(unpacked, EncodeChunkJob)
    assert unpacked.rep_levels is not None and np.array_equal(unpacked.rep_levels, rep)
    assert np.array_equal(unpacked.def_levels, defs)
    assert unpacked.run().data == job.run().data
