"""The ``--skipping`` text of ``streamwrite index build``: both spellings and their errors."""

from __future__ import annotations

import pytest

from streamwrite.cli.skipping_spec import parse_skipping
from streamwrite.errors import ConfigError


def test_items_and_json_combine() -> None:
    config = parse_skipping(
        '{"symbol": ["valuelist", "bloom"]}',
        ["price=minmax", "order_id=bloom:fpp=0.001:ndv=200000", "ts=time_index", "a=b=c"],
    )
    assert config == {
        "symbol": ["valuelist", "bloom"],
        "price": ["minmax"],
        "order_id": [["bloom", {"fpp": 0.001, "ndv": 200000}]],
        "ts": ["time_index"],
        "a": ["b=c"],
    }
    assert parse_skipping(None, ["x=bloom:mode=fast"]) == {"x": [["bloom", {"mode": "fast"}]]}


@pytest.mark.parametrize(
    ("json_text", "items", "words"),
    [
        (None, [], "No index given"),
        ("{", [], "not valid JSON"),
        ('["symbol"]', [], "JSON object"),
        ('{"symbol": "bloom"}', [], "JSON object"),
        (None, ["symbol"], "COLUMN=KIND"),
        (None, ["=bloom"], "COLUMN=KIND"),
        (None, ["symbol="], "COLUMN=KIND"),
        (None, ["symbol=bloom,"], "empty index kind"),
        (None, ["symbol=bloom:fpp"], "NAME=VALUE"),
        ('{"symbol": ["bloom"]}', ["symbol=minmax"], "given twice"),
    ],
)
def test_errors(json_text: str | None, items: list[str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_skipping(json_text, items)
