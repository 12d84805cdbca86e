"""Nested Parquet files from the chunk encoder alone (no shredder, no schema mapping needed).

The schema elements are built here as parquet-format / pyarrow write them (the lead's design,
section 1), and the levels come from the per-value reference shredder
(:mod:`streamwrite.testing.dremel`). Each leaf is encoded with ``workers.chunk.encode_chunk``
and the file is laid out by ``streamwrite.layout.file_writer.FileWriter``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.schema import ROOT_NAME, arrow_to_parquet, encode_arrow_schema
from streamwrite.arrow.values import to_physical
from streamwrite.crypto.encryption import FileEncryption, FileEncryptor
from streamwrite.encode import chunk_settings
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.enums import ConvertedType, FieldRepetitionType
from streamwrite.format.structs import ListType, LogicalType, MapType, SchemaElement
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import WriteOptions
from streamwrite.testing import dremel
from workers.chunk import encode_chunk


@dataclass
class NestedFileSchema:
    """A SchemaPort for FileWriter, with the leaves' settings inputs."""

    arrow_schema: pa.Schema
    elements: list[SchemaElement]
    columns: list[ColumnSpec]
    max_repetition_levels: list[int]
    paths: list[tuple[str, ...]]

    @property
    def arrow_schema_value(self) -> str:
        return encode_arrow_schema(self.arrow_schema)


def _group(name: str, nullable: bool, num_children: int, **extra: Any) -> SchemaElement:
    repetition = FieldRepetitionType.OPTIONAL if nullable else FieldRepetitionType.REQUIRED
    return SchemaElement(name=name, repetition_type=repetition, num_children=num_children, **extra)


def build_schema(schema: pa.Schema) -> NestedFileSchema:
    out = NestedFileSchema(schema, [], [], [], [])

    def walk(f: pa.Field, name: str, parent_def: int, rep: int, path: tuple[str, ...]) -> None:
        dtype = f.type
        d = parent_def + int(f.nullable)
        here = (*path, name)
        if pa.types.is_struct(dtype):
            out.elements.append(_group(name, f.nullable, dtype.num_fields))
            for i in range(dtype.num_fields):
                child = dtype.field(i)
                walk(child, child.name, d, rep, here)
        elif pa.types.is_map(dtype):
            out.elements.append(
                _group(
                    name,
                    f.nullable,
                    1,
                    converted_type=ConvertedType.MAP,
                    logicalType=LogicalType(MAP=MapType()),
                )
            )
            out.elements.append(
                SchemaElement(
                    name="key_value", repetition_type=FieldRepetitionType.REPEATED, num_children=2
                )
            )
            kv = (*here, "key_value")
            walk(dtype.key_field, "key", d + 1, rep + 1, kv)
            walk(dtype.item_field, "value", d + 1, rep + 1, kv)
        elif (
            pa.types.is_list(dtype)
            or pa.types.is_large_list(dtype)
            or pa.types.is_fixed_size_list(dtype)
        ):
            out.elements.append(
                _group(
                    name,
                    f.nullable,
                    1,
                    converted_type=ConvertedType.LIST,
                    logicalType=LogicalType(LIST=ListType()),
                )
            )
            out.elements.append(
                SchemaElement(
                    name="list", repetition_type=FieldRepetitionType.REPEATED, num_children=1
                )
            )
            lst = (*here, "list")
            walk(dtype.value_field, "element", d + 1, rep + 1, lst)
        else:
            index = len(out.columns)
            spec = arrow_to_parquet(pa.schema([f.with_name(name)])).columns[0]
            spec = replace(spec, index=index, name=".".join(here), max_definition_level=d)
            out.elements.append(spec.element)
            out.columns.append(spec)
            out.max_repetition_levels.append(rep)
            out.paths.append(here)

    for f in schema:
        walk(f, f.name, 0, 0, ())
    root = SchemaElement(
        name=ROOT_NAME, repetition_type=FieldRepetitionType.REQUIRED, num_children=len(schema)
    )
    out.elements.insert(0, root)
    return out


@dataclass
class LeafInput:
    values: Any
    def_levels: Any
    rep_levels: Any
    num_rows: int


def leaf_inputs(schema: NestedFileSchema, table: pa.Table) -> list[LeafInput]:
    """Physical values and level arrays of every leaf, from the per-value reference
    (:func:`streamwrite.testing.dremel.reference_shred`, which reads the Arrow types)."""
    references = [
        leaf
        for arrow_field, column in zip(table.schema, table.columns, strict=True)
        for leaf in dremel.reference_shred(column, arrow_field)
    ]
    result = []
    for spec, max_rep, path, ref in zip(
        schema.columns, schema.max_repetition_levels, schema.paths, references, strict=True
    ):
        max_def = spec.max_definition_level
        assert (ref.path, ref.max_definition_level, ref.max_repetition_level) == (
            path,
            max_def,
            max_rep,
        )
        nullable = replace(spec, field=spec.field.with_nullable(True))
        values = to_physical(ref.values, nullable).values
        defs = np.array(ref.def_levels, dtype=np.uint8) if max_def else None
        reps = np.array(ref.rep_levels, dtype=np.uint8) if max_rep else None
        result.append(LeafInput(values, defs, reps, table.num_rows))
    return result


def encode_leaves(
    schema: NestedFileSchema,
    table: pa.Table,
    options: WriteOptions,
    encryptor: FileEncryptor | None = None,
    row_group_ordinal: int = 0,
) -> list[EncodedChunk]:
    chunks = []
    for ordinal, (spec, max_rep, path, leaf) in enumerate(
        zip(
            schema.columns,
            schema.max_repetition_levels,
            schema.paths,
            leaf_inputs(schema, table),
            strict=True,
        )
    ):
        crypto = None if encryptor is None else encryptor.chunk_crypto(row_group_ordinal, ordinal)
        settings = replace(
            chunk_settings(spec, options), path_in_schema=path, max_repetition_level=max_rep
        )
        chunks.append(
            encode_chunk(
                settings,
                leaf.values,
                leaf.def_levels,
                leaf.num_rows,
                crypto,
                rep_levels=leaf.rep_levels,
            )
        )
    return chunks


def write_nested_file(
    table: pa.Table,
    options: WriteOptions,
    row_group_size: int,
    encryption: FileEncryption | None = None,
) -> bytes:
    """The whole file: ``table`` in row groups of ``row_group_size`` records."""
    schema = build_schema(table.schema)
    encryptor = None
    if encryption is not None:
        encryptor = encryption._open_file([spec.name for spec in schema.columns])
    writer = FileWriter(schema, options, encryptor=encryptor)  # type: ignore[arg-type]
    data = writer.start()
    for ordinal, start in enumerate(range(0, max(table.num_rows, 1), row_group_size)):
        part = table.slice(start, row_group_size)
        chunks = encode_leaves(schema, part, options, encryptor, ordinal)
        data += writer.add_row_group(chunks, part.num_rows)
    return data + writer.footer()
