"""``streamwrite.inspect`` as a public API: its names resolve, report the public module, are
documented (what each function returns and raises) and name no private module."""

from __future__ import annotations

import inspect as stdlib_inspect
import pickle
import typing

import pytest

from streamwrite import inspect

OWN = [name for name in inspect.__all__ if name not in {"PartitionStatus", "SegmentInfo"}]
"""The names defined in ``streamwrite.inspect`` (two are compaction's, re-exported)."""


def test_every_name_resolves_and_reports_the_public_module() -> None:
    assert sorted(inspect.__all__) == sorted(set(inspect.__all__))
    for name in inspect.__all__:
        assert getattr(inspect, name) is not None
    for name in OWN:
        value = getattr(inspect, name)
        if isinstance(value, type) or stdlib_inspect.isfunction(value):
            assert value.__module__ == "streamwrite.inspect", name


@pytest.mark.parametrize("name", [n for n in OWN if stdlib_inspect.isfunction(getattr(inspect, n))])
def test_functions_say_what_they_return_and_raise(name: str) -> None:
    doc = getattr(inspect, name).__doc__ or ""
    assert "Returns:" in doc, name
    if name != "is_table":
        assert "Raises:" in doc, name


@pytest.mark.parametrize("name", [n for n in OWN if stdlib_inspect.isfunction(getattr(inspect, n))])
def test_signatures_name_no_private_module(name: str) -> None:
    hints = typing.get_type_hints(getattr(inspect, name))
    for hint in hints.values():
        assert "._" not in repr(hint) and "streamwrite._" not in repr(hint), (name, hint)


def test_results_pickle() -> None:
    values = [inspect.PathKind.LIVE_FILE, inspect.LiveFileSize(10, 14)]
    for value in values:
        assert pickle.loads(pickle.dumps(value)) == value
    assert inspect.LiveFileSize(10, 14).uncommitted_bytes == 4
    assert inspect.LiveFileSize(10, 8).uncommitted_bytes == 0
