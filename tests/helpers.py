"""What several test modules build: hand-made report records and backend infos, whole reports (hand-made, or
assembled as `kbtool check` assembles them), and the header of a one-doc spec. Test modules import these from here,
never from one another."""

import json

from kbtool import __version__, known, paths, repro
from kbtool.plan import Plan
from kbtool.reports import assemble as assemble_mod
from kbtool.reports import report as report_mod
from kbtool.reports.report import SCHEMA_VERSION
from kbtool.reports.verdict import summarize
from kbtool.results import BackendStatus, Result, Status
from kbtool.runners import envs
from kbtool.runners.registry import not_installed_info
from kbtool.settings import RunSettings

# the one-doc spec header of hand-written spec files (specs, known differences)
HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
"""


# --- hand-built reports ---


def record(op, case, backend, status, mode="eager", known=None, seconds=0.25, message=None, **extra):
    result = Result(
        op=op,
        case=case,
        backend=backend,
        mode=mode,
        status=Status(status),
        message="" if message is None and status == "pass" else message or f"{status} here",
        seconds=seconds,
        known=known,
        **extra,
    )
    if result.status != Status.PASS:
        result.repro = repro.command(result)
    return result.as_dict()


def available(name):
    return {
        "name": name,
        "kind": "builtin",
        "python": "3.11.7",
        "status": BackendStatus.AVAILABLE.value,
        "versions": {name: "1.0"},
        "module": "kbtool.reference",
        "import_seconds": 0.1,
        "restarts": 0,
    }


def broken(name):
    return {
        "name": name,
        "kind": "custom",
        "python": "3.11.7",
        "status": BackendStatus.BROKEN.value,
        "reason": "ImportError: no engine here",
        "restarts": 0,
    }


def not_installed(name):
    return not_installed_info(name, f"not installed: run `kbtool env install {name}`")


STALE = {
    "op": "dot",
    "backend": "beta",
    "case": "basic",
    "reason": "beta rounds",
    "note": "did not reproduce in this run (2 results checked)",
}


def make_report(backends, results, stale=(), known_counts=()):
    report = {
        "schema_version": SCHEMA_VERSION,
        "kbtool": __version__,
        "created": "2024-05-01T12:00:00+00:00",
        "seed": 0,
        "spec": {"path": "specs/ops.yaml", "ops": 2, "cases": 3},
        "filters": [],
        "backends": backends,
        "results": results,
        "known_differences": list(known_counts),
        "stale_known_differences": list(stale),
        "wall_seconds": 1.0,
    }
    report["summary"] = summarize(report)
    return report


PASSES = [record("dot", "basic", "alpha", "pass"), record("dot", "big", "alpha", "pass")]


def renderer_report():
    """Two backends, two ops: alpha dot ✓✓✗, alpha sum ✓≈; beta dot –––, beta sum E☠."""
    results = [
        record("dot", "a", "alpha", "pass"),
        record("dot", "b", "alpha", "pass"),
        record("dot", "c", "alpha", "fail", message="values differ | by 0.5"),
        record("sum", "a", "alpha", "pass"),
        record("sum", "b", "alpha", "error", known="alpha raises here"),
        record("dot", "a", "beta", "unsupported"),
        record("dot", "b", "beta", "unsupported"),
        record("dot", "c", "beta", "unsupported"),
        record("sum", "a", "beta", "error"),
        record("sum", "b", "beta", "crash", mode="symbolic"),
    ]
    return make_report([available("alpha"), available("beta")], results)


# --- reports as `kbtool check` assembles them ---


def synthetic(
    rows,
    backends=None,
    filters=(),
    seed=0,
    entries=(),
    ops=None,
    shard=None,
    strict=False,
    versions=None,
    checkable=None,
    all_cases=True,
):
    """A report as `kbtool check` assembles it, from rows (op, case, backend, mode, status, seconds[, message]).

    The spec of the plan has `checkable` ops (default: the rows' ops); the entries are applied as a check applies
    them (staleness judged when `all_cases` and no shard)."""
    results = []
    for row in rows:
        op, case, backend, mode, status, seconds = row[:6]
        result = Result(
            op, case, backend, mode, Status(status), message=row[6] if len(row) > 6 else "", seconds=seconds
        )
        if status != "pass":
            result.repro = f"kbtool check --op {op} --case {case} --backend {backend} --mode {mode}"
        results.append(result)
    ops = ops or sorted({r.op for r in results})
    order = list(backends or dict.fromkeys(r.backend for r in results))
    results.sort(key=lambda r: (r.op, r.case, order.index(r.backend), r.mode))  # as execute.py sorts them
    checkable = checkable if checkable is not None else ops
    fake_spec = type("Spec", (), {"path": paths.spec_file(), "ops": {op: {"cases": [{}]} for op in checkable}})()
    plan = Plan(
        spec=fake_spec,
        ops=ops,
        work=[],
        backends=[],
        run=RunSettings(seed=seed),
        filters=list(filters),
        shard=shard,
        case_patterns=() if all_cases else ("x*",),
    )
    names = backends or list(dict.fromkeys(r.backend for r in results))
    infos = [
        {"name": n, "kind": "builtin", "status": "available", "versions": (versions or {}).get(n, {n: "1.0"})}
        for n in names
    ]
    entries = [dict(e) for e in entries]
    applied = known.apply(
        results,
        entries,
        whole_spec=plan.whole_spec,
        all_cases=plan.all_cases,
        planned_ops=plan.ops,
        spec_ops=set(checkable),
        versions=known.lookup(results, None, envs.read_lock),  # (as before: the locks, not the infos' versions)
    )
    report = assemble_mod.assemble(
        assemble_mod.CheckRun(plan, infos, results, applied, 1.5, known_entries=entries, strict=strict)
    )
    assert report_mod.validate(report) == []
    return json.loads(json.dumps(report))


def register_ext(monkeypatch):
    """A built-in backend `ext` (recipe: Python 3.6) whose module kbtool's own Python imports, in the registry for
    the test's length."""
    from kbtool.runners import registry
    from kbtool.runners.recipes import Recipe

    recipe = Recipe(name="ext", python_version="3.6", packages=["ext==1.0"], module="kbtool.reference")
    recipe.version_of = ["numpy"]
    monkeypatch.setitem(registry.RECIPES, "ext", recipe)
    monkeypatch.setattr(registry, "BUILTIN", ["numpy", "ext"])
    return recipe


def bench(*args):
    """`kbtool bench ARGS` in-process: (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from kbtool.cli import main

    result = CliRunner().invoke(main, ["bench"] + [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def invoke_cli(*args):
    """Run kbtool's CLI in-process with stderr kept apart from stdout (on every click version)."""
    from click.testing import CliRunner

    from kbtool.cli import main

    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, list(args))
