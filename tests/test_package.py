"""Package-level contracts: public names, error hierarchy, import direction, code quality."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import streamwrite
from streamwrite import errors

ROOT = Path(__file__).resolve().parents[1]


def test_public_names_resolve_and_match_the_lazy_table() -> None:
    assert sorted(streamwrite.__all__) == sorted(streamwrite._EXPORTS)
    for name in streamwrite.__all__:
        assert getattr(streamwrite, name) is not None
    with pytest.raises(AttributeError):
        streamwrite.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_is_a_streamwrite_error_and_survives_pickling(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, errors.StreamwriteError)
    if issubclass(cls, errors.CorruptFileError):
        exc = cls("Column 'x' is broken.", 1234)
    elif cls is errors.StaleBatchError:
        exc = cls("job-1", 3, 17)
    else:
        exc = cls("Column 'x' is broken.")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert str(back) == str(exc)


def test_error_families_subclass_the_builtin_exceptions_callers_catch() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.SchemaError, ValueError)
    assert issubclass(errors.StreamwriteIOError, OSError)
    assert issubclass(errors.StateError, RuntimeError)
    assert str(errors.CorruptFileError("Bad page.", 77)) == "Bad page. (at byte offset 77)"


def _modules_after_import(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(out.stdout.split())


def test_workers_and_format_do_not_import_the_async_shell() -> None:
    loaded = _modules_after_import(
        "import workers.jobs, workers.decode, streamwrite.format.structs"
    )
    assert not {"anyio", "streamwrite.writer", "streamwrite.reader"} & loaded


def test_importing_streamwrite_is_lazy() -> None:
    loaded = _modules_after_import("import streamwrite")
    assert "pyarrow" not in loaded and "workers.chunk" not in loaded


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:]


def test_ruff_is_clean() -> None:
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *args], capture_output=True, text=True, cwd=ROOT
        )
        assert proc.returncode == 0, proc.stdout[-4000:]
