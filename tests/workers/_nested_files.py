"""Nested Parquet files from the chunk encoder alone (no shredder, no schema mapping needed).

The schema elements are built here as parquet-format / pyarrow write them (the lead's design,
section 1), and the levels come from a per-value reference shredder (Dremel: Python objects of
``to_pylist()`` walked recursively). Each leaf is encoded with ``workers.chunk.encode_chunk``
and the file is laid out by ``streamwrite.layout.file_writer.FileWriter``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
from workers.chunk import encode_chunk


@dataclass
class Node:
    """One Arrow field of the schema tree with its levels (design section 2)."""

    name: str
    kind: str  # "leaf", "struct", "list", "map"
    nullable: bool
    def_level: int  # of an entry where this node is present
    rep_level: int  # LIST/MAP: level of its repeated elements; else the enclosing one
    children: list[Node] = field(default_factory=list)
    leaf: int | None = None
    leaves: list[int] = field(default_factory=list)


@dataclass
class NestedFileSchema:
    """A SchemaPort for FileWriter, with the tree and the leaves' settings inputs."""

    arrow_schema: pa.Schema
    elements: list[SchemaElement]
    columns: list[ColumnSpec]
    max_repetition_levels: list[int]
    paths: list[tuple[str, ...]]
    roots: list[Node]

    @property
    def arrow_schema_value(self) -> str:
        return encode_arrow_schema(self.arrow_schema)


def _group(name: str, nullable: bool, num_children: int, **extra: Any) -> SchemaElement:
    repetition = FieldRepetitionType.OPTIONAL if nullable else FieldRepetitionType.REQUIRED
    return SchemaElement(name=name, repetition_type=repetition, num_children=num_children, **extra)


def build_schema(schema: pa.Schema) -> NestedFileSchema:
    out = NestedFileSchema(schema, [], [], [], [], [])

    def walk(f: pa.Field, name: str, parent_def: int, rep: int, path: tuple[str, ...]) -> Node:
        dtype = f.type
        d = parent_def + int(f.nullable)
        here = (*path, name)
        if pa.types.is_struct(dtype):
            node = Node(name, "struct", f.nullable, d, rep)
            out.elements.append(_group(name, f.nullable, dtype.num_fields))
            for i in range(dtype.num_fields):
                child = dtype.field(i)
                node.children.append(walk(child, child.name, d, rep, here))
        elif pa.types.is_map(dtype):
            node = Node(name, "map", f.nullable, d, rep + 1)
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
            node.children.append(walk(dtype.key_field, "key", d + 1, rep + 1, kv))
            node.children.append(walk(dtype.item_field, "value", d + 1, rep + 1, kv))
        elif (
            pa.types.is_list(dtype)
            or pa.types.is_large_list(dtype)
            or pa.types.is_fixed_size_list(dtype)
        ):
            node = Node(name, "list", f.nullable, d, rep + 1)
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
            node.children.append(walk(dtype.value_field, "element", d + 1, rep + 1, lst))
        else:
            index = len(out.columns)
            spec = arrow_to_parquet(pa.schema([f.with_name(name)])).columns[0]
            spec = replace(spec, index=index, name=".".join(here), max_definition_level=d)
            out.elements.append(spec.element)
            out.columns.append(spec)
            out.max_repetition_levels.append(rep)
            out.paths.append(here)
            node = Node(name, "leaf", f.nullable, d, rep, leaf=index, leaves=[index])
            return node
        node.leaves = [leaf for child in node.children for leaf in child.leaves]
        return node

    for f in schema:
        out.roots.append(walk(f, f.name, 0, 0, ()))
    root = SchemaElement(
        name=ROOT_NAME, repetition_type=FieldRepetitionType.REQUIRED, num_children=len(schema)
    )
    out.elements.insert(0, root)
    return out


Entries = list[list[tuple[int, int, Any]]]  # per leaf: (rep, def, value or None)


def _shred(node: Node, value: Any, rep: int, out: Entries) -> None:
    if value is None:
        assert node.nullable, node.name
        for leaf in node.leaves:
            out[leaf].append((rep, node.def_level - 1, None))
        return
    if node.kind == "leaf":
        assert node.leaf is not None
        out[node.leaf].append((rep, node.def_level, value))
    elif node.kind == "struct":
        for child in node.children:
            _shred(child, value[child.name], rep, out)
    else:
        items = list(value)
        if not items:
            for leaf in node.leaves:
                out[leaf].append((rep, node.def_level, None))
        for i, item in enumerate(items):
            r = rep if i == 0 else node.rep_level
            if node.kind == "list":
                _shred(node.children[0], item, r, out)
            else:
                key, val = item
                _shred(node.children[0], key, r, out)
                _shred(node.children[1], val, r, out)


def reference_shred(schema: NestedFileSchema, table: pa.Table) -> Entries:
    """Per leaf, its level entries in order (the Dremel algorithm, one value at a time)."""
    out: Entries = [[] for _ in schema.columns]
    for node, column in zip(schema.roots, table.columns, strict=True):
        for value in column.to_pylist():
            _shred(node, value, 0, out)
    return out


@dataclass
class LeafInput:
    values: Any
    def_levels: Any
    rep_levels: Any
    num_rows: int


def leaf_inputs(schema: NestedFileSchema, table: pa.Table) -> list[LeafInput]:
    """Physical values and level arrays of every leaf (from :func:`reference_shred`)."""
    result = []
    for spec, max_rep, entries in zip(
        schema.columns, schema.max_repetition_levels, reference_shred(schema, table), strict=True
    ):
        max_def = spec.max_definition_level
        present = [v for _, d, v in entries if d == max_def]
        nullable = replace(spec, field=spec.field.with_nullable(True))
        values = to_physical(pa.array(present, spec.field.type), nullable).values
        defs = np.array([d for _, d, _ in entries], dtype=np.uint8) if max_def else None
        reps = np.array([r for r, _, _ in entries], dtype=np.uint8) if max_rep else None
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
