"""Decryption keys on the command line: ``--footer-key HEX``, ``--column-key NAME=HEX``
(repeatable), ``--aad-prefix TEXT``, ``--keys-file PATH`` or ``$STREAMWRITE_KEYS`` (JSON
``{"footer": HEX, "columns": {NAME: HEX}, "aad_prefix": TEXT}``). Options win over the file,
the file over the environment. Key bytes are never printed.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from streamwrite import DecryptionConfig
from streamwrite.errors import ConfigError

__all__ = ["KEYS_ENV", "add_key_options", "decryption_from_args"]

KEYS_ENV = "STREAMWRITE_KEYS"
"""Environment variable holding the keys JSON (as ``--keys-file``)."""


def _hex_key(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise ConfigError(f"The {what} must be a hex string.")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise ConfigError(f"The {what} is not valid hex.") from None  # never echo the value
    if len(key) not in (16, 24, 32):
        raise ConfigError(f"The {what} is {len(key)} bytes long; AES needs 16, 24 or 32 bytes.")
    return key


def _keys_json(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"The keys in {where} are not valid JSON.") from None
    if not isinstance(data, dict) or not isinstance(data.get("columns", {}), dict):
        raise ConfigError(
            f'The keys in {where} must be {{"footer": HEX, "columns": {{NAME: HEX}}, '
            '"aad_prefix": TEXT}.'
        )
    return data


def decryption_from_args(args: argparse.Namespace) -> DecryptionConfig | None:
    """The keys given by options, ``--keys-file`` or ``STREAMWRITE_KEYS`` (in that order).

    Returns:
        The config, or None when no key was given.

    Raises:
        ConfigError: Malformed keys (the message never holds key bytes).
    """
    data: dict[str, Any] = {}
    if args.keys_file is not None:
        try:
            text = Path(args.keys_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Cannot read the keys file {args.keys_file!r}: {exc}") from None
        data = _keys_json(text, f"the file {args.keys_file!r}")
    elif os.environ.get(KEYS_ENV):
        data = _keys_json(os.environ[KEYS_ENV], f"${KEYS_ENV}")
    footer = data.get("footer")
    footer_key = None if footer is None else _hex_key(footer, "footer key")
    columns = {
        str(name): _hex_key(value, f"key of column {name!r}")
        for name, value in data.get("columns", {}).items()
    }
    prefix = data.get("aad_prefix")
    if args.footer_key is not None:
        footer_key = _hex_key(args.footer_key, "--footer-key")
    for item in args.column_key:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError("--column-key takes NAME=HEX.")
        columns[name] = _hex_key(value, f"key of column {name!r}")
    if args.aad_prefix is not None:
        prefix = args.aad_prefix
    if prefix is not None and not isinstance(prefix, str):
        raise ConfigError("aad_prefix must be a string.")
    if footer_key is None and not columns and prefix is None:
        return None
    return DecryptionConfig.from_keys(
        footer_key=footer_key,
        column_keys=columns,
        aad_prefix=None if prefix is None else prefix.encode("utf-8"),
    )


def add_key_options(parser: argparse.ArgumentParser) -> None:
    keys = parser.add_argument_group("decryption keys (encrypted files)")
    keys.add_argument("--footer-key", metavar="HEX", help="footer key, hex")
    keys.add_argument(
        "--column-key", metavar="NAME=HEX", action="append", default=[], help="a column's key"
    )
    keys.add_argument("--aad-prefix", metavar="TEXT", help="AAD prefix the file does not store")
    keys.add_argument(
        "--keys-file",
        metavar="PATH",
        help=f'JSON {{"footer": HEX, "columns": {{NAME: HEX}}, "aad_prefix": TEXT}} '
        f"(default: ${KEYS_ENV})",
    )
