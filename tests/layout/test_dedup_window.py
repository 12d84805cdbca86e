"""The dedup window's decisions (``streamwrite.layout.dedup``), without I/O."""

from __future__ import annotations

from streamwrite.format.dedup import DEDUP_HEADER, decode_dedup_log
from streamwrite.layout.dedup import DedupWindow, DedupWrite


def k(n: int) -> bytes:
    return n.to_bytes(16, "little")


def commit(window: DedupWindow, version: int, now: float, keys: list[bytes]) -> DedupWrite:
    write = window.plan(version, now, keys)
    window.committed(write)
    return write


def test_a_key_is_remembered_for_the_window_then_forgotten() -> None:
    window = DedupWindow(10.0)
    first = commit(window, 1, 100.0, [k(1), k(2)])
    assert first.create and first.name == "_dedup.1" and first.offset == 0
    assert first.data.startswith(DEDUP_HEADER) and first.retire is None
    assert window.remembered(k(1), 109.9) == 1 and window.remembered(k(3), 101.0) is None
    assert window.remembered(k(1), 110.0) is None, "a key exactly window seconds old is past it"
    second = commit(window, 2, 105.0, [k(3)])
    assert not second.create and second.offset == first.log.size
    window.expire(112.0)
    assert window.num_keys == 1 and window.remembered(k(3), 112.0) == 2


def test_a_key_committed_again_keeps_its_newest_commit() -> None:
    window = DedupWindow(10.0)
    commit(window, 1, 100.0, [k(1)])
    commit(window, 2, 111.0, [k(1)])  # past the window: written again
    window.expire(112.0)  # drops commit 1, not the key of commit 2
    assert window.remembered(k(1), 112.0) == 2


def test_the_log_rotates_once_it_is_large_and_mostly_past_the_window() -> None:
    window = DedupWindow(10.0, rotate_size=400)
    writes = [commit(window, v, 100.0 + v, [k(v)]) for v in range(1, 40)]
    rotations = [w for w in writes if w.create]
    assert len(rotations) >= 2 and rotations[0].name == "_dedup.1"
    later = rotations[1]
    assert later.retire is not None and later.retire != later.name
    # the new log holds exactly the keys still within the window, then the commit's own
    records = decode_dedup_log(later.data, "log")
    kept = [key for r in records for key in r.split()]
    assert kept[-1] == k(later.version)
    assert all(later.version - int.from_bytes(key, "little") < 10 for key in kept)
    remembered = [v for v in range(1, 40) if window.remembered(k(v), 139.0)]
    assert remembered == list(range(30, 40))
    assert window.log is not None and window.log.size <= 2 * 400


def test_a_window_rebuilt_from_its_records_decides_as_before() -> None:
    window = DedupWindow(10.0)
    data = b""
    for v in range(1, 6):
        write = commit(window, v, 100.0 + 3 * v, [k(v), bytes(8) + k(v)])
        data = write.data if write.create else data + write.data
    rebuilt = DedupWindow(10.0, window.log, decode_dedup_log(data, "log"), now=114.0)
    assert rebuilt.num_keys == 8  # commits 2..5 (at 106, 109, 112, 115: younger than 10 s)
    for v in range(1, 6):
        assert rebuilt.remembered(k(v), 114.0) == window.remembered(k(v), 114.0)
    # commit 1's two records (one per key size: 16 and 24 bytes) are not counted
    assert rebuilt.live_size == len(data) - len(DEDUP_HEADER) - (2 * 25 + 16 + 24)
