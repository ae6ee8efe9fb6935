"""Reliability of the files kbtool reads and writes (issue #32): an output that is also an input is refused before
anything is written; the history and known-differences files are updated under a lock, all or nothing; a history
line with NaN costs only that line; the history's Markdown view keeps every outside text as text."""

import errno
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from kbtool import files
from kbtool.cli import main
from kbtool.reports import history

from .helpers import available, make_report, record
from .test_history import release_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(result, said):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.output.strip().splitlines()) == 1 and said in result.output, result.output


def history_file(tmp_path, name="h.jsonl", reports=(("2.2.4", "2024-05-01T12:00:00+00:00"),)):
    path = tmp_path / name
    lines = [line for version, date in reports for line in history.lines_of(release_report(version, date))]
    path.write_text("".join(history.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def save(tmp_path, name, report):
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


# --- 3. an output over an input ------------------------------------------------------------------------------------


def _report_file(tmp_path, name="r.json"):
    return save(tmp_path, name, release_report("2.2.4", "2024-05-01T12:00:00+00:00"))


@pytest.mark.parametrize(
    "make_args",
    [
        # the history drawn over itself (its page is .json, so the extension does not stop it)
        lambda t: ("report", "history", history_file(t, "h.json"), "-o", t / "h.json"),
        # check writes its report where its history is, and would then append to the report
        lambda t: ("check", "--op", "abs", "--history", history_file(t, "h.json"), "-o", t / "h.json"),
        lambda t: ("report", "render", _report_file(t), "-o", t / "r.json"),
        lambda t: ("report", "merge", _report_file(t), "-o", t / "r.json"),
        lambda t: ("report", "judge", _report_file(t), "-o", t / "r.json"),
        lambda t: ("report", "devices", _report_file(t), _report_file(t, "d.json"), "-o", t / "d.json"),
        lambda t: ("report", "migration", _report_file(t), "-o", t / "r.md", "--map", t / "r.md"),
        lambda t: ("bench", "--from", _report_file(t), "-o", t / "r.json"),
        lambda t: ("known", "record", _report_file(t), "--known", t / "r.json"),
    ],
    ids=["history", "check", "render", "merge", "judge", "devices", "migration", "bench", "known-record"],
)
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(tmp_path, make_args):
    args = make_args(tmp_path)
    if args[0] == "report" and args[1] == "migration":
        (tmp_path / "r.md").write_text("a map\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    one_line_error(run(*args), "is also an input of this command")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_an_output_through_a_symlink_or_a_hard_link_to_an_input_is_refused(tmp_path):
    page = history_file(tmp_path, "h.json")
    before = page.read_bytes()
    (tmp_path / "link.json").symlink_to(page)
    os.link(page, tmp_path / "hard.json")
    for out in ("link.json", "hard.json"):
        one_line_error(run("report", "history", page, "-o", tmp_path / out), "(as ")
    assert page.read_bytes() == before
    assert run("report", "history", page, "-o", tmp_path / "page.json").exit_code == 0  # another file: written


# --- 4. two runs updating one file at once -------------------------------------------------------------------------


def _after_read(module, name, barrier):
    """Make module.name wait (at most 2 s) for the other writer once it has read the file: without a lock both
    read the old file before either writes (the lost update); with one, the second reads only after the first
    wrote (the first's wait times out, the second's barrier is broken and passes at once)."""
    real = getattr(module, name)

    def waiting(*args, **kwargs):
        out = real(*args, **kwargs)
        try:
            barrier.wait(timeout=2)
        except threading.BrokenBarrierError:
            pass
        return out

    setattr(module, name, waiting)


def _history_writer(path, lines, barrier, done):
    _after_read(history, "read", barrier)
    try:
        done.put(history.append(path, lines))
    except Exception as exc:  # pragma: no cover - reported to the test
        done.put(repr(exc))


def _run_both(target, args_a, args_b):
    ctx = multiprocessing.get_context("fork")
    barrier, done = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, done)) for args in (args_a, args_b)]
    for proc in procs:
        proc.start()
    outs = [done.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    return outs


def test_two_history_appends_at_once_keep_every_line_once(tmp_path):
    path = history_file(tmp_path)
    one, two, three = (
        history.lines_of(release_report(v, f"2024-05-0{i}T12:00:00+00:00"))[0]
        for i, v in ((2, "2.2.5"), (3, "2.3.0"), (4, "2.3.1"))
    )
    outs = _run_both(_history_writer, (str(path), [one, two]), (str(path), [two, three]))
    assert sorted(outs) == [(1, 1), (2, 0)], outs  # one of them found `two` already there
    entries, found = history.read(str(path))
    assert found == []
    assert sorted(entry["backend"] for entry, _ in entries) == sorted(
        f"tensorflow1[keras={v}]" for v in ("2.2.4", "2.2.5", "2.3.0", "2.3.1")
    )


KNOWN = """- op: abs
  backend: numpy
  status: [fail]
  match: "."
  reason: one

- op: sum
  backend: theano
  status: [fail]
  match: "."
  reason: two
"""


def _one_op_report(tmp_path, name, op, backend):
    report = make_report([available(backend)], [record(op, "c1", backend, "fail", message="values differ")])
    report["plan"] = {
        "ops": [op],
        "case_patterns": [],
        "modes": ["eager"],
        "examples_only": False,
        "whole_spec": False,
        "all_cases": True,
        "counts_comparable": False,
        "shard": None,
    }
    return save(tmp_path, name, report)


def _known_writer(report, known_file, barrier, done):
    from kbtool.known import record as record_mod

    _after_read(record_mod, "record", barrier)
    result = CliRunner().invoke(main, ["known", "record", report, "--known", known_file])
    done.put((result.exit_code, result.output))


def test_two_known_records_at_once_keep_both_updates(tmp_path):
    known_file = tmp_path / "known.yaml"
    known_file.write_text(KNOWN)
    a = _one_op_report(tmp_path, "a.json", "abs", "numpy")
    b = _one_op_report(tmp_path, "b.json", "sum", "theano")
    outs = _run_both(_known_writer, (str(a), str(known_file)), (str(b), str(known_file)))
    assert [code for code, _ in outs] == [0, 0], outs
    text = known_file.read_text()
    assert '"abs c1 numpy eager": "fail | values differ"' in text
    assert '"sum c1 theano eager": "fail | values differ"' in text


def test_a_lock_held_too_long_is_one_line(tmp_path, monkeypatch):
    path = history_file(tmp_path)
    before = path.read_bytes()
    monkeypatch.setattr(files, "LOCK_WAIT_SECONDS", 0.2)
    other = subprocess.Popen(  # another run holding the history's lock
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f,2); print(1,flush=True); time.sleep(30)",
            str(path) + ".lock",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert other.stdout.readline().strip() == b"1"
        report = save(tmp_path, "r.json", release_report("2.2.5", "2024-05-02T12:00:00+00:00"))
        one_line_error(run("report", "history-add", report, "--history", path), "is being updated by another run")
    finally:
        other.kill()
        other.wait()
    assert path.read_bytes() == before


# --- 6. NaN in a history line ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_line_with_nan_costs_only_that_line(tmp_path, constant):
    path = history_file(
        tmp_path, reports=(("2.2.4", "2024-05-01T12:00:00+00:00"), ("2.2.5", "2024-05-02T12:00:00+00:00"))
    )
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"conformance":80.0', f'"conformance":{constant}')
    assert constant in lines[1]
    path.write_text("\n".join(lines) + "\n")
    for fmt in ("terminal", "markdown", "json", "html"):
        out = run("report", "history", path, "--format", fmt)
        assert out.exit_code == 0 and out.exception is None or isinstance(out.exception, SystemExit), out.output
        assert f"h.jsonl:2: not JSON ({constant} is not a JSON number)" in out.output
        assert "keras 2.2.4" in out.output and "keras 2.2.5" not in out.output.replace("h.jsonl:2", "")


def test_the_history_schema_refuses_a_number_that_is_not_finite():
    line = history.lines_of(release_report("2.2.4", "2024-05-01T12:00:00+00:00"))[0]
    assert history.problems(dict(line, conformance=float("nan"))) == ["conformance: not a finite number"]
    figure = dict(line["pass_as_is"], percent=float("inf"))
    assert history.problems(dict(line, pass_as_is=figure))  # the schema's maximum of 100 says so first


# --- 8. the history's Markdown view ----------------------------------------------------------------------------------

HOSTILE = "evil\n# injected heading <iframe src=x></iframe> | a `tick"


def test_the_markdown_view_keeps_outside_text_as_text(tmp_path):
    first, second = (
        history.lines_of(release_report(v, f"2024-05-0{i}T12:00:00+00:00"))[0] for i, v in ((1, "2.2.4"), (2, "2.2.5"))
    )
    lines = []
    for line in (first, second):  # plain runs of a backend whose name (and base) is hostile
        line = dict(line, backend=HOSTILE, base=HOSTILE, ops=dict(line["ops"]))
        lines.append(line)
    lines[1]["ops"]["a`b|c\n# x <iframe>"] = lines[1]["ops"]["dot"]
    gap = dict(
        history.lines_of(release_report("2.3.0", "2024-05-03T12:00:00+00:00"))[0],
        did_not_run={"status": "could_not_start", "reason": "pip said:\n# boom <iframe src=y> `x` | y"},
        ops={},
    )
    for line in lines + [gap]:
        assert history.problems(line) == []
    path = tmp_path / "h.jsonl"
    path.write_text("".join(history.dumps(line) + "\n" for line in lines + [gap]), encoding="utf-8")
    out = tmp_path / "h.md"
    assert run("report", "history", path, "-o", out).exit_code == 0
    page = out.read_text()
    assert run("report", "history", path, "--format", "markdown").output == page
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert all("injected" not in h or h.startswith(("## evil", "### evil")) for h in headings), headings
    assert not any(line.startswith(("# injected", "# boom", "# x")) for line in page.splitlines())
    # the op's code span holds its whole name: no backtick in it closes the span early (in it, <iframe> is text)
    (op_line,) = [line for line in page.splitlines() if "a'b|c # x" in line]
    assert op_line.strip().startswith("- `a'b|c # x <iframe>`:"), op_line
    assert "<iframe" not in page.replace(op_line, "") and "&lt;iframe" in page
    assert "pip said: # boom &lt;iframe src=y&gt; \\`x\\` \\| y" in page


# --- 11. a history write cut short -----------------------------------------------------------------------------------


def test_a_history_append_cut_short_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = history_file(tmp_path)
    before = path.read_bytes()
    report = save(tmp_path, "r.json", release_report("2.2.5", "2024-05-02T12:00:00+00:00"))
    real_write = os.write

    def half_then_efbig(fd, data):
        if len(data) < 64:
            return real_write(fd, data)
        if not getattr(half_then_efbig, "cut", False):
            half_then_efbig.cut = True
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(os, "write", half_then_efbig)
    out = run("report", "history-add", report, "--history", path)
    monkeypatch.undo()
    one_line_error(out, "File too large")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_history_append_past_ulimit_f_leaves_the_file_as_it_was(tmp_path):
    path = history_file(tmp_path)
    before = path.read_bytes()
    report = save(tmp_path, "r.json", release_report("2.2.5", "2024-05-02T12:00:00+00:00"))
    limit = len(before) + 100  # room for part of the new line, not all of it

    def ulimit_f():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "kbtool", "report", "history-add", str(report), "--history", str(path)],
        env=dict(os.environ, PYTHONPATH=ROOT),
        preexec_fn=ulimit_f,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "File too large" in done.stderr, done.stderr
    assert path.read_bytes() == before
