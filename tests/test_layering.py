"""kbtool's layers: every module imports only from its own layer or the ones below it, never up.

Every kbtool module's imports are read with `ast`, those inside functions (lazy imports) included, and each import
of a kbtool module from a higher layer fails, named file:line. docs/architecture.md ("Layers") says the same in words.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "kbtool"

# Lowest first. A module belongs to the layer with the longest name that is it or a package above it; the package
# itself (kbtool/__init__.py: its version) is ground.
LAYERS = (
    (
        "ground",
        (
            "kbtool",
            "kbtool.vocabulary",
            "kbtool.errors",
            "kbtool.paths",
            "kbtool.files",
            "kbtool.results",
            "kbtool.capture",
            "kbtool.schemas",
        ),
    ),
    # the worker program (Python 3.6, in a backend's env) and its wire format; imports nothing outside itself
    ("worker", ("kbtool.worker",)),
    ("config", ("kbtool.config",)),  # keras.json: locate, read, validate, write
    ("specs", ("kbtool.specs",)),
    ("verdicts", ("kbtool.verdicts",)),
    # recipes, registry, client, envs; the pool that shares a check's cases among the workers
    ("runners", ("kbtool.runners", "kbtool.runners.pool")),
    # the NumPy reference, and its oracle (which asks the registry for a backend's own K.backend() name)
    ("reference", ("kbtool.reference",)),
    (
        "known",
        ("kbtool.known", "kbtool.known.fingerprint", "kbtool.known.record"),
    ),  # known differences (backend globs are validated against the registry)
    (
        "session",
        ("kbtool.runners.session", "kbtool.interrupts", "kbtool.repro"),
    ),  # the backend workers a check or a tool holds; signals
    (
        "run",
        ("kbtool.plan", "kbtool.shard", "kbtool.execute", "kbtool.keras_settings", "kbtool.completion", "kbtool.sweep"),
    ),
    ("reports", ("kbtool.reports",)),
    ("check", ("kbtool.check", "kbtool.options")),  # a check; the flags commands share
    ("tools", ("kbtool.bench", "kbtool.explore", "kbtool.pytest_plugin", "kbtool.bisect")),
    ("cli", ("kbtool.cli", "kbtool.__main__")),
)
# packages that import nothing from kbtool outside themselves (the worker runs where kbtool is not installed)
SELF_CONTAINED = ("kbtool.worker",)


def module_name(path):
    rel = os.path.relpath(path, ROOT)[: -len(".py")].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def modules(root=ROOT):
    """{module name: path} of every kbtool module."""
    found = {}
    for folder, dirs, names in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found[module_name(path)] = path
    return found


def _within(module, name):
    return module == name or (name != PACKAGE and module.startswith(name + "."))


def layer_of(module):
    """(index, name) of the module's layer, or None when the table does not place it."""
    best = None
    for index, (layer, names) in enumerate(LAYERS):
        for name in names:
            if _within(module, name) and (best is None or len(name) > best[2]):
                best = (index, layer, len(name))
    return best[:2] if best else None


def imports(module, source, known):
    """(line, imported kbtool module) for every import in `source`, however deep in functions it sits."""
    is_package = module in known and known[module].endswith("__init__.py")
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue  # a third-party import, or the worker's own script-style `import protocol`
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield node.lineno, candidate if candidate in known else base


def problems(module, path, source, known):
    own = layer_of(module)
    if own is None:
        return [f"{os.path.relpath(path, ROOT)}: {module} is in no layer of tests/test_layering.py's LAYERS"]
    found = []
    for line, target in imports(module, source, known):
        where = f"{os.path.relpath(path, ROOT)}:{line}"
        for package in SELF_CONTAINED:
            if _within(module, package) and not _within(target, package):
                found.append(f"{where}: {module} imports {target}, outside the self-contained {package}")
        theirs = layer_of(target)
        if theirs is not None and theirs[0] > own[0]:
            found.append(f"{where}: {module} ({own[1]}) imports {target} ({theirs[1]}, a higher layer)")
    return found


def test_every_module_has_a_layer_and_imports_nothing_from_above():
    known = modules()
    assert "kbtool.vocabulary" in known and "kbtool.cli" in known
    found = []
    for module, path in sorted(known.items()):
        with open(path, encoding="utf-8") as f:
            found += problems(module, path, f.read(), known)
    assert not found, "imports up the layers:\n" + "\n".join(found)


def test_the_table_names_each_module_once():
    names = [name for _, group in LAYERS for name in group]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "module, source, bad",
    [
        # a lazy import inside a function is an import like any other
        ("kbtool.specs.loader", "def f():\n    from ..bench import families\n", "kbtool.bench.families"),
        ("kbtool.known", "import kbtool.cli\n", "kbtool.cli"),
        ("kbtool.reference.oracle", "from ..runners import registry\n", None),  # reference sits above runners
        ("kbtool.verdicts", "from . import tolerances\nfrom ..specs import shapes\n", None),
        ("kbtool.vocabulary", "from .errors import KbtoolError\n", None),
        ("kbtool.vocabulary", "from kbtool.config import keras_json\n", "kbtool.config.keras_json"),
        ("kbtool.worker.main", "from kbtool import errors\n", "kbtool.errors"),  # outside the worker
    ],
)
def test_the_checker_finds_an_import_up(module, source, bad):
    known = modules()
    found = problems(module, known[module], source, known)
    if bad is None:
        assert found == []
    else:
        assert len(found) == 1 and bad in found[0] and found[0].split(":")[1] in ("1", "2")


def test_the_docs_list_the_same_layers():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("### Layers", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    rows = [
        line for line in section.splitlines() if line.startswith("| ") and not line.startswith(("| Layer", "| ---"))
    ]
    assert [row.split("|")[1].strip() for row in rows] == [layer for layer, _ in reversed(LAYERS)]


def _calls_of(tree, name):
    """Lines where `name(...)` or `x.name(...)` is called in a parsed module."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if called == name:
                lines.append(node.lineno)
    return lines


def test_exactly_one_module_starts_backend_workers():
    """Only kbtool/runners/session.py makes worker clients, and only the client starts worker processes (Popen): check's
    lanes, the pytest plugin, explore, bench and `kbtool backends` all go through a BackendSession. The one other
    Popen is config's import check of a custom module (`kbtool config set backend my.module`): a child that
    imports the module and answers, never a worker."""
    makers, spawners = {}, {}
    for module, path in sorted(modules().items()):
        if module.startswith("kbtool.worker"):
            continue  # runs inside a backend env; starts no worker
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        if _calls_of(tree, "WorkerClient"):
            makers[module] = _calls_of(tree, "WorkerClient")
        if _calls_of(tree, "Popen"):
            spawners[module] = _calls_of(tree, "Popen")
    assert list(makers) == ["kbtool.runners.session"], makers
    assert sorted(spawners) == ["kbtool.config.keras_json", "kbtool.runners.client"], spawners


@pytest.mark.parametrize(
    "module",
    ["kbtool.execute", "kbtool.pytest_plugin.runner", "kbtool.explore.engine", "kbtool.bench.measure", "kbtool.cli"],
)
def test_every_driver_of_workers_is_a_client_of_the_session(module):
    with open(modules()[module], encoding="utf-8") as f:
        source = f.read()
    assert "BackendSession" in source or "probe_all" in source
    assert "runners.client" not in source and "WorkerClient" not in source
