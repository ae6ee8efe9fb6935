"""kbtool's layers: every module imports only from its own room or the layers below it; never up, never sideways
into another room of its layer, and no module is part of an import cycle.

Every kbtool module's imports are read with `ast`, those inside functions (lazy imports) included, and each import
that runs up or sideways fails, named file:line. The table is tests/layers.py; docs/architecture.md's "Layers" and
"Modules" sections are written from it (and from each module's docstring) by scripts/architecture.py, and must equal
what that script writes now.
"""

import ast
import os
import subprocess
import sys

import pytest

from tests.layers import LAYERS, SELF_CONTAINED, room_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "kbtool"


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


def _type_checking_nodes(tree):
    """ids of the nodes under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                skip.update(id(sub) for sub in ast.walk(node))
    return skip


def imports(module, source, known, runtime_only=False):
    """(line, imported kbtool module) for every import in `source`, however deep in functions it sits (with
    `runtime_only`, those under `if TYPE_CHECKING:` left out)."""
    is_package = module in known and known[module].endswith("__init__.py")
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    skip = _type_checking_nodes(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    yield node.lineno, _known_prefix(alias.name, known)
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
                yield node.lineno, candidate if candidate in known else _known_prefix(base, known)


def _known_prefix(name, known):
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def problems(module, path, source, known):
    where_file = os.path.relpath(path, ROOT)
    try:
        own = room_of(module)
    except KeyError:
        return [f"{where_file}: {module} is in no room of tests/layers.py's LAYERS"]
    found = []
    for line, target in imports(module, source, known):
        if target == module:
            continue
        where = f"{where_file}:{line}"
        try:
            theirs = room_of(target)
        except KeyError:
            continue  # reported as the target's own problem
        if own[2] in SELF_CONTAINED and theirs[2] != own[2]:
            found.append(f"{where}: {module} imports {target}, outside the self-contained room {own[2]}")
        elif theirs[0] > own[0]:
            found.append(f"{where}: {module} ({own[1]}) imports {target} ({theirs[1]}, a higher layer)")
        elif theirs[0] == own[0] and theirs[2] != own[2]:
            found.append(f"{where}: {module} (room {own[2]}) imports {target} (room {theirs[2]}, sideways in {own[1]})")
    return found


def test_every_module_has_a_room_and_imports_nothing_from_above_or_beside():
    known = modules()
    assert "kbtool.vocabulary" in known and "kbtool.cli" in known
    found = []
    for module, path in sorted(known.items()):
        with open(path, encoding="utf-8") as f:
            found += problems(module, path, f.read(), known)
    assert not found, "imports up or sideways:\n" + "\n".join(found)


def import_graph(known):
    """{module: modules it imports at run time}; a package's __init__ handing on its own submodules' names is how
    packages work, not a dependency of the design."""
    graph = {}
    for module, path in known.items():
        with open(path, encoding="utf-8") as f:
            targets = {t for _, t in imports(module, f.read(), known, runtime_only=True) if t != module}
        if path.endswith("__init__.py"):
            targets = {t for t in targets if not t.startswith(module + ".")}
        graph[module] = targets
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in graph:
                continue
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on:
                low[node] = min(low[node], index[child])
    return found


def test_no_module_is_part_of_an_import_cycle():
    found = cycles(import_graph(modules()))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_table_names_each_module_once():
    names = [name for _, group in LAYERS for _, room_names, _ in group for name in room_names]
    assert len(names) == len(set(names))
    rooms = [room for _, group in LAYERS for room, _, _ in group]
    assert len(rooms) == len(set(rooms))


@pytest.mark.parametrize(
    "module, source, bad",
    [
        # a lazy import inside a function is an import like any other
        ("kbtool.specs.loader", "def f():\n    from kbtool.bench import families\n", "a higher layer"),
        ("kbtool.known.load", "import kbtool.cli\n", "a higher layer"),
        ("kbtool.reference.oracle", "from kbtool.runners import registry\n", "a higher layer"),
        ("kbtool.verdicts", "from kbtool.verdicts import tolerances\nfrom kbtool.specs import shapes\n", None),
        ("kbtool.vocabulary", "from kbtool.errors import KbtoolError\n", None),
        ("kbtool.vocabulary", "from kbtool.config import keras_json\n", "a higher layer"),
        ("kbtool.worker.main", "from kbtool import errors\n", "outside the self-contained"),
        ("kbtool.bench.measure", "from kbtool.explore import engine\n", "sideways"),
        ("kbtool.check.command", "from kbtool.reports import command\n", "sideways"),
        ("kbtool.check.command", "from kbtool.check import run\n", None),
    ],
)
def test_the_checker_finds_an_import_up_or_sideways(module, source, bad):
    known = modules()
    found = problems(module, known.get(module, os.path.join(ROOT, *module.split(".")) + ".py"), source, known)
    if bad is None:
        assert found == []
    else:
        assert len(found) == 1 and bad in found[0] and found[0].split(":")[1] in ("1", "2"), found


def test_the_architecture_page_is_written_from_the_table():
    """docs/architecture.md's layer table and module list are what scripts/architecture.py writes now: every module
    named, under its room, with the first line of its docstring."""
    script = os.path.join(ROOT, "scripts", "architecture.py")
    done = subprocess.run([sys.executable, script, "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


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
    imports the module and answers, never a worker; and the `env` commands' children (an interpreter's probe, venv,
    pip), each waited on in a process group of its own (kbtool/runners/envs/children.py), never a worker either."""
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
    assert sorted(spawners) == ["kbtool.config.keras_json", "kbtool.runners.client", "kbtool.runners.envs.children"], (
        spawners
    )


@pytest.mark.parametrize(
    "module",
    [
        "kbtool.execute",
        "kbtool.pytest_plugin.runner",
        "kbtool.explore.engine",
        "kbtool.bench.measure",
        "kbtool.runners.command",
    ],
)
def test_every_driver_of_workers_is_a_client_of_the_session(module):
    with open(modules()[module], encoding="utf-8") as f:
        source = f.read()
    assert "BackendSession" in source or "probe_all" in source
    assert "runners.client" not in source and "WorkerClient" not in source
