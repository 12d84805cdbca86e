"""``daemon.toml`` (file, then ``STREAMWRITE_*``, then flags), tokens and table names."""

from __future__ import annotations

import base64
from pathlib import Path

import pyarrow as pa
import pytest

from streamwrite.daemon.auth import Authenticator, TokenEntry, check_table_name, hash_token
from streamwrite.daemon.config import load_config, parse_type
from streamwrite.daemon.errors import BadRequestError, ForbiddenError, UnauthorizedError
from streamwrite.errors import ConfigError, StreamwriteError


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "daemon.toml"
    path.write_text('data_root = "/a"\n[http]\nlisten = "127.0.0.1:1"\nmax_body_size = 10\n')
    config = load_config(path, environ={})
    assert config.data_root == Path("/a") and config.http["listen"] == "127.0.0.1:1"
    assert config.flight["listen"] == "127.0.0.1:8815"  # a default
    env = {"STREAMWRITE_HTTP_LISTEN": "0.0.0.0:2", "STREAMWRITE_HTTP_MAX_BODY_SIZE": "20",
           "STREAMWRITE_DATA_ROOT": "/b", "STREAMWRITE_UNRELATED": "x"}  # fmt: skip
    config = load_config(path, environ=env)
    assert config.http["listen"] == "0.0.0.0:2" and config.http["max_body_size"] == 20
    assert config.data_root == Path("/b")
    config = load_config(path, environ=env, overrides=['http.listen="h:3"', "data_root=/c"])
    assert config.http["listen"] == "h:3" and config.data_root == Path("/c")
    assert config.sources == (str(path), "STREAMWRITE_DATA_ROOT", "STREAMWRITE_HTTP_LISTEN",
                              "STREAMWRITE_HTTP_MAX_BODY_SIZE", "--set http.listen",
                              "--set data_root")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[http]\nlisten = 1\n", "must be a string"),
        ('[http]\nlistn = "x"\n', "unknown keys"),
        ("[htp]\n", "Unknown settings"),
        ("[limits]\nin_flight_bytes = -1\n", "non-negative"),
        ("[ilp]\nauto_create_tables = 1\n", "true or false"),
        ('[ilp]\ntimestamp_unit = "ms"\n', "us' or 'ns"),
        ("[[tokens]]\nname = 'x'\n", "needs name and sha256"),
        ("[[tokens]]\nname = 'x'\nsha256 = 'abc'\n", "64 hex digits"),
        (f"[[tokens]]\nname = 'x'\nsha256 = '{'0' * 64}'\nrights = ['drop']\n", "unknown rights"),
        ("[tables.t]\ntimestamp = 'ts'\n", "needs a schema"),
        ("[tables.t]\nschema = { a = 'int128' }\n", "Unknown column type"),
        ("[tables.'../x']\nschema = { a = 'int64' }\n", "Invalid table name"),
        ("data_root = 'x'\n[http\n", "not valid TOML"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "daemon.toml"
    path.write_text(text if text.startswith("data_root") else 'data_root = "/a"\n' + text)
    with pytest.raises(ConfigError, match=message):
        load_config(path, environ={})


def test_data_root_is_required() -> None:
    with pytest.raises(ConfigError, match="data_root is required"):
        load_config(None, environ={})


def test_schema_types() -> None:
    assert parse_type("timestamp[us, UTC] not null") == (pa.timestamp("us", tz="UTC"), False)
    assert parse_type("symbol") == (pa.dictionary(pa.int32(), pa.string()), True)
    assert parse_type("decimal128(18, 3)") == (pa.decimal128(18, 3), True)


def test_tokens_schemes_rights_and_globs() -> None:
    auth = Authenticator(
        [
            TokenEntry("ingest", hash_token("t1"), ("trades", "sensor_*"), frozenset({"write"})),
            TokenEntry("admin", hash_token("t2")),
        ]
    )
    assert auth.authenticate("Bearer t1").name == "ingest"
    assert auth.authenticate("Token t2").name == "admin"
    basic = base64.b64encode(b"ingest:t1").decode()
    assert auth.authenticate(f"Basic {basic}").name == "ingest"
    wrong_name = base64.b64encode(b"admin:t1").decode()
    for header in (None, "", "Bearer", "Bearer t3", f"Basic {wrong_name}", "Basic !!", "Digest t1"):
        with pytest.raises(UnauthorizedError):
            auth.authenticate(header)
    principal = auth.authenticate("Bearer t1")
    principal.require("write", "sensor_7")
    for right, table in (("write", "other"), ("create", "trades"), ("read", "trades")):
        with pytest.raises(ForbiddenError, match=right):
            principal.require(right, table)
    assert Authenticator([]).authenticate(None).name == "anonymous"
    with pytest.raises(ConfigError, match="unique"):
        Authenticator([TokenEntry("a", hash_token("x")), TokenEntry("a", hash_token("y"))])


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../x", "a/b", "a\\b", "a\x00b", "_txn", ".hidden", "x" * 128, "a:b", "é" * 64],
)
def test_hostile_table_names(name: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        check_table_name(name)
    assert isinstance(caught.value, StreamwriteError)


def test_fine_table_names() -> None:
    for name in ("trades", "cpu-usage", "a.b", "x" * 127, "日本"):
        assert check_table_name(name) == name


def test_serve_without_the_daemon_extra_says_what_to_install(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['aiohttp'] = None; from streamwrite.cli import main; "
        f"sys.exit(main(['serve', '--data-root', {str(tmp_path / 'data')!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'streamwrite[daemon]'" in proc.stderr and "aiohttp" in proc.stderr
    assert not (tmp_path / "data").exists()  # nothing made
