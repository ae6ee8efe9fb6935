"""`pytest --kbtool` (kbtool/pytest_plugin/): collection and ids, -k, known differences as xfail, unexpected passes and
stale entries, failures with their numbers and repro, workers that cannot start, usage errors, --junitxml, xdist, and
an inert plugin without --kbtool.

The fast tests run pytest inline (pytester) on the numpy backend and on small custom backend modules (the reference
with a planted divergence). The agreement tests (marked `backends`) compare `pytest --kbtool` with `kbtool check` on
the real backends, item by item.
"""

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

import kbtool
from kbtool import known
from kbtool.pytest_plugin import items as items_mod
from kbtool.pytest_plugin import verdict
from kbtool.results import Result, Status

# Everything an inline `pytest --kbtool` imports is imported here first: pytester unloads the modules an inline run
# imported once it ends, and a module imported again is another module (numpy refuses; an exception class of the
# first copy is not caught as the second's).
for _module in pkgutil.walk_packages(kbtool.__path__, "kbtool."):
    # the worker's script and the Keras 3 adapter run in a backend's env only
    if not _module.name.startswith(("kbtool.worker.main", "kbtool.worker.keras3_port")):
        importlib.import_module(_module.name)

pytest_plugins = "pytester"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the reference, with abs wrong (off by one) on float64 inputs only: abs's `float64` case diverges, the others pass
PLANTED = """
import numpy as np
from kbtool.reference import *  # noqa
from kbtool.reference import abs as _abs
from kbtool.reference.core import op


@op
def abs(x):
    out = _abs(x)
    return out + 1 if np.asarray(x).dtype == np.float64 else out
"""


def _abs_results():
    """How many results `abs` has on a backend that runs both modes (its cases times their modes): the counts below
    follow the spec as cases are added to abs."""
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    plan = make_plan(loader.load(), Selection(ops=("abs",), backends=("numpy",)))
    return sum(len(case.modes) for _, case in plan.work)


ABS = _abs_results()

GRAD_ENTRY = """- op: abs
  case: grad
  backend: [numpy, {backend}]
  status: unsupported
  reason: the reference has no autodiff
  count: 1
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, keras_home):
    """No managed backend (an empty KBTOOL_HOME), the documented keras.json defaults."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbtool_home"))


@pytest.fixture
def planted(custom_backend):
    return custom_backend("kbplugin_planted", "wrong_abs", PLANTED)


def known_file(pytester, text):
    path = pytester.path / "known.yaml"
    path.write_text(text)
    return str(path)


def properties(xml_path):
    """{(op, case, backend, mode): (outcome, properties)} of a JUnit file (passed, failed, error, xfailed, skipped)."""
    out = {}
    for case in ET.parse(str(xml_path)).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "mode" not in props:
            continue
        skipped = case.find("skipped")
        if case.find("failure") is not None:
            outcome = "failed"
        elif case.find("error") is not None:
            outcome = "error"
        elif skipped is not None:
            outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        else:
            outcome = "passed"
        out[(props["op"], props["case"], props["backend"], props["mode"])] = (outcome, props)
    return out


# ---------------------------------------------------------------------------- collection and ids


def test_one_item_per_case_backend_and_mode_with_readable_ids(pytester):
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    result = pytester.runpytest("--kbtool", "--kbtool-op", "batch_dot", "--kbtool-backend", "numpy", "--co", "-q")
    assert result.ret == 0, result.stdout.str()
    ids = [line for line in result.outlines if line.startswith("kbtool::")]
    plan = make_plan(loader.load(), Selection(ops=["batch_dot"], backends=["numpy"]))
    expected = [f"kbtool::batch_dot::{case.id}[numpy-{mode}]" for _, case in plan.work for mode in case.modes]
    assert sorted(ids) == sorted(expected) and len(set(ids)) == len(ids) > 20
    assert "kbtool::batch_dot::float64[numpy-eager]" in ids and "kbtool::batch_dot::grad[numpy-symbolic]" in ids


def test_k_selects_by_op_case_backend_and_mode(pytester):
    result = pytester.runpytest(
        "--kbtool",
        "--kbtool-op",
        "batch_dot",
        "--kbtool-op",
        "abs",
        "--kbtool-backend",
        "numpy",
        "-k",
        "batch_dot and float64 and eager",
        "-v",
    )
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    plan = make_plan(loader.load(), Selection(ops=["batch_dot", "abs"], backends=["numpy"]))
    items = sum(len(case.modes) for _, case in plan.work)  # one item per case and mode
    result.assert_outcomes(passed=1, deselected=items - 1)
    result.stdout.fnmatch_lines(["*kbtool::batch_dot::float64[[]numpy-eager[]] PASSED*"])


def test_kbtool_items_join_the_collection_and_kbtool_only_collects_them_alone(pytester):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    joined = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--co", "-q")
    assert "test_other.py::test_other" in joined.outlines and "kbtool::abs::basic[numpy-eager]" in joined.outlines
    alone = pytester.runpytest(
        "--kbtool", "--kbtool-only", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--co", "-q"
    )
    assert "test_other.py::test_other" not in alone.stdout.str() and "kbtool::abs::basic[numpy-eager]" in alone.outlines
    both = pytester.runpytest(
        "--kbtool", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--co", "-q", "test_other.py"
    )
    assert "test_other.py::test_other" in both.outlines and "kbtool::abs::basic[numpy-eager]" in both.outlines


def test_ids_are_safe_for_pytest_and_unique():
    weird = [
        "a/b",
        "a[b]",
        "a::b",
        "a:b",
        ":a",
        "a b",
        "a%2Fb",
        "a\u00e9",
        "grid.axis=(1x-1).keepdims=true",
        "example:doc",
        "a:::b",
    ]
    safe = [items_mod.safe(text) for text in weird]
    assert len(set(safe)) == len(weird)  # %XX for the unsafe characters, '%' itself included: nothing collides
    for text in safe:
        assert not re.search(r"[/\[\] ]|::", text) and not text.startswith(":"), text
    assert safe[-4:-1] == ["a%C3%A9", "grid.axis=(1x-1).keepdims=true", "example:doc"]  # readable ids stay as they are
    taken = set()
    assert [items_mod.unique("x", taken) for _ in range(3)] == ["x", "x~2", "x~3"]


def test_a_default_backend_that_is_not_installed_is_one_skipped_item(pytester):
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "-rs")
    # numpy's grad case is xfail (the reference has no autodiff); one skipped item per built-in backend not installed
    from kbtool.runners.registry import RECIPES

    result.assert_outcomes(passed=ABS - 1, xfailed=1, skipped=len(RECIPES))
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] kbtool: tensorflow: not installed: run `kbtool env install tensorflow`"]
    )


# ---------------------------------------------------------------------------- verdicts


def test_a_known_difference_is_an_xfail_with_its_reason(pytester, planted):
    path = known_file(
        pytester,
        GRAD_ENTRY.format(backend=planted)
        + (
            f"- op: abs\n  case: float64\n  backend: {planted}\n  match: values differ\n  reason: planted - abs adds one to "
            "float64\n  count: 2\n"
        ),
    )
    result = pytester.runpytest(
        "--kbtool", "--kbtool-op", "abs", "--kbtool-backend", planted, "--kbtool-known", path, "-rx"
    )
    result.assert_outcomes(passed=ABS - 3, xfailed=3)
    result.stdout.fnmatch_lines(
        [
            f"XFAIL kbtool::abs::float64[[]{planted}-eager[]] - known difference (fail): planted - abs "
            "adds one to float64"
        ]
    )
    assert result.ret == 0 and "stale" not in result.stdout.str()


def test_an_unexplained_divergence_fails_with_message_numbers_and_repro(pytester, planted):
    path = known_file(pytester, "")
    result = pytester.runpytest(
        "--kbtool",
        "--kbtool-op",
        "abs",
        "--kbtool-backend",
        planted,
        "--kbtool-known",
        path,
        "--kbtool-case",
        "float64",
        "--kbtool-case",
        "basic",
    )
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert f"_ abs float64 on {planted} (eager) _" in out and "\nfail: 5 of 5 values differ" in out
    result.stdout.fnmatch_lines([f"FAILED kbtool::abs::float64[[]{planted}-eager[]] - fail: 5*"])
    assert "max_abs_diff: 1.0" in out and "expected_shape" in out
    # the repro is `kbtool check` with the session's flags: its known-differences file (relative to the cwd), after
    # the kbtool home the tests set (KBTOOL_HOME=...)
    assert f" kbtool check --op abs --case float64 --backend {planted} --mode eager --seed 0 --known known.yaml" in out
    assert "Traceback" not in out and "site-packages" not in out


@pytest.mark.slow
def test_kbtool_repeat_fails_an_item_whose_runs_disagree_as_nondeterministic(pytester, custom_backend):
    from .test_repeat import NOISY

    noisy = custom_backend("kbplugin_noisy", "kb", NOISY)
    path = known_file(pytester, "")
    args = ["--kbtool", "--kbtool-op", "abs", "--kbtool-backend", noisy, "--kbtool-known", path]
    args += ["--kbtool-mode", "eager", "--kbtool-case", "basic", "--kbtool-case", "int32"]
    pytester.runpytest(*args).assert_outcomes(passed=2)  # one run: within tolerance, a pass by luck
    result = pytester.runpytest(*args, "--kbtool-repeat", "3")
    result.assert_outcomes(passed=1, failed=1)  # int32 carries no noise
    result.stdout.fnmatch_lines([f"FAILED kbtool::abs::basic[[]{noisy}-eager[]] - nondeterministic: 2 of 2*"])
    assert f"--backend {noisy} --mode eager --seed 0 --known known.yaml --repeat 3" in result.stdout.str()  # repeats


def test_a_pass_where_an_entry_targets_that_result_alone_fails_as_stale(pytester):
    path = known_file(
        pytester,
        GRAD_ENTRY.format(backend="numpy")
        + ("- op: abs\n  case: basic\n  mode: eager\n  backend: numpy\n  reason: once diverged\n  count: 1\n"),
    )
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--kbtool-known", path)
    result.assert_outcomes(passed=ABS - 2, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ abs basic on numpy (eager) _*",
            "passed, but known-difference entry 2 targets this result alone: it no longer "
            "reproduces (stale). Its reason: once diverged",
            "stale known difference (entry 2): abs basic on numpy: once diverged*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_entry_that_explains_none_of_its_results_fails_the_session(pytester):
    path = known_file(
        pytester,
        GRAD_ENTRY.format(backend="numpy")
        + ("- op: abs\n  case: int32\n  backend: numpy\n  reason: once diverged\n  count: 2\n"),
    )
    args = ["--kbtool", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--kbtool-known", path]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=ABS - 1, xfailed=1)  # each of its two results passes: neither alone says it is stale
    result.stdout.fnmatch_lines(
        [
            "stale known difference (entry 2): abs int32 on numpy: once diverged (did not "
            "reproduce in this run (2 results checked))"
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # a selection that leaves results out judges no entry (as check with --case judges none)
    part = pytester.runpytest(*args, "-k", "int32 and not int32_min and eager")
    part.assert_outcomes(passed=1, deselected=ABS - 1)
    assert part.ret == 0 and "stale known difference" not in part.stdout.str()
    part.stdout.fnmatch_lines(
        [f"known differences not judged for staleness: {ABS - 1} of the {ABS} planned results did not run"]
    )


def test_known_reason_follows_the_variant_for_verified_by_entries():
    entries = [
        {
            "op": "conv1d",
            "case": "*",
            "backend": "theano",
            "status": "fail",
            "match": "values differ",
            "verified_by": ".kernel_flipped",
            "reason": "flipped kernel",
            "count": 1,
        }
    ]
    failed = Result("conv1d", "same", "theano", "eager", Status.FAIL, "values differ: 3 of 8")
    flipped = Result("conv1d", "same.kernel_flipped", "theano", "eager", Status.PASS)
    assert verdict.needs_variants(failed, entries)
    assert verdict.known_reason(failed, [flipped], entries) == "flipped kernel"
    assert (
        verdict.known_reason(
            failed, [Result("conv1d", "same.kernel_flipped", "theano", "eager", Status.FAIL, "values differ")], entries
        )
        is None
    )
    assert verdict.known_reason(failed, [], entries) is None
    assert failed.known is None and flipped.known is None  # the results themselves are not marked
    other = Result("conv1d", "same", "theano", "eager", Status.ERROR, "boom")
    assert not verdict.needs_variants(other, entries)


def test_known_reason_is_what_known_apply_gives_a_whole_report():
    """Over a real full run's results, the one-result verdict names the same entry as known.apply on all of them."""
    from kbtool.specs import loader

    with open(os.path.join(ROOT, "reports", "parity.json"), encoding="utf-8") as fh:
        report = json.load(fh)
    spec = loader.load()
    entries = known.alias_entries(spec) + known.load(spec=spec)
    fields = ("op", "case", "backend", "mode", "status", "message")
    results = [Result(**{k: r[k] for k in fields}) for r in report["results"]]
    by_key = {(r.op, r.case, r.backend, r.mode): r for r in results}
    wanted = [r for r in results if r.op in ("conv1d", "conv2d_transpose", "batch_dot", "gather", "transpose")]
    known.apply(results, entries)
    assert sum(r.known is not None for r in wanted) > 100
    for result in wanted:
        variants = [
            by_key[k]
            for k in [(result.op, result.case + ".kernel_flipped", result.backend, result.mode)]
            if k in by_key
        ]
        assert verdict.known_reason(result, variants, entries) == result.known, result


def test_a_worker_that_cannot_start_errors_every_item_saying_why(pytester, custom_backend):
    broken = custom_backend("kbplugin_broken", "kb", "raise RuntimeError('planted: this backend cannot import')\n")
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "--kbtool-backend", broken, "--kbtool-case", "basic")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert out.count(f"{broken}: the worker could not start") >= 2 and "planted: this backend cannot" in out
    assert "kbtool/pytest_plugin" not in out  # the reason, not a traceback through the plugin


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "args, message",
    [
        (["--kbtool-op", "batch_dott"], "ERROR: kbtool: no op 'batch_dott'*did you mean batch_dot*"),
        (
            ["--kbtool-backend", "theano"],
            "ERROR: kbtool: backend theano: not installed: run `kbtool env install theano`",
        ),
        (["--kbtool-backend", "jax"], "ERROR: kbtool: unknown backend 'jax'*"),
        (["--kbtool-mode", "lazy"], "ERROR: kbtool: unknown mode lazy; modes are eager, symbolic"),
        (["--kbtool-grid", "half"], "ERROR: kbtool: unknown grid 'half'*"),
        (["--kbtool-seed", "x"], "ERROR: kbtool: --kbtool-seed takes a whole number, not 'x'"),
        (["--kbtool-timeout", "0"], "ERROR: kbtool: --kbtool-timeout takes a number of seconds*"),
        (["--kbtool-repeat", "0"], "ERROR: kbtool: --kbtool-repeat takes a whole number of runs, from 1 to 1000*"),
        (["--kbtool-known", "missing.yaml"], "ERROR: kbtool: --kbtool-known */missing.yaml: no such file"),
        (["--kbtool-keras-config", "floatx=float8"], "ERROR: kbtool: *floatx*"),
        (["--kbtool-case", "nope*"], "ERROR: kbtool: nothing to check: no case of abs matches --case nope*"),
    ],
)
def test_a_bad_option_is_a_one_line_usage_error(pytester, args, message):
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1, result.errlines
    result.stderr.fnmatch_lines([message])


def test_a_bad_known_differences_file_is_a_one_line_usage_error(pytester):
    path = known_file(pytester, "- op: abs\n  backend: numpy\n  reason: no count, no narrowing\n")
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "--kbtool-known", path)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [e for e in result.errlines if "known.yaml:1" in e]


@pytest.mark.slow
def test_without_kbtool_the_plugin_imports_nothing_and_collects_nothing(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    (tmp_path / "conftest.py").write_text(
        "import json, sys\n\ndef pytest_unconfigure(config):\n"
        "    mods = sorted(m for m in sys.modules if m.split('.')[0] in ('kbtool', 'numpy', 'yaml'))\n"
        "    open('modules.json', 'w').write(json.dumps(mods))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kbtool-op", "abs"],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "1 passed" in out and "kbtool::" not in out, out
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert modules == ["kbtool", "kbtool.pytest_plugin"], modules  # no numpy, no spec, no backend


# ---------------------------------------------------------------------------- junit and xdist


def test_junitxml_carries_each_results_properties(pytester, planted):
    path = known_file(pytester, GRAD_ENTRY.format(backend=planted))
    xml_path = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--kbtool",
        "--kbtool-op",
        "abs",
        "--kbtool-backend",
        planted,
        "--kbtool-known",
        path,
        "--junitxml",
        str(xml_path),
    )
    result.assert_outcomes(passed=ABS - 3, failed=2, xfailed=1)
    found = properties(xml_path)
    assert len(found) == ABS
    outcome, props = found[("abs", "float64", planted, "eager")]
    assert outcome == "failed" and props["status"] == "fail" and "values differ" in props["message"]
    assert "kbtool check --op abs --case float64 " in props["repro"] and float(props["seconds"]) >= 0
    outcome, props = found[("abs", "grad", planted, "symbolic")]
    assert outcome == "xfailed" and props["status"] == "unsupported"
    assert props["known"] == "the reference has no autodiff"
    outcome, props = found[("abs", "basic", planted, "symbolic")]
    assert outcome == "passed" and props["status"] == "pass" and props["verdict"] == "pass"


def test_under_xdist_each_backend_keeps_to_one_worker_and_stale_is_judged_over_all(pytester, planted):
    path = known_file(
        pytester,
        GRAD_ENTRY.format(backend=planted)
        + (
            f"- op: abs\n  case: float64\n  backend: {planted}\n  match: values differ\n  reason: planted\n  count: 2\n"
            "- op: abs\n  case: int32\n  backend: numpy\n  reason: once diverged\n  count: 2\n"
        ),
    )
    xml_path = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--kbtool",
        "--kbtool-op",
        "abs",
        "--kbtool-backend",
        "numpy",
        "--kbtool-backend",
        planted,
        "--kbtool-known",
        path,
        "-n",
        "2",
        "-v",
        "-p",
        "no:cacheprovider",
        "--junitxml",
        str(xml_path),
        timeout=300,
    )
    result.assert_outcomes(passed=2 * ABS - 4, xfailed=4)
    result.stdout.fnmatch_lines(["stale known difference (entry 3): abs int32 on numpy: once diverged*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    workers = {}
    for line in result.outlines:
        match = re.match(r"\[(gw\d+)\].*kbtool::abs::\S+\[(\S+)-(eager|symbolic)\]", line)
        if match:
            workers.setdefault(match.group(2), set()).add(match.group(1))
    assert set(workers) == {"numpy", planted} and all(len(w) == 1 for w in workers.values()), workers
    assert len(properties(xml_path)) == 2 * ABS


# ---------------------------------------------------------------------------- agreement with kbtool check


def check_verdicts(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "kbtool", "check", "--json", *args],
        capture_output=True,
        timeout=1800,
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    report = json.loads(proc.stdout)
    return {
        (r["op"], r["case"], r["backend"], r["mode"]): "passed"
        if r["status"] == "pass"
        else "xfailed"
        if r.get("known")
        else "failed"
        for r in report["results"]
    }, report


def pytest_verdicts(tmp_path, *args):
    xml_path = tmp_path / f"junit-{time.monotonic_ns()}.xml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--kbtool",
            "-p",
            "no:cacheprovider",
            "-q",
            "--junitxml",
            str(xml_path),
            *args,
        ],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=1800,
    )
    return (
        {key: "failed" if outcome == "error" else outcome for key, (outcome, _) in properties(xml_path).items()},
        proc.returncode,
        proc.stdout.decode(),
    )


@pytest.fixture
def real_backends(monkeypatch):
    """The real environments (the autouse fixture points KBTOOL_HOME at an empty folder)."""
    monkeypatch.delenv("KBTOOL_HOME", raising=False)
    monkeypatch.delenv("KERAS_HOME", raising=False)


@pytest.mark.backends
@pytest.mark.slow
# batch_dot here, conv2d_transpose (Theano's kernel_flipped variants, verified_by entries) under xdist below: each op
# is compared once, on every installed backend (the comparisons were the suite's slowest minutes)
@pytest.mark.parametrize("op", ["batch_dot"])
def test_pytest_kbtool_agrees_with_kbtool_check(tmp_path, real_backends, op):
    started = time.monotonic()
    checked, report = check_verdicts("--op", op)
    check_seconds = time.monotonic() - started
    started = time.monotonic()
    ran, code, out = pytest_verdicts(tmp_path, "--kbtool-op", op)
    pytest_seconds = time.monotonic() - started
    print(f"{op}: check {check_seconds:.1f} s, pytest {pytest_seconds:.1f} s, {len(checked)} results")
    assert set(ran) == set(checked) and len(checked) >= 100
    assert {k: v for k, v in ran.items() if checked[k] != v} == {}
    assert (code == 0) == (report["summary"]["ok"]), out[-3000:]
    assert "xfailed" in ran.values()  # the ops are chosen for their known differences


@pytest.mark.backends
@pytest.mark.slow
def test_pytest_kbtool_under_xdist_agrees_with_kbtool_check(tmp_path, real_backends):
    ops = ["--op", "conv2d_transpose"]
    started = time.monotonic()
    checked, report = check_verdicts(*ops)
    check_seconds = time.monotonic() - started
    started = time.monotonic()
    ran, code, out = pytest_verdicts(
        tmp_path, "-n", "2", *["--kbtool-" + a[2:] if a.startswith("--") else a for a in ops]
    )
    print(f"check {check_seconds:.1f} s, pytest -n 2 {time.monotonic() - started:.1f} s")
    assert set(ran) == set(checked) and len(checked) >= 100
    assert {k: v for k, v in ran.items() if checked[k] != v} == {}
    assert (code == 0) == (report["summary"]["ok"]), out[-3000:]
    assert "xfailed" in ran.values()
