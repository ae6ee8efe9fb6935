"""A fresh adversarial pass over kbtool's newest commands (issue #32): run it, read the tally.

    python scripts/adversarial/attacks.py            # every attack, 2 at once
    python scripts/adversarial/attacks.py -k judge   # those whose id or family contains "judge"
    python scripts/adversarial/attacks.py -j 1 -v    # one at a time, each attack's outcome

Each attack is a record: an id, the command family, what it tries, a shell command (run by bash in a
scratch cwd of its own, with KBTOOL_HOME a scratch home of its own, `$K` = `python -m kbtool` of this
checkout, `$FIX` the shared read-only inputs, `$CANARY` a path nothing may create), an optional setup
that writes its inputs, and the checks that decide defect / no defect. Every attack gets the generic
checks: an exit code it documents (default 0, 1, 2 or 130), no "Traceback", done within its bound, no
process of its session left, `$CANARY` not made, its inputs (files under `in/`) unchanged, no temporary
file left beside what it wrote, a failure that says something; its own checks add the rest (escaped
output, valid JSON, a file left whole). Nothing installs a real env: `env install` attacks fail before
pip runs or use a fake interpreter. The tally prints one line per defect found; exit 1 when any.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "tests" / "fixtures" / "gpu_h100"
COLUMNS = (
    "tracebacks",
    "hangs",
    "lost/wrong",
    "leftover processes",
    "security",
    "leftovers",
    "misleading messages",
)
TEMP_MARKS = (".tmp", ".part", ".partial", "~")
ESC = "\x1b"


@dataclass
class Run:
    rc: Optional[int]
    out: str
    err: str
    seconds: float
    cwd: Path
    home: Path
    timed_out: bool

    @property
    def text(self) -> str:
        return self.out + self.err


Check = Callable[[Run], List[Tuple[str, str]]]


@dataclass
class Attack:
    id: str
    family: str
    tries: str
    cmd: str
    setup: Optional[Callable[[Path, Path], None]] = None
    checks: Sequence[Check] = ()
    rc: Tuple[int, ...] = (0, 1, 2, 130)
    timeout: float = 60.0
    signal_after: Optional[Tuple[int, float]] = None


# ---- checks -------------------------------------------------------------------------------------


def no_esc(run: Run) -> List[Tuple[str, str]]:
    """Terminal injection: a raw ESC from hostile input must not reach the terminal."""
    return [("security", "a raw ESC byte reached the output")] if ESC in run.text else []


def no_raw_markup(*files: str) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        found = []
        for name in files:
            path = run.cwd / name
            if path.is_file() and "<script>alert" in path.read_text(errors="replace"):
                found.append(("security", f"{name} holds the injected <script> unescaped"))
        return found

    return check


def stdout_has_no_raw_markup(run: Run) -> List[Tuple[str, str]]:
    return [("security", "stdout holds the injected <script> unescaped")] if "<script>alert" in run.out else []


def strict_json(text: str) -> Optional[str]:
    def bad(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    try:
        json.loads(text, parse_constant=bad)
    except ValueError as error:
        return str(error)[:120]
    return None


def stdout_is_json(run: Run) -> List[Tuple[str, str]]:
    if run.rc == 2:
        return []
    problem = strict_json(run.out)
    return [("lost/wrong", f"--json output is not valid JSON: {problem}")] if problem else []


def file_is_json(name: str) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        path = run.cwd / name
        if not path.exists():
            return []
        text = gzip.open(path, "rt").read() if name.endswith(".gz") else path.read_text()
        problem = strict_json(text)
        return [("lost/wrong", f"{name} is not valid JSON: {problem}")] if problem else []

    return check


def absent(name: str, column: str = "leftovers") -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        return [(column, f"{name} was left/made")] if (run.cwd / name).exists() else []

    return check


def says(*words: str) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        low = run.text.lower()
        return [] if any(w.lower() in low for w in words) else [("misleading messages", f"says none of {words}")]

    return check


def one_line_error(run: Run) -> List[Tuple[str, str]]:
    """A refusal is one `kbtool: error:` line (or click's usage error), not a page."""
    if run.rc != 2:
        return []
    if "error" not in run.err.lower():
        return [("misleading messages", "exit 2 without an error line on stderr")]
    return []


def history_lines(name: str, count: int) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        path = run.cwd / name
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []
        bad = [ln for ln in lines if strict_json(ln)]
        found = []
        if len(lines) != count:
            found.append(("lost/wrong", f"{name} has {len(lines)} lines, expected {count}"))
        if bad:
            found.append(("lost/wrong", f"{name} has {len(bad)} lines that are not JSON"))
        return found

    return check


def still_fifo(name: str) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        if stat.S_ISFIFO(os.lstat(run.cwd / name).st_mode):
            return []
        return [("security", f"the device-like {name} a link pointed at was replaced by a file")]

    return check


def whole_history(name: str) -> Check:
    """After an interrupt: the run's line is there or not, never half of it."""

    def check(run: Run) -> List[Tuple[str, str]]:
        path = run.cwd / name
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []
        if len(lines) > 1 or any(strict_json(ln) for ln in lines):
            return [("lost/wrong", f"{name} is not whole after the interrupt: {len(lines)} lines")]
        return []

    return check


def unchanged(name: str, digest_of: Dict[str, str]) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        path = run.cwd / name
        now = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"
        return [] if now == digest_of.get(name) else [("lost/wrong", f"{name} changed though the command failed")]

    return check


def yaml_ok(name: str) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        import yaml

        try:
            data = yaml.safe_load((run.cwd / name).read_text())
        except Exception as error:
            return [("lost/wrong", f"{name} is no longer YAML: {str(error)[:80]}")]
        return [] if isinstance(data, list) else [("lost/wrong", f"{name} is no longer a list of entries")]

    return check


def not_rc(*codes: int) -> Check:
    def check(run: Run) -> List[Tuple[str, str]]:
        return [("lost/wrong", f"exit {run.rc}: the run's outcome was misreported")] if run.rc in codes else []

    return check


# ---- inputs -------------------------------------------------------------------------------------


def base_report(fix: Path) -> dict:
    return json.loads((fix / "tf32.json").read_text())


def write(path: Path, data: object, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, (bytes, str)) else json.dumps(data, allow_nan=True)
    blob = raw.encode() if isinstance(raw, str) else raw
    if gz:
        blob = gzip.compress(blob)
    path.write_bytes(blob)


def report_with(mutate: Callable[[dict], object], name: str = "in/r.json") -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        report = base_report(fix)
        out = mutate(report)
        write(cwd / name, report if out is None else out)

    return setup


def raw_file(content: bytes, name: str = "in/r.json") -> Callable[[Path, Path], None]:
    return lambda cwd, fix: write(cwd / name, content)


def fifo(name: str = "in/r.json") -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(cwd / name)

    return setup


def directory(name: str = "in/r.json") -> Callable[[Path, Path], None]:
    return lambda cwd, fix: (cwd / name).mkdir(parents=True, exist_ok=True)


def truncated_gzip(cwd: Path, fix: Path) -> None:
    blob = gzip.compress((fix / "tf32.json").read_bytes())
    write(cwd / "in/r.json.gz", blob[: len(blob) // 2])


def gzip_bomb(cwd: Path, fix: Path) -> None:
    """400 MB of spaces in a few hundred KB: a reader must not hang or die on it."""
    path = cwd / "in/r.json.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb", compresslevel=9) as out:
        chunk = b" " * (1 << 22)
        for _ in range(100):
            out.write(chunk)
        out.write(b"{}")


def both(*setups: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        for one in setups:
            one(cwd, fix)

    return setup


def copy(src: str, name: str) -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(src.replace("$FIX", str(fix)).replace("$REPO", str(REPO))), cwd / name)

    return setup


def fake_python(body: str, name: str = "in/fakepy") -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        path = cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(0o755)

    return setup


def known_file(text: str, name: str = "in/known.yaml") -> Callable[[Path, Path], None]:
    return lambda cwd, fix: write(cwd / name, text)


def probes(data: object) -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        write(cwd / "home/probes.json", data if isinstance(data, (str, bytes)) else json.dumps(data))

    return setup


def history_file(lines: Sequence[object]) -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        text = "".join((ln if isinstance(ln, str) else json.dumps(ln, allow_nan=True)) + "\n" for ln in lines)
        write(cwd / "in/h.jsonl", text)

    return setup


def history_line(fix: Path) -> dict:
    return json.loads((fix / "h.jsonl").read_text().splitlines()[0])


def history_with(field_name: str, value: object) -> Callable[[Path, Path], None]:
    def setup(cwd: Path, fix: Path) -> None:
        good = history_line(fix)
        bad = dict(good, **{field_name: value})
        history_file([good, bad])(cwd, fix)

    return setup


# ---- the attacks --------------------------------------------------------------------------------

HOSTILE = "x\x1b[31mRED\x1b[0m\n<script>alert(1)</script>|`$(touch $CANARY)`;rm -rf /"
YAML_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)
J = "$K report judge"
D = "$K report devices"
CPU = f"{GPU}/cpu.json.gz"
DEV = f"{GPU}/gpu-default.json.gz"
HI = f"{GPU}/jaxgpu-highest.json.gz"
KNOWN_OK = (
    "- op: dot\n  case: grad\n  backend: tests.fixtures.tf32_backend\n  reason: a recorded difference for the attack\n"
)


def attacks() -> List[Attack]:
    a: List[Attack] = []

    def add(*args, **kwargs) -> None:
        a.append(Attack(*args, **kwargs))

    # -- report judge: hostile reports
    add("judge-missing", "judge", "a report that does not exist", f"{J} in/nope.json", rc=(2,), checks=[one_line_error])
    add("judge-empty", "judge", "an empty report", f"{J} in/r.json", raw_file(b""), rc=(2,), checks=[one_line_error])
    add("judge-dir", "judge", "a directory as report", f"{J} in/r.json", directory(), rc=(2,), checks=[one_line_error])
    add("judge-fifo", "judge", "a FIFO as report (nothing writes it)", f"{J} in/r.json", fifo(), rc=(2,), timeout=30)
    add(
        "judge-trunc-gz",
        "judge",
        "a truncated gzip",
        f"{J} in/r.json.gz",
        truncated_gzip,
        rc=(2,),
        checks=[one_line_error],
    )
    add("judge-gz-bomb", "judge", "a 400 MB gzip bomb", f"{J} in/r.json.gz", gzip_bomb, rc=(2,), timeout=90)
    add(
        "judge-binary",
        "judge",
        "binary garbage",
        f"{J} in/r.json",
        raw_file(bytes(range(256)) * 8),
        rc=(2,),
        checks=[one_line_error],
    )
    add("judge-array", "judge", "a JSON array", f"{J} in/r.json", raw_file(b"[1,2]"), rc=(2,), checks=[one_line_error])
    add("judge-null", "judge", "JSON null", f"{J} in/r.json", raw_file(b"null"), rc=(2,), checks=[one_line_error])
    add(
        "judge-results-str",
        "judge",
        "results a string",
        f"{J} in/r.json",
        report_with(lambda r: r.update(results="x")),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-results-none",
        "judge",
        "results null",
        f"{J} in/r.json",
        report_with(lambda r: r.update(results=None)),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-result-int",
        "judge",
        "a result that is an int",
        f"{J} in/r.json",
        report_with(lambda r: r["results"].append(5)),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-status-int",
        "judge",
        "a result's status an int",
        f"{J} in/r.json",
        report_with(lambda r: r["results"][0].update(status=3)),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-status-missing",
        "judge",
        "a result without status",
        f"{J} in/r.json",
        report_with(lambda r: r["results"][0].pop("status")),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-seconds-nan",
        "judge",
        "NaN seconds",
        f"{J} in/r.json -o out.json",
        report_with(lambda r: r["results"][0].update(seconds=float("nan"))),
        checks=[file_is_json("out.json")],
    )
    add(
        "judge-margin-inf",
        "judge",
        "an infinite margin",
        f"{J} in/r.json -o out.json",
        report_with(lambda r: r["results"][0].update(margin=float("inf"))),
        checks=[file_is_json("out.json")],
    )
    add(
        "judge-huge-int",
        "judge",
        "a 5000-digit seed",
        f"{J} in/r.json -o out.json",
        raw_file(b""),
        checks=[file_is_json("out.json")],
    )
    a[-1].setup = lambda cwd, fix: write(
        cwd / "in/r.json", (fix / "tf32.json").read_text().replace('"seed": 0', '"seed": ' + "9" * 5000, 1)
    )
    add(
        "judge-schema-999",
        "judge",
        "schema_version 999",
        f"{J} in/r.json",
        report_with(lambda r: r.update(schema_version=999)),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-backend-ansi",
        "judge",
        "ANSI/newline/markup in a backend name, terminal view",
        f"{J} in/r.json -o out.md -o out.html",
        report_with(lambda r: [x.update(backend=HOSTILE) for x in r["results"][:1]]),
        checks=[no_esc, no_raw_markup("out.md", "out.html")],
    )
    add(
        "judge-message-ansi",
        "judge",
        "ANSI/markup in a failing message",
        f"{J} in/r.json -o out.md -o out.html",
        report_with(lambda r: [x.update(status="fail", message=HOSTILE) for x in r["results"][:1]]),
        checks=[no_esc, no_raw_markup("out.md", "out.html")],
    )
    add(
        "judge-o-nodir",
        "judge",
        "-o into a missing folder (refused, as bisect's: issue #33)",
        f"{J} {CPU} -o no/such/dir/out.json",
        rc=(2,),
        checks=[one_line_error, absent("no")],
    )
    add(
        "judge-o-dir",
        "judge",
        "-o a directory",
        f"mkdir out.json && {J} {CPU} -o out.json",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-o-ext",
        "judge",
        "-o an unknown extension",
        f"{J} {CPU} -o out.txt",
        rc=(2,),
        checks=[one_line_error, absent("out.txt")],
    )
    add(
        "judge-ulimit",
        "judge",
        "a file-size limit (EFBIG) while writing -o",
        f"ulimit -f 16; {J} {CPU} -o out.json",
        rc=(2,),
        checks=[one_line_error, absent("out.json")],
    )
    add(
        "judge-known-missing",
        "judge",
        "--known missing",
        f"{J} {CPU} --known in/nope.yaml",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-known-dir",
        "judge",
        "--known a directory",
        f"{J} {CPU} --known in/k",
        directory("in/k"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-known-badyaml",
        "judge",
        "--known not YAML",
        f"{J} {CPU} --known in/known.yaml",
        known_file("- op: [\n  : :"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-known-bomb",
        "judge",
        "--known a YAML alias bomb",
        f"{J} {CPU} --known in/known.yaml",
        known_file(YAML_BOMB),
        rc=(2,),
        timeout=60,
        checks=[one_line_error],
    )
    add(
        "judge-known-types",
        "judge",
        "--known entries of wrong types",
        f"{J} {CPU} --known in/known.yaml",
        known_file("- op: 5\n  backend: [1]\n  reason: {a: 1}\n  count: x\n  results: [1]\n"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-highest-garbage",
        "judge",
        "--highest garbage",
        f"{J} {DEV} --highest in/h.json",
        raw_file(b"{", "in/h.json"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "judge-highest-fifo",
        "judge",
        "--highest a FIFO",
        f"{J} {DEV} --highest in/h.json",
        fifo("in/h.json"),
        rc=(2,),
        timeout=30,
    )
    add(
        "judge-sigint",
        "judge",
        "SIGINT at start",
        f"exec {J} {DEV} -o out.json",
        rc=(130,),
        signal_after=(signal.SIGINT, 3.0),
        checks=[file_is_json("out.json")],  # absent, or whole when the signal came after the write,
    )
    add(
        "judge-sigterm",
        "judge",
        "SIGTERM at start",
        f"exec {J} {DEV} -o out.json",
        rc=(143,),
        signal_after=(signal.SIGTERM, 3.0),
        checks=[file_is_json("out.json")],
    )
    add(
        "judge-name-shell",
        "judge",
        "a report file named with $() and ;",
        f"cp {CPU} '$(touch $CANARY);x.json.gz' && {J} '$(touch $CANARY);x.json.gz' -o out.md",
    )

    # -- report devices
    add("devices-swapped", "devices", "the two reports swapped", f"{D} {DEV} {CPU}", rc=(2,), checks=[one_line_error])
    add("devices-same", "devices", "the CPU report twice", f"{D} {CPU} {CPU}", rc=(2,), checks=[one_line_error])
    add(
        "devices-trunc",
        "devices",
        "a truncated gzip device report",
        f"{D} {CPU} in/r.json.gz",
        truncated_gzip,
        rc=(2,),
        checks=[one_line_error],
    )
    add("devices-fifo", "devices", "a FIFO device report", f"{D} {CPU} in/r.json", fifo(), rc=(2,), timeout=30)
    add(
        "devices-highest-dir",
        "devices",
        "--highest a directory",
        f"{D} {CPU} {DEV} --highest in/h",
        directory("in/h"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "devices-o-ext",
        "devices",
        "-o .html (only .json/.md)",
        f"{D} {CPU} {DEV} -o out.html",
        rc=(2,),
        checks=[one_line_error, absent("out.html")],
    )

    def gpu_hostile(field_name: str) -> Callable[[Path, Path], None]:
        def setup(cwd: Path, fix: Path) -> None:
            report = json.loads(gzip.open(DEV).read())
            for result in report["results"]:
                if result["status"] == "fail":
                    result[field_name] = HOSTILE
            write(cwd / "in/gpu.json", report)

        return setup

    add(
        "devices-message-ansi",
        "devices",
        "ANSI/markup in device messages, terminal + md",
        f"{D} {CPU} in/gpu.json -o out.md",
        gpu_hostile("message"),
        checks=[no_esc, no_raw_markup("out.md")],
    )
    add(
        "devices-case-ansi",
        "devices",
        "ANSI/markup in case ids",
        f"{D} {CPU} in/gpu.json -o out.md",
        gpu_hostile("case"),
        checks=[no_esc, no_raw_markup("out.md")],
    )

    def gpu_nan(cwd: Path, fix: Path) -> None:
        report = json.loads(gzip.open(DEV).read())
        for result in report["results"]:
            result["margin"] = float("nan")
            result["seconds"] = float("inf")
        write(cwd / "in/gpu.json", report)

    add(
        "devices-nan-json",
        "devices",
        "NaN/inf numbers, --json output",
        f"{D} {CPU} in/gpu.json --json",
        gpu_nan,
        checks=[stdout_is_json],
    )
    add(
        "devices-nan-ofile",
        "devices",
        "NaN/inf numbers, -o .json",
        f"{D} {CPU} in/gpu.json -o out.json",
        gpu_nan,
        checks=[file_is_json("out.json")],
    )
    add(
        "devices-ulimit",
        "devices",
        "EFBIG writing -o",
        f"ulimit -f 2; {D} {CPU} {DEV} -o out.json",
        rc=(2,),
        checks=[one_line_error, absent("out.json")],
    )

    # -- history-add / history / check --history
    HA = "$K report history-add"
    RH = "$K report history"
    TF = "$FIX/tf32.json"
    add(
        "hadd-dir",
        "history",
        "--history a directory",
        f"mkdir h && {HA} {TF} --history h",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "hadd-nodir",
        "history",
        "--history in a missing folder (made)",
        f"{HA} {TF} --history no/h.jsonl",
        rc=(0,),
        checks=[history_lines("no/h.jsonl", 1)],
    )
    add(
        "hadd-twice",
        "history",
        "the same report added twice",
        f"{HA} {TF} --history h.jsonl && {HA} {TF} --history h.jsonl",
        rc=(0,),
        checks=[history_lines("h.jsonl", 1)],
    )
    add(
        "hadd-one-bad",
        "history",
        "a good and a bad report: all or nothing",
        f"{HA} {TF} in/r.json --history h.jsonl",
        raw_file(b"{"),
        rc=(2,),
        checks=[absent("h.jsonl", "lost/wrong")],
    )
    add(
        "hadd-ulimit",
        "history",
        "EFBIG appending: earlier lines kept",
        f"cp $FIX/h.jsonl h.jsonl; sed 's/2026/2025/' $FIX/tf32.json > r.json; (ulimit -f 1; {HA} r.json --history h.jsonl)",
        rc=(2,),
        checks=[one_line_error, history_lines("h.jsonl", 1)],
    )
    add(
        "hadd-concurrent",
        "history",
        "two writers at once, 3 reports each",
        " ".join(f'sed \'s/"created": "2026/"created": "20{n}/\' $FIX/tf32.json > r{n}.json;' for n in range(10, 16))
        + f" ({HA} r10.json r11.json r12.json --history h.jsonl & {HA} r13.json r14.json r15.json --history h.jsonl & wait)",
        rc=(0,),
        timeout=90,
        checks=[history_lines("h.jsonl", 6)],
    )
    add(
        "hadd-hostile-backend",
        "history",
        "a backend name with ANSI/markup into history and its views",
        f"{HA} in/r.json --history h.jsonl && {RH} h.jsonl && {RH} h.jsonl -o out.html && {RH} h.jsonl -o out.md",
        report_with(
            lambda r: (
                [x.update(backend=HOSTILE) for x in r["results"]] + [b.update(name=HOSTILE) for b in r["backends"]]
            )
        ),
        checks=[no_esc, no_raw_markup("out.html", "out.md")],
    )
    add(
        "hadd-interrupted",
        "history",
        "an interrupted report",
        f"{HA} {CPU} --history h.jsonl",
        rc=(2,),
        checks=[one_line_error, absent("h.jsonl", "lost/wrong")],
    )
    add(
        "hadd-sigterm",
        "history",
        "SIGTERM at start",
        f"exec {HA} {TF} --history h.jsonl",
        rc=(143, 0),
        signal_after=(signal.SIGTERM, 0.3),
        checks=[whole_history("h.jsonl")],
    )
    add("hist-missing", "history", "a missing history file", f"{RH} in/none.jsonl", rc=(2,), checks=[one_line_error])
    add("hist-empty", "history", "an empty history file", f"{RH} in/h.jsonl", raw_file(b"", "in/h.jsonl"))
    add("hist-fifo", "history", "a FIFO history file", f"{RH} in/h.jsonl", fifo("in/h.jsonl"), rc=(2,), timeout=30)
    add(
        "hist-dir",
        "history",
        "a directory",
        f"{RH} in/h.jsonl",
        directory("in/h.jsonl"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "hist-garbage-lines",
        "history",
        "garbage lines between good ones",
        f"{RH} in/h.jsonl --format html -o out.html",
        lambda cwd, fix: history_file([history_line(fix), "{", "[1]", "null", "\x00\x01", HOSTILE, history_line(fix)])(
            cwd, fix
        ),
        checks=[says("line"), no_esc, no_raw_markup("out.html")],
    )
    add(
        "hist-binary",
        "history",
        "binary, invalid UTF-8",
        f"{RH} in/h.jsonl",
        raw_file(b"\xff\xfe\x00" * 100, "in/h.jsonl"),
    )
    add("hist-gz-bomb", "history", "a gzip bomb named .jsonl", f"{RH} in/r.json.gz", gzip_bomb, timeout=90)
    add(
        "hist-huge-line",
        "history",
        "one 60 MB line",
        f"{RH} in/h.jsonl",
        raw_file(b'{"a":"' + b"x" * 60_000_000 + b'"}\n', "in/h.jsonl"),
        timeout=90,
    )
    add(
        "hist-o-ext",
        "history",
        "-o unknown extension",
        f"{RH} $FIX/h.jsonl -o out.txt",
        rc=(2,),
        checks=[one_line_error, absent("out.txt")],
    )
    add(
        "hist-ulimit",
        "history",
        "EFBIG writing -o",
        f"ulimit -f 1; {RH} $FIX/h.jsonl -o out.html",
        rc=(2,),
        checks=[one_line_error, absent("out.html")],
    )
    for field_name, values in {
        "date": [None, 5, "not a date", "9999-99-99T99:99"],
        "backend": [None, 7, [], HOSTILE],
        "versions": [None, "x", [1], {"keras": 5}],
        "counts": [None, "x", {"pass": "many"}, {"pass": -5}],
        "pass_as_is": [None, "x", float("nan"), 1e308],
        "conformance": [None, float("inf"), -3],
        "ops": [None, "x", {"dot": 5}],
        "spec_sha256": [None, 5],
    }.items():
        for n, value in enumerate(values):
            checks: List[Check] = (
                [no_esc, stdout_is_json] if field_name != "backend" or n != 3 else [no_esc, stdout_is_json]
            )
            add(
                f"hist-field-{field_name}-{n}",
                "history",
                f"a history line whose {field_name} is {value!r:.30}",
                f"{RH} in/h.jsonl --format json",
                history_with(field_name, value),
                rc=(0, 2),
                checks=checks,
            )
    add(
        "check-history-dir",
        "history",
        "check --history a directory",
        "mkdir h && $K check --backend numpy --op abs --case 'example*' --history h",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "check-history-nodir",
        "history",
        "check --history in a missing folder",
        "$K check --backend numpy --op abs --case 'example*' --history no/h.jsonl",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "check-history-garbage",
        "history",
        "check --history onto a file of garbage",
        "printf 'garbage\\n' > h.jsonl && $K check --backend numpy --op abs --history h.jsonl",
        rc=(0, 1, 2),
    )

    # -- known record
    KR = "$K known record"
    add(
        "known-dir",
        "known",
        "--known a directory",
        f"{KR} {TF} --known in/k",
        directory("in/k"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-badyaml",
        "known",
        "--known not YAML",
        f"{KR} {TF} --known in/known.yaml",
        known_file("- op: [\n"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-types",
        "known",
        "entries of wrong types",
        f"{KR} {TF} --known in/known.yaml",
        known_file("- op: 5\n  backend: {}\n  reason: [1]\n  count: x\n"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-not-list",
        "known",
        "a mapping, not a list",
        f"{KR} {TF} --known in/known.yaml",
        known_file("a: 1\n"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-bomb",
        "known",
        "a YAML alias bomb",
        f"{KR} {TF} --known in/known.yaml",
        known_file(YAML_BOMB),
        rc=(2,),
        timeout=60,
        checks=[one_line_error],
    )
    add(
        "known-latin1",
        "known",
        "invalid UTF-8 bytes",
        f"{KR} {TF} --known in/known.yaml",
        raw_file(b"# caf\xe9\n- op: dot\n", "in/known.yaml"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-interrupted",
        "known",
        "an interrupted report",
        f"cp in/known.yaml k.yaml && {KR} {CPU} --known k.yaml",
        known_file(KNOWN_OK),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-filtered",
        "known",
        "a report filtered by case",
        f"cp in/known.yaml k.yaml && $K check --backend numpy --op abs --case 'example*' -o r.json; {KR} r.json --known k.yaml",
        known_file(KNOWN_OK),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-ok",
        "known",
        "a good record, then again (already current)",
        f"cp in/known.yaml k.yaml && {KR} {TF} --known k.yaml && {KR} {TF} --known k.yaml",
        known_file(KNOWN_OK),
        rc=(0,),
        checks=[yaml_ok("k.yaml")],
    )
    add(
        "known-ulimit",
        "known",
        "EFBIG writing the known file: left whole",
        f"cp in/known.yaml k.yaml && (ulimit -f 1; {KR} {TF} --known k.yaml)",
        known_file(KNOWN_OK + "# " + "pad " * 600 + "\n"),
        rc=(2,),
        checks=[one_line_error, yaml_ok("k.yaml")],
    )
    add(
        "known-concurrent",
        "known",
        "two records of one file at once",
        f"cp in/known.yaml k.yaml && ({KR} {TF} --known k.yaml & {KR} {TF} --known k.yaml & wait)",
        known_file(KNOWN_OK),
        rc=(0,),
        timeout=90,
        checks=[yaml_ok("k.yaml")],
    )
    add(
        "known-reason-ansi",
        "known",
        "an entry whose reason and op carry ANSI",
        f"cp in/known.yaml k.yaml && {KR} {TF} --known k.yaml",
        known_file('- op: "dot\\e[2J"\n  backend: numpy\n  reason: "\\e[31mred\\e[0m"\n'),
        checks=[no_esc],
    )
    add(
        "known-symlink-dir",
        "known",
        "--known a symlink to /dev/null",
        f"{KR} {TF} --known /dev/null",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "known-sigterm",
        "known",
        "SIGTERM mid-record: the file stays whole",
        f"cp in/known.yaml k.yaml && exec {KR} {TF} --known k.yaml",
        known_file(KNOWN_OK),
        rc=(0, 143),
        signal_after=(signal.SIGTERM, 3.0),
        checks=[yaml_ok("k.yaml")],
    )
    add(
        "known-report-garbage",
        "known",
        "a garbage report",
        f"cp in/known.yaml k.yaml && {KR} in/r.json --known k.yaml",
        both(known_file(KNOWN_OK), raw_file(b"[]")),
        rc=(2,),
        checks=[one_line_error],
    )

    # -- spec coverage
    SC = "$K spec coverage"
    add("cov-spec-missing", "coverage", "--spec missing", f"{SC} --spec in/none.yaml", rc=(2,), checks=[one_line_error])
    add(
        "cov-spec-empty",
        "coverage",
        "--spec empty",
        f"{SC} --spec in/s.yaml",
        raw_file(b"", "in/s.yaml"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-spec-bomb",
        "coverage",
        "--spec a YAML alias bomb",
        f"{SC} --spec in/s.yaml",
        raw_file(YAML_BOMB.encode(), "in/s.yaml"),
        rc=(2,),
        timeout=60,
        checks=[one_line_error],
    )
    add(
        "cov-spec-dir",
        "coverage",
        "--spec a directory",
        f"{SC} --spec in/s",
        directory("in/s"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-op-unknown",
        "coverage",
        "--op unknown with ANSI",
        f"{SC} --op $'dot\\e[2J'",
        rc=(2,),
        checks=[one_line_error, no_esc],
    )
    add(
        "cov-backend-ansi",
        "coverage",
        "--backend with ANSI",
        f"{SC} --backend $'nope\\e[2J' --op dot",
        rc=(2,),
        checks=[one_line_error, no_esc],
    )
    add(
        "cov-report-garbage",
        "coverage",
        "--report garbage",
        f"{SC} --backend numpy --op dot --report in/r.json",
        raw_file(b"{{"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-report-fifo",
        "coverage",
        "--report a FIFO",
        f"{SC} --backend numpy --op dot --report in/r.json",
        fifo(),
        rc=(2,),
        timeout=30,
    )
    add(
        "cov-report-trunc",
        "coverage",
        "--report a truncated gzip",
        f"{SC} --backend numpy --op dot --report in/r.json.gz",
        truncated_gzip,
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-report-types",
        "coverage",
        "--report whose results have wrong types",
        f"{SC} --backend tests.fixtures.tf32_backend --op dot --report in/r.json",
        report_with(lambda r: [x.update(status=None, case=5) for x in r["results"]]),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-report-alone",
        "coverage",
        "--report without --backend",
        f"{SC} --report {TF}",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "cov-known-badyaml",
        "coverage",
        "--known not YAML",
        f"{SC} --backend numpy --op dot --known in/k.yaml",
        raw_file(b"- [", "in/k.yaml"),
        rc=(2,),
        checks=[one_line_error],
    )
    add("cov-json", "coverage", "--json is JSON", f"{SC} --op dot --json", rc=(0, 1), checks=[stdout_is_json])

    # -- report migration
    RM = "$K report migration"
    add("mig-map-missing", "migration", "--map missing", f"{RM} --map in/none.yaml", rc=(2,), checks=[one_line_error])
    add(
        "mig-map-garbage",
        "migration",
        "--map not YAML",
        f"{RM} --map in/m.yaml",
        raw_file(b"a: [", "in/m.yaml"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "mig-map-types",
        "migration",
        "--map of wrong types",
        f"{RM} --map in/m.yaml",
        raw_file(b"- 1\n- 2\n", "in/m.yaml"),
        rc=(2,),
        checks=[one_line_error],
    )

    def hostile_map(cwd: Path, fix: Path) -> None:
        import yaml

        data = yaml.safe_load((REPO / "specs/keras3_map.yaml").read_text())
        for key, value in list(data.items())[:3] if isinstance(data, dict) else []:
            if isinstance(value, dict):
                for k in value:
                    if isinstance(value[k], str):
                        value[k] = HOSTILE
            else:
                data[key] = HOSTILE
        write(cwd / "in/m.yaml", yaml.safe_dump(data))

    add(
        "mig-map-hostile",
        "migration",
        "markup/ANSI in the map's expressions, md + html",
        f"{RM} --map in/m.yaml -o out.html && {RM} --map in/m.yaml",
        hostile_map,
        rc=(0, 2),
        checks=[no_esc, no_raw_markup("out.html"), stdout_has_no_raw_markup],
    )
    add(
        "mig-report-garbage",
        "migration",
        "a garbage report",
        f"{RM} in/r.json",
        raw_file(b"\x00"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "mig-report-hostile",
        "migration",
        "a keras3 report with hostile messages",
        f"{RM} in/r.json -o out.html && {RM} in/r.json",
        report_with(
            lambda r: (
                [x.update(backend="keras3-jax", status="fail", message=HOSTILE) for x in r["results"]]
                + [b.update(name="keras3-jax") for b in r["backends"]]
            )
        ),
        checks=[no_esc, no_raw_markup("out.html"), stdout_has_no_raw_markup],
    )
    add(
        "mig-o-ext",
        "migration",
        "-o .json (only .md/.html)",
        f"{RM} -o out.json",
        rc=(2,),
        checks=[one_line_error, absent("out.json")],
    )
    add(
        "mig-spec-missing", "migration", "--spec missing", f"{RM} --spec in/none.yaml", rc=(2,), checks=[one_line_error]
    )

    # -- release names / env
    EI = "$K env install"
    for n, name in enumerate(
        [
            "tensorflow1[keras=2.2.4; touch $CANARY]",
            "tensorflow1[keras=$(touch $CANARY)]",
            "tensorflow1[keras=`touch $CANARY`]",
            "tensorflow1[keras==2.2.4 --index-url http://127.0.0.1:9/]",
            "tensorflow1[keras=2.2.4 -e /tmp]",
            "tensorflow1[keras=2.2.4",
            "tensorflow1[]",
            "tensorflow1[keras=2.2.4][keras=2.2.5]",
            "../../etc[keras=1]",
            "tensorflow1[../x=1]",
            "tensorflow1[keras=../../x]",
            "tensorflow1[keras=/etc/passwd]",
            "tensorflow1[keras=" + "9" * 5000 + "]",
            "tensorflow1[keras=2.2.4\n\x1b[2Jx]",
            "tensorflow1[keras=http://x/y.whl]",
            "tensorflow1[keras=2.2.4,keras=2.2.5]",
            "",
        ]
    ):
        add(
            f"env-install-name-{n}",
            "release",
            f"env install {name[:40]!r}",
            f"{EI} {shlex.quote(name)} --python /bin/false",
            rc=(2,),
            timeout=60,
            checks=[one_line_error, no_esc],
        )
    add(
        "env-install-fake-py-fails",
        "release",
        "--python a fake interpreter that exits 1",
        f"{EI} theano --python in/fakepy",
        fake_python("exit 1"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "env-install-fake-py-lies",
        "release",
        "--python a fake interpreter printing garbage",
        f"{EI} theano --python in/fakepy",
        fake_python("printf '\\033[2J\\n<script>alert(1)</script>\\n'"),
        rc=(2,),
        checks=[one_line_error, no_esc],
    )
    add(
        "env-install-fake-py-hangs",
        "release",
        "--python a fake interpreter that never answers",
        f"{EI} theano --python in/fakepy",
        fake_python("sleep 600"),
        rc=(2,),
        timeout=120,
        checks=[one_line_error],
    )
    add(
        "env-install-py-devnull",
        "release",
        "--python /dev/null",
        f"{EI} theano --python /dev/null",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "env-install-py-dir",
        "release",
        "--python a directory",
        f"{EI} theano --python in",
        directory("in"),
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "env-install-unknown",
        "release",
        "an unknown backend with ANSI",
        f"{EI} $'nope\\e[2J'",
        rc=(2,),
        checks=[one_line_error, no_esc],
    )
    add(
        "env-install-release-no-base",
        "release",
        "a release whose base env is not installed",
        f"{EI} 'tensorflow1[keras=2.2.4]' --python /bin/false",
        rc=(2,),
        checks=[one_line_error],
    )

    def sentinel(cwd: Path, fix: Path) -> None:
        (cwd / "home/envs").mkdir(parents=True)
        (cwd / "keep").mkdir()
        (cwd / "keep/file").write_text("x")
        (cwd / "home/envs/linked").symlink_to(cwd / "keep")

    keep_there = [absent("keep/file-gone", "lost/wrong")]

    def keep_check(run: Run) -> List[Tuple[str, str]]:
        return [] if (run.cwd / "keep/file").exists() else [("security", "env remove deleted outside kbtool's home")]

    add(
        "env-remove-dotdot",
        "release",
        "env remove ../..",
        "$K env remove ../.. ../keep",
        sentinel,
        rc=(2,),
        checks=[keep_check, one_line_error, *keep_there],
    )
    add(
        "env-remove-abs",
        "release",
        "env remove an absolute path",
        '$K env remove "$PWD/keep"',
        sentinel,
        rc=(2,),
        checks=[keep_check, one_line_error],
    )
    add(
        "env-remove-release-dotdot",
        "release",
        "env remove a release naming ../",
        "$K env remove 'linked[keras=../..]'",
        sentinel,
        rc=(2,),
        checks=[keep_check, one_line_error],
    )
    add(
        "env-remove-missing",
        "release",
        "env remove a release not installed",
        "$K env remove 'tensorflow1[keras=2.2.4]'",
        rc=(0, 2),
        checks=[one_line_error],
    )

    def junk_envs(cwd: Path, fix: Path) -> None:
        envs = cwd / "home/envs"
        envs.mkdir(parents=True)
        (envs / "junkdir").mkdir()
        (envs / "afile").write_text("x")
        (envs / "dangling").symlink_to(cwd / "nowhere")
        (envs / "loop").symlink_to(envs / "loop")
        (envs / "x\x1b[2Jy").mkdir()
        (envs / "tensorflow1[keras=2.2.4]").mkdir()
        (envs / "tensorflow1[keras=2.2.4]" / "kbtool-lock.txt").write_text("\x00garbage")
        (envs / "theano").mkdir()
        (envs / "theano" / "pyvenv.cfg").write_text("garbage = [\n")

    add("env-list-junk", "release", "env list over junk envs", "$K env list", junk_envs, rc=(0, 2), checks=[no_esc])
    add(
        "env-list-junk-json",
        "release",
        "env list --json over junk envs",
        "$K env list --json",
        junk_envs,
        rc=(0, 2),
        checks=[no_esc, stdout_is_json],
    )
    add(
        "env-use-missing",
        "release",
        "env use --python missing",
        "$K env use keras3-jax --python in/none",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "env-use-fake-garbage",
        "release",
        "env use a fake interpreter printing ANSI garbage",
        "$K env use keras3-jax --python in/fakepy",
        fake_python('printf \'\\033[2J{"status": "available", "versions": 5}\\n\''),
        rc=(2,),
        checks=[one_line_error, no_esc, absent("home/envs/keras3-jax", "lost/wrong")],
    )
    add(
        "env-use-fake-hangs",
        "release",
        "env use a fake interpreter that never answers",
        "$K env use keras3-jax --python in/fakepy",
        fake_python("sleep 600"),
        rc=(2,),
        timeout=150,
        checks=[one_line_error],
    )
    add(
        "env-use-release",
        "release",
        "env use a release name",
        "$K env use 'tensorflow1[keras=2.2.4]' --python /bin/false",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "env-use-dotdot",
        "release",
        "env use ../x",
        "$K env use ../x --python /bin/false",
        rc=(2,),
        checks=[one_line_error],
    )

    # -- --versions ranges (check, bench, bisect): all fail before pip or the index
    for n, rng in enumerate(
        [
            "keras=",
            "keras=..",
            "=1..2",
            "keras=2..1",
            "keras=1..2..3",
            "keras=a b..c",
            "keras=$(touch $CANARY)..1",
            "keras",
            "keras=1.0..1.0",
            "numpy=1..2",
        ]
    ):
        add(
            f"versions-check-{n}",
            "versions",
            f"check --versions {rng!r} on numpy",
            f"$K check --backend numpy --op dot --versions {shlex.quote(rng)}",
            rc=(2,),
            timeout=60,
            checks=[one_line_error],
        )
    for n, rng in enumerate(["keras=2..1", "keras=x..y", "keras=", "=1..2"]):
        add(
            f"versions-bench-{n}",
            "versions",
            f"bench --versions {rng!r} on an uninstalled backend",
            f"$K bench --op dot --backend tensorflow1 --versions {shlex.quote(rng)}",
            rc=(2,),
            timeout=60,
            checks=[one_line_error],
        )
    add(
        "versions-bench-two-backends",
        "versions",
        "bench --versions with two backends",
        "$K bench --op dot --backend numpy --backend tensorflow1 --versions keras=1..2",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "bisect-bad-op",
        "bisect",
        "bisect an unknown op with markup",
        "$K bisect --op '<script>alert(1)</script>' --backend tensorflow1 --versions keras=2.2.4..2.3.1",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "bisect-release-backend",
        "bisect",
        "bisect a release name",
        "$K bisect --op dot --backend 'tensorflow1[keras=2.2.4]' --versions keras=2.2.4..2.3.1",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "bisect-custom",
        "bisect",
        "bisect a custom module",
        "$K bisect --op dot --backend tests.fixtures.tf32_backend --versions keras=1..2",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "bisect-o-nodir",
        "bisect",
        "bisect a reversed range",
        "$K bisect --op dot --backend tensorflow1 --versions keras=2.3.1..2.2.4 -o out.json",
        rc=(2,),
        checks=[one_line_error],
    )

    # -- check --repeat, --device, --precision
    CK = "$K check --backend numpy --op abs --case 'example*'"
    for n, value in enumerate(["0", "-1", "x", "1.5", "99999999999999999999"]):
        add(
            f"repeat-{n}",
            "check",
            f"check --repeat {value}",
            f"{CK} --repeat {value}",
            rc=(2,),
            checks=[one_line_error],
        )
    for n, value in enumerate(["tpu", "", "gpu;touch $CANARY", "\x1b[2Jgpu", "GPU"]):
        add(
            f"device-{n}",
            "check",
            f"check --device {value!r}",
            f"{CK} --device {shlex.quote(value)}",
            rc=(2,),
            checks=[one_line_error, no_esc],
        )
    for n, value in enumerate(["lowest", "", "\x1b[2J", "highest;id"]):
        add(
            f"precision-{n}",
            "check",
            f"check --precision {value!r}",
            f"{CK} --precision {shlex.quote(value)}",
            rc=(2,),
            checks=[one_line_error, no_esc],
        )
    add(
        "device-gpu-numpy",
        "check",
        "--device gpu on the CPU-only reference",
        "$K check --backend numpy --op abs --device gpu",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "repeat-2-custom",
        "check",
        "--repeat 2 on the tf32 fixture: same verdicts",
        "$K check --backend tests.fixtures.tf32_backend --op dot --repeat 2 --json",
        rc=(1,),
        timeout=120,
        checks=[stdout_is_json],
    )
    add(
        "check-sigint",
        "check",
        "SIGINT at start: 130, partial report marked",
        "exec $K check --backend tests.fixtures.tf32_backend --op dot -o out.json",
        rc=(130,),
        signal_after=(signal.SIGINT, 2.5),
        timeout=60,
    )
    add(
        "device-bench",
        "check",
        "bench --device tpu",
        "$K bench --op dot --backend numpy --device tpu",
        rc=(2,),
        checks=[one_line_error],
    )
    add(
        "precision-bench",
        "check",
        "bench --precision bogus",
        "$K bench --op dot --backend numpy --precision bogus",
        rc=(2,),
        checks=[one_line_error],
    )

    # -- backends / probe cache
    BK = "$K backends --json"
    for n, data in enumerate(
        [
            "",
            "{",
            "[]",
            "null",
            {"backends": []},
            {"backends": {"numpy": "x"}},
            {"backends": {"numpy": {"info": "x", "key": 5, "module_stat": "y", "probed_at": "z"}}},
            {
                "backends": {
                    "tests.fixtures.tf32_backend": {
                        "info": {"status": "available", "name": HOSTILE, "versions": {HOSTILE: HOSTILE}},
                        "key": None,
                        "module_stat": [1, 2],
                        "probed_at": float("nan"),
                    }
                }
            },
            b"\xff\xfe" * 1000,
        ]
    ):
        add(
            f"probes-{n}",
            "probes",
            f"a probe cache of {str(data)[:30]!r}",
            f"{BK} --backend tests.fixtures.tf32_backend",
            probes(data),
            rc=(0,),
            timeout=90,
            checks=[stdout_is_json, no_esc],
        )
    add(
        "probes-dir",
        "probes",
        "probes.json a directory",
        f"{BK}",
        lambda cwd, fix: (cwd / "home/probes.json").mkdir(parents=True),
        rc=(0,),
        timeout=90,
        checks=[stdout_is_json],
    )
    add(
        "probes-fifo",
        "probes",
        "probes.json a FIFO",
        f"{BK}",
        lambda cwd, fix: ((cwd / "home").mkdir(exist_ok=True), os.mkfifo(cwd / "home/probes.json")),
        rc=(0,),
        timeout=90,
        checks=[stdout_is_json],
    )
    add(
        "probes-devzero",
        "probes",
        "probes.json a symlink to a device (a FIFO of the scratch stands in: a regression must not replace /dev/zero)",
        f"{BK}",
        lambda cwd, fix: (
            (cwd / "home").mkdir(exist_ok=True),
            os.mkfifo(cwd / "dev"),
            (cwd / "home/probes.json").symlink_to(cwd / "dev"),
        ),
        rc=(0,),
        timeout=90,
        checks=[stdout_is_json, still_fifo("dev")],
    )
    add(
        "probes-concurrent",
        "probes",
        "two `backends --refresh` writing the cache at once",
        f"({BK} --refresh --backend tests.fixtures.tf32_backend >/dev/null & {BK} --refresh --backend tests.fixtures.tf32_backend >/dev/null & wait) && {BK} --backend tests.fixtures.tf32_backend",
        rc=(0,),
        timeout=150,
        checks=[stdout_is_json, file_is_json("home/probes.json")],
    )
    add(
        "probes-ulimit",
        "probes",
        "EFBIG writing the cache: the answer still printed",
        f"(ulimit -f 1; {BK} --backend tests.fixtures.tf32_backend)",
        rc=(0,),
        timeout=90,
        checks=[stdout_is_json],
    )
    add(
        "probes-no-file-at-all",
        "probes",
        "no file can be written (ulimit -f 0, as a full disk): a one-line failure, not a traceback",
        f"(ulimit -f 0; {BK} --backend tests.fixtures.tf32_backend)",
        rc=(0, 1, 2),
        timeout=90,
    )
    add(
        "backends-hostile-module",
        "probes",
        "--backend names with shell and ANSI",
        "$K backends --backend $'x;touch $CANARY\\e[2J' --backend '../../etc/passwd' --backend '$(touch $CANARY)'",
        rc=(0, 1, 2),
        timeout=90,
        checks=[no_esc],
    )
    add(
        "backends-release-bad",
        "probes",
        "--backend a malformed release",
        "$K backends --backend 'tensorflow1[keras=$(touch $CANARY)]'",
        rc=(0, 1, 2),
        timeout=90,
        checks=[no_esc],
    )
    return a


# ---- the runner ---------------------------------------------------------------------------------


def session_processes(sid: int) -> List[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry))
    return found


def digest_tree(root: Path) -> Dict[str, str]:
    out: Dict[str, str] = {}
    if not root.exists():
        return out
    for path in root.rglob("*"):
        if path.name.endswith(".lock"):  # files.locked's documented sidecar, kept beside the file it locks
            continue
        rel = str(path.relative_to(root))
        try:
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = oct(mode)
        except OSError:
            out[rel] = "unreadable"
    return out


def run_one(attack: Attack, fix: Path) -> Tuple[Attack, Run, List[Tuple[str, str]]]:
    scratch = Path(tempfile.mkdtemp(prefix=f"kbadv-{attack.id[:20]}-"))
    cwd, home = scratch, scratch / "home"
    canary = scratch.parent / f"{scratch.name}.canary"
    (cwd / "in").mkdir()
    if attack.setup:
        attack.setup(cwd, fix)
    home.mkdir(exist_ok=True)
    before_inputs = digest_tree(cwd / "in")
    before = set(os.listdir(cwd))
    env = dict(
        os.environ,
        KBTOOL_HOME=str(home),
        PYTHONPATH=str(REPO),
        PYTHONDONTWRITEBYTECODE="1",
        K=f"{sys.executable} -m kbtool",
        FIX=str(fix),
        CANARY=str(canary),
        NO_COLOR="1",
        COLUMNS="120",
    )
    env.pop("KBTOOL_PYTHON", None)
    start = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-c", attack.cmd],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    if attack.signal_after:
        sig, delay = attack.signal_after
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(sig)
    timed_out = False
    try:
        out_b, err_b = proc.communicate(timeout=attack.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out_b, err_b = proc.communicate()
    seconds = time.monotonic() - start
    time.sleep(0.2)
    left = session_processes(proc.pid)
    for pid in left:  # our own session's processes only
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    rc = proc.returncode if proc.returncode is None or proc.returncode >= 0 else 128 - proc.returncode
    run = Run(rc, out_b.decode(errors="replace"), err_b.decode(errors="replace"), seconds, cwd, home, timed_out)
    found: List[Tuple[str, str]] = []
    if timed_out:
        found.append(("hangs", f"still running after {attack.timeout:.0f} s"))
    crash = re.search(r"^Traceback \(most recent call last\):$", run.text, re.M)  # a line of its own: not data
    if crash:
        found.append(("tracebacks", run.text[crash.start() :].strip().splitlines()[-1][:160]))
    if not timed_out and run.rc not in attack.rc:
        found.append(
            ("misleading messages", f"exit {run.rc}, documented/expected {attack.rc}: {run.err.strip()[-160:]!r}")
        )
    if not timed_out and run.rc not in (0, None, 130, 143) and not run.text.strip():
        found.append(("misleading messages", f"exit {run.rc} with nothing said"))
    if left and not timed_out:
        found.append(("leftover processes", f"{len(left)} process(es) of the run left"))
    if canary.exists():
        found.append(("security", "a shell ran an injected command ($CANARY made)"))
        canary.unlink()
    if digest_tree(cwd / "in") != before_inputs:
        found.append(("lost/wrong", "an input under in/ was changed"))
    new = set(os.listdir(cwd)) - before
    temp = [p for p in (cwd.rglob("*")) if any(m in p.name for m in TEMP_MARKS) and ".venv" not in str(p)]
    temp = [p for p in temp if p.relative_to(cwd).parts[0] in new or p.relative_to(cwd).parts[0] == "home"]
    if temp:
        found.append(("leftovers", f"temporary files left: {[str(p.relative_to(cwd)) for p in temp][:3]}"))
    for check in attack.checks:
        found.extend(check(run))
    # Fold a crash's traceback into one column: the rest of its symptoms follow from it.
    shutil.rmtree(scratch, ignore_errors=True)
    return attack, run, found


def guarded(attack: Attack, fix: Path) -> Tuple[Attack, Run, List[Tuple[str, str]]]:
    """run_one, with a fault of the attack itself (its setup) said as such instead of ending the pass."""
    try:
        return run_one(attack, fix)
    except Exception as error:
        run = Run(None, "", "", 0.0, Path("."), Path("."), False)
        return attack, run, [("attack error", f"the attack itself failed: {error!r:.200}")]


def make_fixtures(fix: Path) -> None:
    """A small complete report (the tf32 fixture on dot) and its history line, made once."""
    env = dict(os.environ, KBTOOL_HOME=str(fix / "home"), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kbtool",
            "check",
            "--backend",
            "tests.fixtures.tf32_backend",
            "--op",
            "dot",
            "-o",
            str(fix / "tf32.json"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=False,
        timeout=300,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kbtool",
            "report",
            "history-add",
            str(fix / "tf32.json"),
            "--history",
            str(fix / "h.jsonl"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    for path in fix.rglob("*"):
        if path.is_file():
            path.chmod(0o444)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only attacks whose id or family contains this")
    parser.add_argument("-j", type=int, default=2, help="attacks at once (default 2)")
    parser.add_argument("-v", action="store_true", help="each attack's outcome")
    parser.add_argument("--list", action="store_true", help="list the attacks and exit")
    args = parser.parse_args(argv)
    chosen = [x for x in attacks() if args.k in x.id or args.k in x.family]
    ids = [x.id for x in attacks()]
    assert len(ids) == len(set(ids)), "attack ids must be unique"
    if args.list:
        for x in chosen:
            print(f"{x.id:32} {x.family:10} {x.tries}")
        print(f"{len(chosen)} attacks")
        return 0
    start = time.monotonic()
    fix = Path(tempfile.mkdtemp(prefix="kbadv-fix-"))
    try:
        make_fixtures(fix)
        repo_before = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
        with ThreadPoolExecutor(args.j) as pool:
            outcomes = list(pool.map(lambda x: guarded(x, fix), chosen))
        repo_after = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    finally:
        for path in fix.rglob("*"):
            if path.is_file():
                path.chmod(0o644)
        shutil.rmtree(fix, ignore_errors=True)
    tally = dict.fromkeys(COLUMNS, 0)
    lines = []
    for attack, run, found in outcomes:
        if args.v:
            print(f"{attack.id:32} rc={run.rc} {run.seconds:5.1f}s {'DEFECT' if found else 'ok'}")
        for column in sorted({c for c, _ in found}):
            tally[column] = tally.get(column, 0) + 1
        for column, message in found:
            lines.append(f"  [{column}] {attack.id} ({attack.family}: {attack.tries}): {message}")
    if repo_before != repo_after:
        tally["leftovers"] += 1
        lines.append(f"  [leftovers] the checkout changed: {repo_after!r:.200}")
    header = ("attacks",) + COLUMNS
    values = (len(outcomes),) + tuple(tally[c] for c in COLUMNS)
    print(" | ".join(header))
    print(" | ".join(str(v).rjust(len(h)) for h, v in zip(header, values)))
    for line in lines:
        print(line)
    if tally.get("attack error"):
        print(f"{tally['attack error']} attacks could not run (see above)")
    print(f"{len(outcomes)} attacks in {time.monotonic() - start:.0f} s")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
