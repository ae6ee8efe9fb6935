"""Faults during `kbtool bench`, one table row each: a bench is never lost, never unreadable by kbtool itself, never
green on a failure, never a traceback, never leaves a process behind.

    files      what bench writes, `bench --from` reads back, for every backend and result status; a schema-valid
               file that kbtool cannot use (deep nesting, a missing median, a median of 0, inf or NaN) is one line,
               exit 2
    gate       an op that now raises, crashes, times out, is unsupported or is gone fails the gate (exit 1) with a
               line naming op, size, backend and mode
    views      backend text is text in the terminal and in bench.md (no ANSI escape, HTML or Markdown image);
               the HTML page carries a Content-Security-Policy that allows only its own inline style
    signals    SIGINT / SIGTERM during the peak or with a hung worker: the partial bench within a second, marked
               incomplete, exit 130 / 143, no worker left; a second signal leaves no worker either (and lets the
               partial bench be written), a third exits at once
    backends   a named backend that could not start fails the bench (exit 1, with its reason); an op whose output
               shape changes between calls is flagged

Custom backends (`fbk.<fault>`) are the NumPy reference plus one fault, on kbtool's own Python. In-process runs
measure a small peak (the full one is the slowest part of a small bench)."""

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import kbtool
from kbtool.bench import html_view, markdown_view, peak
from kbtool.bench import report as bench_report
from kbtool.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))
QUICK = ["--op", "abs", "--size", "small", "--budget", "0.02", "--min-samples", "3"]
ABS_WITH = """import os, sys, time
import numpy as np
from kbtool.reference import *
from kbtool.reference import abs as _abs
from kbtool.reference.core import op
{head}

@op
def abs(x):
    {body}
    return _abs(x)
"""
FAULTS = {
    "ok": ("", "pass"),
    "raises": ("", "raise ValueError('abs is broken now')"),
    "crash": ("", "os._exit(3)"),
    "hang": ("", "time.sleep(1000)"),
    "gone": ("del abs  # noqa", None),  # no abs at all: unsupported
    "broken": ("raise ImportError('this backend cannot start')", "pass"),
    "evil": (
        "",
        r"raise ValueError('<img src=x onerror=alert(1)> ![pic](http://e.invalid/p.png) [a](http://e.invalid) \x1b[31mRED\x1b]0;title\x07 [bold]x[/]')",
    ),
    "varies": ("_calls = [0]", "_calls[0] += 1\n    return np.zeros(_calls[0], dtype=np.float32)"),  # grows each call
}


def source(fault):
    head, body = FAULTS[fault]
    if body is None:
        return ABS_WITH.format(head="", body="pass") + "\n" + head + "\n"
    return ABS_WITH.format(head=head, body=body)


@pytest.fixture
def fbk(custom_backend, tmp_path, monkeypatch):
    """fbk(fault) -> the module name "fbk.fault" (written as the NumPy reference plus that fault)."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    real = peak.measure
    monkeypatch.setattr(peak, "measure", lambda: real(matmul_n=128, copy_mb=1, repeats=2))

    def write(fault, name=None):
        return custom_backend("fbk", name or fault, source(fault))

    return write


def bench(*args):
    result = CliRunner().invoke(main, ["bench"] + [str(a) for a in args])
    uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not uncaught, f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


def load(path):
    with open(str(path)) as fh:
        return json.load(fh)


def dump(data, path):
    with open(str(path), "w") as fh:
        json.dump(data, fh)
    return path


# ------------------------------------------------------------------------------------------------ files


def test_every_status_bench_writes_is_one_from_reads(fbk, tmp_path):
    """available, broken and not run backends; ok, raised, crash and unsupported results; one file."""
    names = [fbk(f) for f in ("ok", "raises", "crash", "gone", "broken")]
    out = tmp_path / "b.json"
    args = ["--mode", "eager", "-o", out] + QUICK
    code, stdout, _ = bench(*args, *sum((["--backend", n] for n in names), []))
    assert code == 1 and bench_report.validate(load(out)) == []
    data = load(out)
    assert {b["status"] for b in data["backends"]} == {"available", "broken"}
    assert {r["status"] for r in data["results"]} == {"ok", "raised", "crash", "unsupported"}
    code, again, stderr = bench("--from", out)
    assert code == 1 and stderr == "" and again.splitlines()[-1] == stdout.splitlines()[-1]


def test_the_schema_and_the_writer_share_one_backend_status_vocabulary():
    from kbtool.results import BackendStatus

    schema = bench_report.schema()
    words = set(schema["properties"]["backends"]["items"]["properties"]["status"]["enum"])
    assert words == {s.value for s in BackendStatus} | {bench_report.NOT_RUN}


@pytest.mark.parametrize(
    "status, reason",
    [("not installed", "not installed: run `kbtool env install x`"), ("not run", "interrupted before it ran")],
)
def test_a_bench_with_a_backend_that_did_not_run_is_read_back(fbk, tmp_path, status, reason):
    out = tmp_path / "b.json"
    assert bench("--backend", fbk("ok"), "--mode", "eager", "-o", out, *QUICK)[0] == 0
    data = load(out)
    data["backends"].append({"name": "other", "kind": "builtin", "status": status, "reason": reason})
    data["summary"]["ok"] = True
    code, stdout, stderr = bench("--from", dump(data, out))
    assert code == 0 and stderr == "" and f"other: {status} ({reason})" in stdout


# schema-valid files kbtool could not use: a traceback each before (KeyError, OverflowError, ZeroDivisionError,
# RecursionError), or a gate that passed on a NaN
def _nested(data):
    data["results"][0]["kwargs"] = {"deep": "DEEP"}
    return json.dumps(data).replace('"DEEP"', "[" * 100000 + "]" * 100000, 1)


def _set(key, value):
    def change(data):
        for r in data["results"]:
            if value is KeyError:
                r.pop(key, None)
            else:
                r[key] = value
        return data

    return change


UNUSABLE = {
    "deep nesting": (_nested, "nested too deeply"),
    "no median_s": (_set("median_s", KeyError), "median_s"),
    "no iqr_s": (_set("iqr_s", KeyError), "iqr_s"),
    "no one_time": (_set("one_time", KeyError), "one_time"),
    "median inf": (_set("median_s", math.inf), "median_s"),
    "median 0": (_set("median_s", 0.0), "median_s"),
    "median NaN": (_set("median_s", math.nan), "median_s"),
    "samples NaN": (_set("samples_s", [math.nan, math.nan, math.nan]), "samples_s"),
    "no samples": (_set("samples_s", []), "samples_s"),
    "n negative": (_set("n", -1.0), "/n"),
}


@pytest.fixture
def measured(fbk, tmp_path):
    out = tmp_path / "good.json"
    assert bench("--backend", fbk("ok"), "-o", out, *QUICK)[0] == 0
    return out


@pytest.mark.parametrize("fault", sorted(UNUSABLE))
@pytest.mark.parametrize("use", ["--from", "--compare"])
def test_a_file_kbtool_cannot_use_is_one_line_and_exit_2(measured, tmp_path, fault, use):
    change, words = UNUSABLE[fault]
    changed = change(load(measured))
    bad = tmp_path / "bad.json"
    bad.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    args = ["--from", bad] if use == "--from" else ["--from", measured, "--compare", bad]
    code, stdout, stderr = bench(*args)
    assert code == 2 and stdout == "", (code, stdout[-300:])
    assert len(stderr.splitlines()) == 1 and words in stderr and str(bad) in stderr


def test_a_nan_never_passes_a_comparison_silently():
    from kbtool.bench import compare

    row = {"op": "abs", "size": "small", "backend": "b", "mode": "eager", "status": "ok"}
    good = dict(row, median_s=1e-6, samples_s=[1e-6] * 5)
    for bad in (math.nan, math.inf, 0.0):
        for current, base in ((good, dict(good, median_s=bad)), (dict(good, median_s=bad), good)):
            found = compare.compare({"results": [current]}, {"results": [base]}, "base.json")
            assert found["failed"] and found["rows"][0]["verdict"] == "not comparable", bad


# ------------------------------------------------------------------------------------------------ gate

GATE = {  # fault now -> what the line says
    "raises": "raised now",
    "crash": "crash now",
    "gone": "unsupported now",
    "broken": "gone",
}


@pytest.mark.parametrize("fault", sorted(GATE) + ["timeout"])
def test_an_op_that_fails_now_fails_the_gate_with_a_line_that_names_it(fbk, tmp_path, fault):
    name = fbk("ok", "kb")
    base, now = tmp_path / "base.json", tmp_path / "now.json"
    args = ["--backend", name, "--mode", "eager"] + QUICK
    assert bench(*args, "-o", base)[0] == 0
    if fault == "timeout":  # a real one waits a minute: the reply of a timed-out request, as measure.result_of keeps it
        data = load(base)
        r = data["results"][0]
        for key in [k for k in r if k not in ("op", "size", "n", "backend", "mode", "inputs", "kwargs", "wall_s")]:
            del r[key]
        r.update(status="timeout", message="no answer within 60 s; worker killed", ratio_to_fastest=None)
        data["summary"].update(measured=0, failed=1)
        code, stdout, _ = bench("--from", dump(data, now), "--compare", base)
        words = "timeout now"
    else:
        fbk(fault, "kb")
        code, stdout, _ = bench(*args, "--compare", base, "-o", now)
        words = GATE[fault]
    assert code == 1, stdout
    line = [x for x in stdout.splitlines() if x.startswith(f"gate: abs small {name} eager: ")]
    assert len(line) == 1 and words in line[0], stdout
    assert "gate FAILED" in stdout.splitlines()[-1]


def test_results_outside_this_bench_s_selection_do_not_fail_the_gate(fbk, tmp_path):
    name = fbk("ok")
    base = tmp_path / "base.json"
    assert bench("--backend", name, "-o", base, *QUICK)[0] == 0  # both modes
    code, stdout, _ = bench("--backend", name, "--mode", "eager", "--compare", base, "--json", *QUICK)
    rows = {r["mode"]: r for r in json.loads(stdout)["comparison"]["rows"]}
    assert rows["symbolic"]["verdict"] == "not benched" and not rows["symbolic"]["fails_gate"]
    assert code in (0, 1) and rows["eager"]["fails_gate"] == (code == 1)


# ------------------------------------------------------------------------------------------------ views

EVIL_PARTS = ("<img", "![pic](", "[a](", "\x1b", "\x07")


def test_backend_text_is_escaped_in_the_terminal_and_markdown_and_the_page_has_a_csp(fbk, tmp_path):
    import base64
    import hashlib
    import re

    name = fbk("evil")
    md, page = tmp_path / "b.md", tmp_path / "b.html"
    code, stdout, _ = bench("--backend", name, "--mode", "eager", "-o", md, "-o", page, *QUICK)
    assert code == 1
    markdown = md.read_text()
    assert "onerror=alert(1)" in markdown and "onerror=alert(1)" in stdout  # shown, as text
    for part in EVIL_PARTS:
        assert part not in markdown, part
    assert "\x1b" not in stdout and "\x07" not in stdout  # HTML and Markdown are inert text in a terminal
    assert "[bold]x[/]" in stdout  # rich markup in backend text is shown, not applied
    html = page.read_text()
    assert "<img" not in html
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "script-src" not in csp
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in csp
    assert ' style="' not in html  # an inline style attribute would need 'unsafe-inline'


def test_views_render_the_views_of_a_bench_with_every_status(measured):
    data = load(measured)
    for view in (markdown_view, html_view):
        assert view.render(data)


# ------------------------------------------------------------------------------------------------ signals


def _children_groups(pid):
    """Process groups led by the children of `pid` (bench's workers lead their own)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(_alive(int(p)) for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == pgid)


def _pgid(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


SIGNALS = {
    # name: (backends, wait for, signals (name, delay after the previous), exit code)
    "SIGTERM in the first peak": (["numpy"], "peak", [("SIGTERM", 0.2)], 143),
    "SIGINT in the first peak": (["numpy"], "peak", [("SIGINT", 0.2)], 130),
    "SIGTERM with a hung worker": (["fbk.hang", "numpy"], "worker", [("SIGTERM", 0.3)], 143),
    "SIGINT with a hung worker": (["fbk.hang", "numpy"], "worker", [("SIGINT", 0.3)], 130),
    "two SIGINTs with a hung worker": (["fbk.hang"], "worker", [("SIGINT", 0.3), ("SIGINT", 0.01)], 130),
    "three SIGTERMs with a hung worker": (["fbk.hang"], "worker", [("SIGTERM", 0.3)] + [("SIGTERM", 0.0)] * 2, 143),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SIGNALS))
def test_a_signal_stops_the_bench_within_a_second_with_the_partial_bench_and_no_process_left(
    custom_backend, tmp_path, case
):
    backends, wait_for, signals, exit_code = SIGNALS[case]
    custom_backend("fbk", "hang", source("hang"))
    out = tmp_path / "b.json"
    env = dict(os.environ, KBTOOL_HOME=str(tmp_path / "home"))
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")])
    argv = (
        [sys.executable, "-m", "kbtool", "bench", "-o", str(out)]
        + QUICK
        + sum((["--backend", b] for b in backends), [])
    )
    proc = subprocess.Popen(
        argv,
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    groups = []
    try:
        deadline = time.monotonic() + 60
        for line in proc.stderr:
            if "peak first" in line:
                break
        assert time.monotonic() < deadline
        if wait_for == "worker":  # the hung worker has started (and got its request: a moment later)
            while not groups and time.monotonic() < deadline:
                groups = _children_groups(proc.pid)
                time.sleep(0.05)
            time.sleep(1.5)
        for name, delay in signals:
            time.sleep(delay)
            proc.send_signal(getattr(signal, name))
        sent = time.monotonic()
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_code, stderr
    assert "Traceback" not in stderr
    assert took < 3.0, took  # 1 s on an idle machine; the margin is for a loaded CI machine
    assert not [g for g in groups if _group_alive(g)], "a worker outlived the bench"
    if len(signals) > 2:  # a third signal exits at once: the partial bench may be written or not, never half
        assert not [p for p in os.listdir(str(tmp_path)) if p.endswith(".tmp")]
        assert "again: exiting at once" in stderr or out.exists()
        return
    data = load(out)  # a second signal lets it be written (the workers are gone: a moment)
    assert bench_report.validate(data) == [] and data["incomplete"]["signal"] in stderr + stdout
    assert data["summary"]["ok"] is False
    statuses = {b["name"]: b["status"] for b in data["backends"]}
    if "numpy" in backends and wait_for == "worker":
        assert statuses["numpy"] == "not run"
    if wait_for == "peak":
        assert data["peak"] is None and statuses == {"numpy": "not run"}


# ------------------------------------------------------------------------------------------------ backends


def test_a_named_backend_that_could_not_start_fails_the_bench_with_its_reason(fbk, tmp_path):
    code, stdout, _ = bench("--backend", "numpy", "--backend", fbk("broken"), "--mode", "eager", *QUICK)
    assert code == 1
    assert "this backend cannot start" in stdout.splitlines()[-1] and "not ok" in stdout.splitlines()[-1]


def test_an_op_whose_output_shape_varies_between_calls_is_flagged(fbk, tmp_path):
    out = tmp_path / "b.json"
    code, stdout, _ = bench("--backend", fbk("varies"), "--mode", "eager", "-o", out, *QUICK)
    r = load(out)["results"][0]
    assert r["status"] == "ok" and r["output_varies"] is True
    assert "output shape varies between calls" in r["message"] and "output shape varies" in stdout


@pytest.mark.parametrize("status", ["ok", "raised", "unsupported", "crash", "timeout", "error"])
def test_each_result_and_backend_status_bench_writes_is_read_back(measured, tmp_path, status):
    """Every word of the schema's result and backend statuses, as measure.result_of and the command write them."""
    from kbtool.bench import measure
    from kbtool.specs import loader

    data = load(measured)
    (item,) = measure.plan_items(loader.load(), ["abs"], ["small"])[0]
    replies = {
        "ok": {"status": "ok", "outputs": [], "one_time": data["results"][0]["one_time"], "loops": 1},
        "raised": {"status": "raised", "error": {"type": "ValueError", "message": "no"}},
        "unsupported": {"status": "unsupported", "message": "no abs"},
        "crash": {"status": "crash", "message": "worker died (exit 3)"},
        "timeout": {"status": "timeout", "message": "no answer within 60 s; worker killed"},
        "error": {"status": "unreadable", "message": "a reply kbtool could not read"},
    }
    header = dict(replies[status], warmup_calls=0, samples=[1e-6, 2e-6, 3e-6])
    r = measure.result_of("fbk.ok", item, "eager", header)
    assert r["status"] == status
    results = [r]
    measure.finish(results, {("abs", "small"): (item.family, item.case)}, data["peak"])
    backends = [dict(data["backends"][0], name=word, status=word) for word in bench_report.BACKEND_STATUSES]
    written = bench_report.assemble(
        bench_report.BenchRun(
            "kbtool bench",
            data["machine"],
            data["peak"],
            data["settings"],
            data["families"],
            backends,
            results,
            [],
            1.0,
        )
    )
    path = tmp_path / "b.json"
    path.write_text(bench_report.dumps(written))
    assert bench_report.load(str(path)) == json.loads(json.dumps(written))
    code, stdout, stderr = bench("--from", path)
    assert code == 1 and stderr == "" and "broken could not start" in stdout.splitlines()[-1]


def test_an_in_process_bench_gives_the_signal_handlers_back(fbk):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert bench("--backend", fbk("ok"), "--mode", "eager", *QUICK)[0] == 0
    assert bench("--backend", fbk("broken"), "--mode", "eager", *QUICK)[0] == 1
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
