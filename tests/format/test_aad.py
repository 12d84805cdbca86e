"""Module AADs of Parquet modular encryption: byte layout (spec 7.3, 4.4) and ordinal limits."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, LimitError
from streamwrite.format.aad import MAX_ORDINAL, ModuleType, file_aad, module_aad

FILE_UNIQUE = bytes.fromhex("3f1a3ce01990c1d8")  # 8 bytes, as Arrow and parquet-java write
FAAD = file_aad(b"tester", FILE_UNIQUE)


def test_module_type_values_are_the_spec_table() -> None:
    assert [(m.name, m.value) for m in ModuleType] == [
        ("FOOTER", 0),
        ("COLUMN_META_DATA", 1),
        ("DATA_PAGE", 2),
        ("DICTIONARY_PAGE", 3),
        ("DATA_PAGE_HEADER", 4),
        ("DICTIONARY_PAGE_HEADER", 5),
        ("COLUMN_INDEX", 6),
        ("OFFSET_INDEX", 7),
        ("BLOOM_FILTER_HEADER", 8),
        ("BLOOM_FILTER_BITSET", 9),
    ]


def test_file_aad_is_prefix_then_file_unique() -> None:
    assert FAAD == b"tester" + FILE_UNIQUE
    assert file_aad(b"", FILE_UNIQUE) == FILE_UNIQUE


def test_footer_aad_is_file_aad_and_type_only() -> None:
    assert module_aad(FAAD, ModuleType.FOOTER) == FAAD + b"\x00"
    # ordinals are ignored for the footer, even out-of-range ones
    assert module_aad(FAAD, ModuleType.FOOTER, 99999, -5, 70000) == FAAD + b"\x00"


def test_column_metadata_aad_bytes() -> None:
    # type 1, row group 2 (02 00), column 0x0103 = 259 (03 01)
    assert module_aad(FAAD, ModuleType.COLUMN_META_DATA, 2, 259) == FAAD + bytes.fromhex(
        "0102000301"
    )


def test_data_page_aad_bytes_carry_the_page_ordinal() -> None:
    got = module_aad(FAAD, ModuleType.DATA_PAGE, 1, 7, 0x1234)
    assert got == FAAD + bytes.fromhex("02010007003412")
    header = module_aad(FAAD, ModuleType.DATA_PAGE_HEADER, 1, 7, 0x1234)
    assert header == FAAD + bytes.fromhex("04010007003412")


@pytest.mark.parametrize(
    "module_type",
    [
        ModuleType.COLUMN_META_DATA,
        ModuleType.DICTIONARY_PAGE,
        ModuleType.DICTIONARY_PAGE_HEADER,
        ModuleType.COLUMN_INDEX,
        ModuleType.OFFSET_INDEX,
        ModuleType.BLOOM_FILTER_HEADER,
        ModuleType.BLOOM_FILTER_BITSET,
    ],
)
def test_modules_without_page_ordinal(module_type: ModuleType) -> None:
    want = FAAD + bytes([module_type]) + bytes.fromhex("ff7f0000")
    assert module_aad(FAAD, module_type, MAX_ORDINAL, 0) == want
    # the page ordinal is not part of these AADs, whatever is passed
    assert module_aad(FAAD, module_type, MAX_ORDINAL, 0, 5) == want
    assert module_aad(FAAD, module_type, MAX_ORDINAL, 0, 40000) == want


def test_largest_ordinals_are_accepted() -> None:
    got = module_aad(b"", ModuleType.DATA_PAGE, MAX_ORDINAL, MAX_ORDINAL, MAX_ORDINAL)
    assert got == bytes.fromhex("02ff7fff7fff7f")


@pytest.mark.parametrize(
    ("ordinals", "which"),
    [
        ((32768, 0, 0), "row group"),
        ((0, 32768, 0), "column"),
        ((0, 0, 32768), "page"),
        ((0, 0, 1 << 20), "page"),
    ],
)
def test_ordinal_over_32767_is_a_limit_error(ordinals: tuple[int, int, int], which: str) -> None:
    with pytest.raises(LimitError, match=f"{which} ordinal") as info:
        module_aad(FAAD, ModuleType.DATA_PAGE_HEADER, *ordinals)
    assert "32767" in str(info.value)
    assert "DATA_PAGE_HEADER" in str(info.value)
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args


@pytest.mark.parametrize("module_type", [ModuleType.DATA_PAGE, ModuleType.OFFSET_INDEX])
def test_missing_ordinal_is_a_config_error(module_type: ModuleType) -> None:
    with pytest.raises(ConfigError, match="row group ordinal"):
        module_aad(FAAD, module_type)
    with pytest.raises(ConfigError, match="column ordinal"):
        module_aad(FAAD, module_type, 0)


def test_data_page_needs_a_page_ordinal() -> None:
    with pytest.raises(ConfigError, match="page ordinal"):
        module_aad(FAAD, ModuleType.DATA_PAGE, 0, 0)


def test_unknown_module_type() -> None:
    with pytest.raises(ConfigError, match="module type"):
        module_aad(FAAD, 10, 0, 0)  # type: ignore[arg-type]


def test_plain_int_module_type_is_accepted() -> None:
    assert module_aad(FAAD, 6, 1, 2) == module_aad(FAAD, ModuleType.COLUMN_INDEX, 1, 2)  # type: ignore[arg-type]


@given(
    st.binary(max_size=40),
    st.sampled_from(list(ModuleType)),
    st.integers(0, MAX_ORDINAL),
    st.integers(0, MAX_ORDINAL),
    st.integers(0, MAX_ORDINAL),
)
def test_aad_layout_property(
    faad: bytes, module_type: ModuleType, rg: int, col: int, page: int
) -> None:
    got = module_aad(faad, module_type, rg, col, page)
    assert got[: len(faad)] == faad
    suffix = got[len(faad) :]
    assert suffix[0] == module_type
    if module_type is ModuleType.FOOTER:
        assert len(suffix) == 1
        return
    assert int.from_bytes(suffix[1:3], "little") == rg
    assert int.from_bytes(suffix[3:5], "little") == col
    if module_type in (ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER):
        assert len(suffix) == 7
        assert int.from_bytes(suffix[5:7], "little") == page
    else:
        assert len(suffix) == 5
