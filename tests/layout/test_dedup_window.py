"""The dedup window's decisions (``streamwrite.layout.dedup``), without I/O: the writes are
applied to files held in a dict, as the shell applies them to the table directory."""

from __future__ import annotations

from streamwrite.format.dedup import DEDUP_HEADER, decode_dedup_log
from streamwrite.layout.dedup import DedupWindow, DedupWrite


def k(n: int) -> bytes:
    return n.to_bytes(16, "little")


def apply(files: dict[str, bytes], write: DedupWrite) -> None:
    """Run ``write`` on ``files`` (name -> bytes) and, as after its publish, retire."""
    if write.create:
        body = DEDUP_HEADER
        if write.copy is not None:
            name, offset, size = write.copy
            body += files[name][offset : offset + size]
        assert len(body) == write.offset
        files[write.name] = body + write.data
    else:
        assert len(files[write.name]) == write.offset, "an append not at the committed size"
        files[write.name] += write.data
    if write.retire is not None:
        del files[write.retire]


def commit(
    window: DedupWindow, version: int, now: float, keys: list[bytes], files: dict[str, bytes]
) -> DedupWrite:
    write = window.plan(version, now, keys)
    apply(files, write)
    window.committed(write)
    assert window.log is not None and len(files[window.log.name]) == window.log.size
    return write


def test_a_key_is_remembered_for_the_window_then_forgotten() -> None:
    window, files = DedupWindow(10.0), {}
    first = commit(window, 1, 100.0, [k(1), k(2)], files)
    assert first.create and first.name == "_dedup.1" and first.offset == len(DEDUP_HEADER)
    assert first.copy is None and first.retire is None
    assert window.remembered(k(1), 109.9) == 1 and window.remembered(k(3), 101.0) is None
    assert window.remembered(k(1), 110.0) is None, "a key exactly window seconds old is past it"
    second = commit(window, 2, 105.0, [k(3)], files)
    assert not second.create and second.offset == first.log.size
    window.expire(112.0)
    assert window.num_keys == 1 and window.remembered(k(3), 112.0) == 2


def test_a_key_committed_again_keeps_its_newest_commit() -> None:
    window, files = DedupWindow(10.0), {}
    commit(window, 1, 100.0, [k(1)], files)
    commit(window, 2, 111.0, [k(1)], files)  # past the window: written again
    window.expire(112.0)  # drops commit 1, not the key of commit 2
    assert window.remembered(k(1), 112.0) == 2


def test_the_log_rotates_once_it_is_large_and_mostly_past_the_window() -> None:
    window, files = DedupWindow(10.0, rotate_size=400), {}
    writes = []
    for v in range(1, 60):
        writes.append(commit(window, v, 100.0 + v, [k(v)], files))
        assert list(files) == [window.log.name], "one log at a time"  # type: ignore[union-attr]
        # the log, read back as a reopen would, remembers exactly what the window does
        name = window.log.name  # type: ignore[union-attr]
        rebuilt = DedupWindow(10.0, window.log, decode_dedup_log(files[name], name), 100.0 + v)
        for n in range(1, v + 1):
            assert rebuilt.remembered(k(n), 100.0 + v) == window.remembered(k(n), 100.0 + v)
        assert len(files[name]) <= 2 * 400
    rotations = [w for w in writes if w.create]
    assert len(rotations) >= 3 and rotations[0].name == "_dedup.1"
    assert all(w.copy is not None and w.retire == w.copy[0] for w in rotations[1:])
    assert [v for v in range(1, 60) if window.remembered(k(v), 159.0)] == list(range(50, 60))


def test_a_window_rebuilt_from_its_records_decides_as_before() -> None:
    window, files = DedupWindow(10.0), {}
    for v in range(1, 6):
        commit(window, v, 100.0 + 3 * v, [k(v), bytes(8) + k(v)], files)
    data = files["_dedup.1"]
    rebuilt = DedupWindow(10.0, window.log, decode_dedup_log(data, "log"), now=114.0)
    assert rebuilt.num_keys == 8  # commits 2..5 (at 106, 109, 112, 115: younger than 10 s)
    for v in range(1, 6):
        assert rebuilt.remembered(k(v), 114.0) == window.remembered(k(v), 114.0)
    # commit 1's two records (one per key size: 16 and 24 bytes) are not counted
    assert rebuilt.live_size == len(data) - len(DEDUP_HEADER) - (2 * 25 + 16 + 24)
