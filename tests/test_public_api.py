"""The public API, anyio's way: a curated ``__all__``, public ``__module__``s, no private leaks.

The public API is :data:`PUBLIC_PACKAGES` (their ``__all__``) plus ``streamwrite.errors`` and
the executor contract's two modules (:data:`EXECUTOR_CONTRACT`); every other module under
``streamwrite`` (and ``workers``) is private. Checked here:

- each package's ``__all__`` is a tuple equal to its lazy export table and to ``dir()``'s
  public names, and every name the README's Python snippets use from streamwrite is in it;
- every exported class and function reports the package it is exported from as its
  ``__module__``, and pickles by that name (classes, instances, and in a fresh interpreter);
- no public signature or docstring names a private module: the walk covers every export, the
  public methods and properties of exported classes (inherited ones from streamwrite bases
  included) and their public fields, and reads annotations from the source (``if
  TYPE_CHECKING:`` imports included), so ``executor: streamwrite._pool.Executor`` fails.

Exceptions crossing the process pool are tested in ``tests/pool/test_process.py``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pickle
import re
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import anyio
import pyarrow as pa
import pytest

import streamwrite

ROOT = Path(__file__).resolve().parents[1]

PUBLIC_PACKAGES = (
    "streamwrite",
    "streamwrite.crypto",
    "streamwrite.inspect",
    "streamwrite.spark",
    "streamwrite.testing",
)
HYPOTHESIS_MODULES = ("streamwrite.testing.strategies", "streamwrite.testing.live_machine")
"""Public modules of ``streamwrite.testing`` that need hypothesis (the ``testing`` extra), so
the package does not re-export them: users import from the module (its ``__all__``)."""
EXECUTOR_CONTRACT = frozenset({"workers.jobs", "streamwrite.format.chunk"})
"""The executor contract's modules are public: an :class:`streamwrite.Executor` of the user's
own (Dask, Ray, a remote pool) receives a ``workers.jobs.Job``, runs it with
``workers.jobs.run_job`` in any process (DESIGN: ring 2's only entry point; a worker imports
``workers``, never the async shell) and hands back the ``streamwrite.format.chunk.EncodedChunk``
unchanged. Jobs pickle by these names, so re-exporting them as ``streamwrite.X`` would rename
the pickled classes and make their ring 2 fields (chunk settings, ciphers, Thrift structs) look
like API; the contract is the names ``Job``, ``run_job`` and ``EncodedChunk``, the jobs opaque."""
PUBLIC_MODULES = frozenset(
    {*PUBLIC_PACKAGES, *HYPOTHESIS_MODULES, "streamwrite.errors", *EXECUTOR_CONTRACT}
)
"""``streamwrite.errors`` is public too (its names are all exported as ``streamwrite.X``)."""
PRODUCT_PACKAGES = ("streamwrite", "workers")

FACTORY_MADE = {
    "streamwrite.LiveFile": "streamwrite.LiveFile.open",
    "streamwrite.ProcessPool": "streamwrite.ProcessPool.open",
    "streamwrite.Table": "streamwrite.open_table",
    "streamwrite.TableSnapshot": "streamwrite.Table.snapshot",
    "streamwrite.StagedBatch": "streamwrite.Table.stage",
    "streamwrite.SnapshotFileSystem": "streamwrite.snapshot_filesystem",
    # data skipping: what a snapshot says of a filtered read
    "streamwrite.SegmentFiles": "streamwrite.TableSnapshot.files",
    "streamwrite.TablePlan": "streamwrite.TableSnapshot.plan",
    "streamwrite.SegmentPlan": "streamwrite.TablePlan.segments",
    # the pyarrow-shaped views of a footer, made from the file they describe
    "streamwrite.FileMetaData": "streamwrite.ParquetFile.metadata",
    "streamwrite.ParquetSchemaView": "streamwrite.ParquetFile.schema",
    "streamwrite.ColumnSchema": "streamwrite.ParquetSchemaView.column",
    "streamwrite.RowGroupMetaData": "streamwrite.FileMetaData.row_group",
    "streamwrite.ColumnChunkMetaData": "streamwrite.RowGroupMetaData.column",
    "streamwrite.Statistics": "streamwrite.ColumnChunkMetaData.statistics",
    # the plan of a filtered read, made by the file it reads
    "streamwrite.ReadPlan": "streamwrite.ParquetFile.plan",
    "streamwrite.RowGroupPlan": "streamwrite.ReadPlan.row_groups",
}
"""Classes whose instances only a factory makes: their ``__init__`` takes the package's own
parts and is not walked (their public methods, properties and fields are)."""


# -- the export tables --------------------------------------------------------------------------


def _package(name: str) -> ModuleType:
    return importlib.import_module(name)


def _exports() -> Iterator[tuple[str, str, Any]]:
    """``(package, name, value)`` for every export of every public package."""
    for package in PUBLIC_PACKAGES:
        module = _package(package)
        for name in module.__all__:
            yield package, name, getattr(module, name)


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_all_is_a_curated_tuple_matching_the_lazy_table_and_dir(package: str) -> None:
    module = _package(package)
    assert isinstance(module.__all__, tuple)
    assert len(set(module.__all__)) == len(module.__all__)
    assert set(module.__all__) == set(module._EXPORTS)
    assert {name for name in dir(module) if not name.startswith("_")} == set(module.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    for name in module.__all__:
        assert getattr(module, name) is getattr(_package(module._EXPORTS[name]), name)


def test_no_object_is_exported_twice() -> None:
    seen: dict[int, str] = {}
    for package, name, value in _exports():
        if isinstance(value, type | FunctionType):
            assert id(value) not in seen, f"{package}.{name} is also {seen[id(value)]}"
            seen[id(value)] = f"{package}.{name}"


@pytest.mark.parametrize(
    ("package", "name"),
    [(package, name) for package in PUBLIC_PACKAGES for name in _package(package).__all__],
)
def test_every_export_reports_its_public_module_and_pickles_by_it(package: str, name: str) -> None:
    value = getattr(_package(package), name)
    if not isinstance(value, type | FunctionType):
        return  # a constant: no module of its own
    assert value.__module__ == package
    assert value.__qualname__ == name
    assert pickle.loads(pickle.dumps(value)) is value


def test_public_module_names_show_in_reprs_and_tracebacks() -> None:
    assert repr(streamwrite.LiveFile) == "<class 'streamwrite.LiveFile'>"
    assert repr(streamwrite.WorkerError) == "<class 'streamwrite.WorkerError'>"
    error = streamwrite.StaleBatchError("job-1", 3, 17)
    assert pickle.loads(pickle.dumps(error)).last_batch_id == 17
    commit = streamwrite.Commit(1, 100, 10, 1, 42)
    assert pickle.loads(pickle.dumps(commit)) == commit


FRESH_UNPICKLE = """
import pickle, sys
value = pickle.loads(sys.stdin.buffer.read())
print(type(value).__module__, type(value).__qualname__, value)
"""


def test_pickles_load_in_a_fresh_interpreter_through_the_lazy_exports() -> None:
    """A pickle names ``streamwrite.Commit``; a process that never imported the defining
    module (a pool worker, say) still loads it: ``streamwrite.__getattr__`` imports it."""
    for value in (
        streamwrite.Commit(3, 4096, 30, 3, None),
        streamwrite.SchemaError("Column 'x' is broken."),
        streamwrite.CorruptFileError("Bad page.", 77),
    ):
        data = pickle.dumps(value)
        assert b"streamwrite.layout" not in data and b"streamwrite.errors" not in data
        out = subprocess.run(
            [sys.executable, "-c", FRESH_UNPICKLE],
            input=data,
            capture_output=True,
            check=True,
            cwd=ROOT,
        ).stdout.decode()
        assert out.split(" ", 2)[:2] == ["streamwrite", type(value).__qualname__]
        assert out.split(" ", 2)[2].strip() == str(value)


def test_importing_the_public_packages_stays_light() -> None:
    """A worker importing ``streamwrite.format`` (or any public package) loads neither pyarrow
    nor anyio: every export is imported on first access."""
    code = (
        "import sys, streamwrite, streamwrite.crypto, streamwrite.spark, streamwrite.testing, "
        "streamwrite.format.structs; print(' '.join(sys.modules))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.split()
    )
    assert not {"pyarrow", "anyio", "numpy", "pyspark", "cryptography"} & loaded


# -- the README ---------------------------------------------------------------------------------


def _readme_snippets() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def readme_names() -> set[tuple[str, str]]:
    """``(module, name)`` for every streamwrite name the README's Python snippets use:
    ``streamwrite.X``, ``streamwrite.sub.X``, ``from streamwrite[.sub] import X`` (and ``from
    workers.jobs import X``, the executor contract)."""
    found: set[tuple[str, str]] = set()
    for snippet in _readme_snippets():
        for node in ast.walk(ast.parse(snippet)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                PRODUCT_PACKAGES
            ):
                found |= {(node.module or "", alias.name) for alias in node.names}
            elif isinstance(node, ast.Import):
                found |= {
                    (alias.name.rsplit(".", 1)[0], alias.name.rsplit(".", 1)[1])
                    for alias in node.names
                    if alias.name.startswith("streamwrite.")
                }
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if dotted and dotted.startswith("streamwrite."):
                    module, name = dotted.split(".")[0], dotted.split(".")[1]
                    if f"{module}.{name}" in PUBLIC_PACKAGES:
                        continue  # streamwrite.crypto.X: the next level is checked
                    found.add((module, name))
    return found


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def test_the_readme_snippets_are_found() -> None:
    names = readme_names()
    assert ("streamwrite", "LiveFile") in names and ("streamwrite.crypto", "KeyWrapper") in names


def test_every_name_the_readme_uses_is_exported() -> None:
    problems = []
    for module, name in sorted(readme_names()):
        if module in HYPOTHESIS_MODULES or module in EXECUTOR_CONTRACT:
            if name not in importlib.import_module(module).__all__:
                problems.append(f"the README uses {module}.{name}, which is not in its __all__")
        elif module not in PUBLIC_PACKAGES:
            problems.append(f"the README imports {name} from the private module {module}")
        elif f"{module}.{name}" not in PUBLIC_PACKAGES and name not in _package(module).__all__:
            problems.append(f"the README uses {module}.{name}, which is not in its __all__")
    assert not problems, "\n".join(problems)


# -- signatures and docstrings --------------------------------------------------------------------


@functools.cache
def _module_names(module_name: str) -> dict[str, str]:
    """What each top-level name of a module's source refers to (``if TYPE_CHECKING:`` imports
    included): ``{"Job": "workers.jobs.Job", "pa": "pyarrow", "LiveFile": "<module>.LiveFile"}``.
    """
    module = sys.modules[module_name]
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    package = (
        module_name if module.__file__.endswith("__init__.py") else module_name.rsplit(".", 1)[0]
    )
    names: dict[str, str] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        names[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names[node.name] = f"{module_name}.{node.name}"
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = f"{module_name}.{target.id}"
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return names


def _referenced(annotation: object, module_name: str) -> set[str]:
    """The dotted targets an annotation string names, resolved in ``module_name``."""
    if not isinstance(annotation, str):
        annotation = getattr(annotation, "__forward_arg__", None) or repr(annotation)
    try:
        tree = ast.parse(str(annotation), mode="eval")
    except SyntaxError:
        return set()
    names = _module_names(module_name)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= _referenced(node.value, module_name)
        dotted = _dotted(node) if isinstance(node, ast.Attribute | ast.Name) else None
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head in names:
            found.add(".".join(filter(None, [names[head], rest])))
    # keep the longest chains only (pa.Table, not pa)
    return {d for d in found if not any(o.startswith(d + ".") for o in found)}


def _exported_ids() -> set[int]:
    return {id(value) for _, _, value in _exports()}


def _resolve(dotted: str) -> tuple[str, object] | None:
    """The longest importable module prefix of ``dotted`` and the object the rest names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            value: object = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in parts[cut:]:
            value = getattr(value, attr, None)
        return module_name, value
    return None


def _leaks(dotted: str, exported: set[int]) -> set[str]:
    """The private names that ``dotted`` (a name found in an annotation or docstring) shows.

    A product name leaks unless it lies in a public module or is an exported object. A type
    alias of a private module (``Source = str | os.PathLike[str] | ...``) is judged by what it
    expands to, as ``typing.get_type_hints`` shows it: only its product classes must be public.
    """
    if dotted.split(".")[0] not in PRODUCT_PACKAGES:
        return set()
    resolved = _resolve(dotted)
    if resolved is None:
        return {dotted}
    module_name, value = resolved
    if module_name in PUBLIC_MODULES or id(value) in exported:
        return set()
    if isinstance(value, type | ModuleType | FunctionType) or value is None:
        return {dotted}
    args = typing.get_args(value)
    if not args:
        return {dotted}
    found: set[str] = set()
    stack = list(args)
    while stack:
        arg = stack.pop()
        stack.extend(typing.get_args(arg))
        product = isinstance(arg, type) and arg.__module__.split(".")[0] in PRODUCT_PACKAGES
        if product and id(arg) not in exported and arg.__module__ not in PUBLIC_MODULES:
            found.add(f"{arg.__module__}.{arg.__qualname__}")
    return found


def _leak(dotted: str, exported: set[int]) -> bool:
    return bool(_leaks(dotted, exported))


def _public_members(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Public methods and properties of ``cls``, and of its product bases, by name."""
    seen = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in PRODUCT_PACKAGES:
            continue
        for name, value in vars(klass).items():
            if name in seen or (name.startswith("_") and name not in ("__init__", "__call__")):
                continue
            seen.add(name)
            if isinstance(value, classmethod | staticmethod):
                value = value.__func__
            if isinstance(value, property):
                value = value.fget
            if isinstance(value, FunctionType):
                yield name, value


def _defining_module(cls: type) -> str:
    for _, member in _public_members(cls):
        return str(inspect.unwrap(member).__globals__["__name__"])
    for value in vars(cls).values():
        if isinstance(value, FunctionType):
            return str(value.__globals__["__name__"])
    return cls.__module__


def _docstring_names(doc: str | None) -> set[str]:
    """Dotted product names in a docstring (a logger's name, ``logger ``x.y````, is not one)."""
    return set(re.findall(r"(?<!logger ``)\b(?:streamwrite|workers)(?:\.[A-Za-z_]\w*)+", doc or ""))


def public_api_leaks() -> dict[str, set[str]]:
    """For each public callable, class or field: the private names its annotations or
    docstring use."""
    exported = _exported_ids()
    leaks: dict[str, set[str]] = {}

    def check(where: str, names: set[str]) -> None:
        bad = set().union(*(_leaks(n, exported) for n in names))
        if bad:
            leaks.setdefault(where, set()).update(bad)

    def check_function(where: str, function: Callable[..., Any]) -> None:
        inner = inspect.unwrap(function)
        module_name = inner.__globals__["__name__"]
        names = set()
        for annotation in getattr(inner, "__annotations__", {}).values():
            names |= _referenced(annotation, module_name)
        check(where, names | _docstring_names(inspect.getdoc(function)))

    for package, name, value in _exports():
        where = f"{package}.{name}"
        if isinstance(value, type):
            check(where, _docstring_names(value.__doc__))
            for klass in value.__mro__:
                if klass.__module__.split(".")[0] not in PRODUCT_PACKAGES:
                    continue
                module_name = _defining_module(klass)
                for field, annotation in vars(klass).get("__annotations__", {}).items():
                    if not field.startswith("_"):
                        check(f"{where}.{field}", _referenced(annotation, module_name))
            for member_name, member in _public_members(value):
                if member_name == "__init__" and where in FACTORY_MADE:
                    continue
                check_function(f"{where}.{member_name}", member)
        elif isinstance(value, FunctionType):
            check_function(where, value)
    return leaks


def test_the_walk_finds_a_private_module_in_a_signature() -> None:
    """The check of the checker: a private annotation and a private docstring are found."""
    exported = _exported_ids()
    assert _leak("streamwrite.pool.process.Executor", exported)
    assert _leak("streamwrite.arrow.schema.ColumnSpec", exported)
    # an alias is judged by what it expands to: (list[EncodedChunk], int), the public contract
    assert not _leak("streamwrite.live.file.EncodedRowGroup", exported)
    assert not _leak("streamwrite.pool.executor.Executor", exported)  # exported object
    assert not _leak("streamwrite.errors.WorkerError", exported)
    assert not _leak("streamwrite.crypto.KeyWrapper", exported)
    assert not _leak("workers.jobs.Job", exported)  # the executor contract
    assert _leak("workers.chunk.ChunkSettings", exported)  # ring 2 beyond the contract
    assert _referenced("Executor | None", "streamwrite.table.core") == {
        "streamwrite.pool.executor.Executor"
    }
    assert _docstring_names("see :mod:`streamwrite.pool.gate`.") == {"streamwrite.pool.gate"}
    assert _leak("streamwrite.pool.gate", exported)


def test_no_public_signature_or_docstring_names_a_private_module() -> None:
    leaks = public_api_leaks()
    assert not leaks, "\n".join(
        f"{where}: {sorted(names)}" for where, names in sorted(leaks.items())
    )


def test_no_public_callable_takes_a_private_parameter() -> None:
    """Test-only hooks stay out of public signatures (``LiveFile.open(_action_hook=)`` was one:
    tests reach the hook through ``streamwrite.live.file.open_live_file``)."""
    found = []
    for package, name, value in _exports():
        callables: list[tuple[str, Callable[..., Any]]] = []
        if isinstance(value, type):
            callables += [
                (f"{package}.{name}.{m}", f)
                for m, f in _public_members(value)
                if not (m == "__init__" and f"{package}.{name}" in FACTORY_MADE)
            ]
        elif isinstance(value, FunctionType):
            callables.append((f"{package}.{name}", value))
        for where, function in callables:
            parameters = inspect.signature(function).parameters
            found += [f"{where}({p})" for p in parameters if p.startswith("_")]
    assert not found, found


def test_an_executor_of_the_users_own_needs_only_the_public_contract(tmp_path: Path) -> None:
    """``Executor`` is exported so users can bring their own; the public contract modules
    (:data:`EXECUTOR_CONTRACT`) are all such an executor imports, and the job it is given
    pickles (a remote worker runs it with ``run_job``)."""
    from streamwrite.format.chunk import EncodedChunk
    from workers.jobs import Job, run_job

    ran: list[Job] = []

    class RemoteLike:
        async def run(self, job: Job, priority: int = 0) -> EncodedChunk:
            ran.append(job)
            shipped = pickle.loads(pickle.dumps(job))
            return await anyio.to_thread.run_sync(run_job, shipped)

        async def run_all(self, jobs: Sequence[Job], priority: int = 0) -> list[EncodedChunk]:
            return [await self.run(job, priority) for job in jobs]

        async def aclose(self) -> None:
            pass

    rows = pa.table({"ts": pa.array([1, 2, 3], pa.timestamp("us")), "x": [1.5, 2.5, None]})

    async def ingest() -> None:
        table = await streamwrite.open_table(tmp_path / "t", rows.schema, executor=RemoteLike())
        async with table:
            await table.append(rows)

    anyio.run(ingest)
    assert ran and all(type(job).__module__ == "workers.jobs" for job in ran)
    assert streamwrite.read_table(tmp_path / "t").equals(rows)
