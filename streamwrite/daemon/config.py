"""``daemon.toml``: the daemon's settings, from the file, then ``STREAMWRITE_*``, then flags.

Every key has a default but ``data_root``; a key of a section is overridden by the variable
``STREAMWRITE_<SECTION>_<KEY>`` (upper case; a top-level key by ``STREAMWRITE_<KEY>``), whose
value is read as a TOML value when it parses as one (``8``, ``true``, ``["a"]``) and as a
string otherwise; ``--set section.key=value`` flags (and the named flags of ``streamwrite
serve``) win over both. Unknown keys are errors, so a typo never silently keeps a default::

    data_root = "/var/lib/streamwrite"     # table t lives in data_root/t

    [http]
    listen = "127.0.0.1:9000"              # "" disables HTTP
    max_body_size = 67108864               # bytes on the wire: 413 past it, before buffering
    max_decompressed_size = 268435456      # bytes after gzip: 413 past it (a bomb stops early)
    body_timeout_seconds = 10.0            # a body must arrive within this (slowloris): 408
    tls_cert = ""                          # PEM files: HTTPS when both are set
    tls_key = ""

    [flight]
    listen = "127.0.0.1:8815"              # "" disables Arrow Flight
    tls_cert = ""
    tls_key = ""

    [limits]
    in_flight_bytes = 268435456            # memory of writes in flight (4x each body): 503 past
    table_queue = 64                       # writes accepted and not yet durable, per table
    retry_after_seconds = 1                # the Retry-After of a 503

    [ilp]
    auto_create_tables = true              # a table from its first line (needs "create")
    auto_create_columns = true             # new nullable columns (needs "add_column")
    dedup_window_seconds = 900.0           # a retried body within it writes nothing; 0: off
    timestamp_unit = "us"                  # the designated "timestamp" column: us or ns
    partition_by = "day"                   # of auto-created tables: hour, day, month, none

    [engine]
    workers = 0                            # encode in N worker processes; 0: in the server
    parse_workers = 2                      # parse ILP bodies in N processes; 0: in the server
    commit_interval_seconds = 1.0          # buffered rows (Flight without acks) wait at most this
    compaction_interval_seconds = 60.0     # 0: no background compaction
    segment_row_groups = 128

    [log]
    level = "info"                         # debug, info, warning, error

    [tables.trades]                        # declared tables (optional): created at start
    timestamp = "ts"
    partition_by = "day"
    schema = { ts = "timestamp[us, UTC]", symbol = "symbol", price = "float64", qty = "int64" }

    [[tokens]]                             # see streamwrite.daemon.auth; none: open daemon
    name = "ingest"
    sha256 = "..."
    tables = ["*"]
    rights = ["write", "create", "add_column", "read"]

Schema type names: ``bool``, ``int8`` .. ``int64``, ``uint8`` .. ``uint64``, ``float32``,
``float64``, ``string``, ``binary``, ``symbol`` (dictionary-encoded string, as ILP tags),
``date32``, ``timestamp[s|ms|us|ns]`` with an optional ``, UTC`` (or any zone), and
``decimal128(p, s)``; a trailing ``not null`` makes the column required.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.daemon.auth import TokenEntry, check_table_name, token_entries
from streamwrite.daemon.errors import DaemonError
from streamwrite.errors import ConfigError

__all__ = ["DaemonConfig", "TableConfig", "load_config", "parse_listen", "parse_type"]

ENV_PREFIX = "STREAMWRITE_"

DEFAULTS: dict[str, Any] = {
    "data_root": None,
    "http": {
        "listen": "127.0.0.1:9000",
        "max_body_size": 64 << 20,
        "max_decompressed_size": 256 << 20,
        "body_timeout_seconds": 10.0,
        "tls_cert": "",
        "tls_key": "",
    },
    "flight": {"listen": "127.0.0.1:8815", "tls_cert": "", "tls_key": ""},
    "limits": {"in_flight_bytes": 256 << 20, "table_queue": 64, "retry_after_seconds": 1},
    "ilp": {
        "auto_create_tables": True,
        "auto_create_columns": True,
        "dedup_window_seconds": 900.0,
        "timestamp_unit": "us",
        "partition_by": "day",
    },
    "engine": {
        "workers": 0,
        "parse_workers": 2,
        "commit_interval_seconds": 1.0,
        "compaction_interval_seconds": 60.0,
        "segment_row_groups": 128,
    },
    "log": {"level": "info"},
}
"""Every section and key with its default (``tables`` and ``tokens`` are lists of entries)."""

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "symbol": pa.dictionary(pa.int32(), pa.string()),
    "date32": pa.date32(),
}
_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:,\s*(?:tz=)?([^\]]+))?\]")
_DECIMAL = re.compile(r"decimal128\((\d+),\s*(\d+)\)")


def parse_type(text: str) -> tuple[pa.DataType, bool]:
    """A schema type name (module docstring) as an Arrow type, and whether it is nullable.

    Raises:
        ConfigError: an unknown type name.
    """
    spec = text.strip()
    nullable = True
    if spec.lower().endswith("not null"):
        spec, nullable = spec[: -len("not null")].strip(), False
    if spec in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[spec], nullable
    if match := _TIMESTAMP.fullmatch(spec):
        return pa.timestamp(match.group(1), tz=match.group(2)), nullable
    if match := _DECIMAL.fullmatch(spec):
        return pa.decimal128(int(match.group(1)), int(match.group(2))), nullable
    raise ConfigError(
        f"Unknown column type {text!r}: use one of {sorted(_SIMPLE_TYPES)}, "
        "timestamp[unit, zone] or decimal128(p, s) (optionally followed by 'not null')."
    )


@dataclass(frozen=True)
class TableConfig:
    """A declared table: its schema, designated timestamp and partitioning."""

    name: str
    schema: pa.Schema
    timestamp: str | None
    partition_by: str | None


@dataclass(frozen=True)
class DaemonConfig:
    """The daemon's settings (see the module docstring for every key)."""

    data_root: Path
    http: dict[str, Any]
    flight: dict[str, Any]
    limits: dict[str, Any]
    ilp: dict[str, Any]
    engine: dict[str, Any]
    log: dict[str, Any]
    tables: tuple[TableConfig, ...] = ()
    tokens: tuple[TokenEntry, ...] = ()
    sources: tuple[str, ...] = field(default=(), compare=False)
    """Where settings came from (the file, the variables and flags applied), for the log."""


def _coerce(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _set(raw: dict[str, Any], dotted: str, value: Any, source: str) -> None:
    section, _, key = dotted.partition(".")
    if not key:
        if section not in ("data_root", "tokens", "tables"):
            raise ConfigError(f"{source}: unknown setting {dotted!r}.")
        raw[section] = value
        return
    if section not in DEFAULTS or not isinstance(DEFAULTS[section], dict):
        raise ConfigError(f"{source}: unknown section {section!r} in {dotted!r}.")
    raw.setdefault(section, {})[key] = value


def _env_overrides(environ: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    names = {"DATA_ROOT": "data_root", "TOKENS": "tokens"}
    for section, keys in DEFAULTS.items():
        if isinstance(keys, dict):
            for key in keys:
                names[f"{section}_{key}".upper()] = f"{section}.{key}"
    found = []
    for variable, value in environ.items():
        if variable.startswith(ENV_PREFIX) and variable[len(ENV_PREFIX) :] in names:
            found.append((names[variable[len(ENV_PREFIX) :]], _coerce(value), variable))
    return sorted(found)


def _check_value(section: str, key: str, value: Any) -> Any:
    default = DEFAULTS[section][key]
    where = f"{section}.{key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}.")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where} must be a non-negative integer, got {value!r}.")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{where} must be a non-negative number, got {value!r}.")
        value = float(value)
    elif not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, got {value!r}.")
    return value


def _tables(raw: Any) -> tuple[TableConfig, ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f"[tables] must be tables of tables ([tables.NAME]), got {raw!r}.")
    tables = []
    for name, spec in raw.items():
        try:
            check_table_name(name)
        except DaemonError as exc:
            raise ConfigError(f"[tables.{name}]: {exc.message}") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            raise ConfigError(f'[tables.{name}] needs a schema = {{column = "type"}} table.')
        unknown = set(spec) - {"schema", "timestamp", "partition_by"}
        if unknown:
            raise ConfigError(f"[tables.{name}]: unknown keys {sorted(unknown)}.")
        fields = []
        for column, type_name in spec["schema"].items():
            if not isinstance(type_name, str):
                raise ConfigError(f"[tables.{name}] column {column!r}: the type must be a string.")
            dtype, nullable = parse_type(type_name)
            fields.append(pa.field(column, dtype, nullable=nullable))
        partition_by = spec.get("partition_by", "day")
        tables.append(
            TableConfig(
                name,
                pa.schema(fields),
                spec.get("timestamp"),
                None if partition_by in (None, "none") else partition_by,
            )
        )
    return tuple(tables)


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
) -> DaemonConfig:
    """Read ``path`` (TOML), apply ``STREAMWRITE_*`` variables, then ``overrides``
    (``"section.key=value"``, as ``--set`` gives them).

    Raises:
        ConfigError: the file does not parse, an unknown key, a wrong type, no ``data_root``.
    """
    raw: dict[str, Any] = {}
    sources = []
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"Cannot read the config file {str(path)!r}: {exc}.") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"The config file {str(path)!r} is not valid TOML: {exc}.") from exc
        sources.append(str(path))
    for dotted, value, variable in _env_overrides(os.environ if environ is None else environ):
        _set(raw, dotted, value, variable)
        sources.append(variable)
    for item in overrides:
        dotted, sep, text = item.partition("=")
        if not sep:
            raise ConfigError(f"--set takes section.key=value, got {item!r}.")
        _set(raw, dotted.strip(), _coerce(text.strip()), f"--set {dotted.strip()}")
        sources.append(f"--set {dotted.strip()}")
    unknown = set(raw) - set(DEFAULTS) - {"tables", "tokens"}
    if unknown:
        raise ConfigError(f"Unknown settings {sorted(unknown)} in the daemon config.")
    sections: dict[str, dict[str, Any]] = {}
    for section, keys in DEFAULTS.items():
        if not isinstance(keys, dict):
            continue
        given = raw.get(section, {})
        if not isinstance(given, dict):
            raise ConfigError(f"[{section}] must be a table, got {given!r}.")
        extra = set(given) - set(keys)
        if extra:
            raise ConfigError(f"[{section}]: unknown keys {sorted(extra)}; known: {sorted(keys)}.")
        sections[section] = {k: _check_value(section, k, given.get(k, d)) for k, d in keys.items()}
    data_root = raw.get("data_root")
    if not isinstance(data_root, str) or not data_root:
        raise ConfigError("data_root is required: the directory that holds the tables.")
    if sections["ilp"]["timestamp_unit"] not in ("us", "ns"):
        raise ConfigError("ilp.timestamp_unit must be 'us' or 'ns'.")
    if sections["ilp"]["partition_by"] not in ("hour", "day", "month", "none"):
        raise ConfigError("ilp.partition_by must be hour, day, month or none.")
    for section in ("http", "flight"):
        if sections[section]["listen"]:
            parse_listen(sections[section]["listen"], f"{section}.listen")
        if bool(sections[section]["tls_cert"]) != bool(sections[section]["tls_key"]):
            raise ConfigError(
                f"[{section}] needs both tls_cert and tls_key (PEM files), or neither."
            )
    if sections["log"]["level"] not in ("debug", "info", "warning", "error"):
        raise ConfigError("log.level must be debug, info, warning or error.")
    tokens = raw.get("tokens", [])
    if not isinstance(tokens, list) or not all(isinstance(t, dict) for t in tokens):
        raise ConfigError("tokens must be an array of tables ([[tokens]]).")
    return DaemonConfig(
        data_root=Path(data_root),
        tables=_tables(raw.get("tables", {})),
        tokens=tuple(token_entries(tokens)),
        sources=tuple(sources),
        **sections,
    )


def parse_listen(listen: str, where: str) -> tuple[str, int]:
    """``"host:port"`` as ``(host, port)`` (ConfigError otherwise)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"{where} must be host:port, got {listen!r}.")
    return host.strip("[]") or "0.0.0.0", int(port)
