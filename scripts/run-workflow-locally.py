#!/usr/bin/env python3
"""Run a GitHub Actions workflow's jobs here, step by step, against a copy of a repository (no act, no docker).

    python scripts/run-workflow-locally.py .github/workflows/kbtool-gate.yml --repo examples/user-repo \\
        --input module=mybackend.backend@tensorflow --input ops="softsign relu" --work /tmp/gate

Jobs run in `needs` order, a matrix's legs one after another; each job gets a fresh workspace (a copy of --repo),
RUNNER_TEMP, and GITHUB_OUTPUT / GITHUB_ENV / GITHUB_PATH / GITHUB_STEP_SUMMARY files, read back after each step
as the runner reads them. `${{ ... }}` expressions are evaluated (contexts inputs, matrix, steps, needs, env, jobs,
runner, github; operators ! == != < > && || and the functions always, success, failure, cancelled, fromJSON,
toJSON, format, contains, startsWith, endsWith, join). Every `run:` step runs for real with its shell, within the
job's timeout-minutes. A `uses:` step has a stated local equivalent:

    actions/checkout           copy --repo into the job's workspace
    actions/setup-python       a venv of this Python (not the version asked for) that sees this Python's packages
                               (pip too) except kbtool, so `pip install` of kbtool's wheel is what the job imports;
                               at one path (WORK/toolcache/python), made afresh for each job, as a runner's is
    actions/cache              a hit when its path exists here (kbtool's envs: the job's KBTOOL_HOME/envs links to
                               ~/.cache/kbtool/envs), else a miss; nothing is saved
    astral-sh/setup-uv         uv from PATH (a failed step without it)
    actions/upload-artifact    copy the files to WORK/artifacts/NAME/
    actions/download-artifact  copy them back (pattern or name; merge-multiple or a folder each)

pip gets no network here (PIP_NO_INDEX=1; PIP_NO_BUILD_ISOLATION=0 builds a wheel with this Python's setuptools):
what a job installs must already be installed in this Python. Each job's KBTOOL_HOME is its own folder. The run's
record is WORK/result.json (jobs, legs, steps' outcomes and outputs, the workflow's outputs), each step's log under
WORK/logs/, the step summaries in WORK/summary.md. Exit code: 0 every job succeeded, 1 one failed, 2 bad input.
"""

import argparse
import fnmatch
import glob
import itertools
import json
import os
import platform
import re
import shutil
import signal
import site
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

Context = Dict[str, Any]


class WorkflowError(Exception):
    """Bad input: one line, exit 2."""


# ---- expressions -------------------------------------------------------------------------------------------------

TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|<=|>=|&&|\|\||[!<>().,\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


def tokenize(text: str) -> List[Tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise WorkflowError(f"cannot read the expression {text!r} at {text[pos:]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def truthy(value: Any) -> bool:
    return value not in (False, 0, "", None) and not (isinstance(value, float) and value != value)


def as_number(value: Any) -> float:
    if value is None or value == "":
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return float("nan")


def loose_equal(a: Any, b: Any) -> bool:
    """GitHub's ==: strings case-insensitively, mixed types as numbers."""
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if type(a) is type(b) and not isinstance(a, (int, float)):
        return bool(a == b)
    return as_number(a) == as_number(b)


def to_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


class Parser:
    """A recursive-descent reader of one expression, evaluated as it is read (both sides of && and || are read;
    only the value GitHub would return is kept)."""

    def __init__(self, text: str, context: Context, functions: Dict[str, Callable[..., Any]]) -> None:
        self.tokens, self.pos, self.context, self.functions, self.text = tokenize(text), 0, context, functions, text

    def peek(self) -> Optional[str]:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: Optional[str] = None) -> Tuple[str, str]:
        if self.pos >= len(self.tokens) or (expected is not None and self.tokens[self.pos][1] != expected):
            raise WorkflowError(f"expression {self.text!r}: expected {expected or 'more'}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def parse(self) -> Any:
        value = self.either()
        if self.pos != len(self.tokens):
            raise WorkflowError(f"expression {self.text!r}: unexpected {self.peek()!r}")
        return value

    def either(self) -> Any:
        value = self.both()
        while self.peek() == "||":
            self.take()
            other = self.both()
            value = value if truthy(value) else other
        return value

    def both(self) -> Any:
        value = self.compare()
        while self.peek() == "&&":
            self.take()
            other = self.compare()
            value = other if truthy(value) else value
        return value

    def compare(self) -> Any:
        value = self.unary()
        op = self.peek()
        if op in ("==", "!=", "<", ">", "<=", ">="):
            self.take()
            other = self.unary()
            if op in ("==", "!="):
                return loose_equal(value, other) == (op == "==")
            a, b = as_number(value), as_number(other)
            return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, text = self.take()
        if text == "(":
            value = self.either()
            self.take(")")
            return value
        if kind == "num":
            return float(text)
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind != "name":
            raise WorkflowError(f"expression {self.text!r}: unexpected {text!r}")
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == "(":
            return self.call(text)
        return self.path(self.context.get(text))

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.either())
            if self.peek() == ",":
                self.take()
        self.take(")")
        function = self.functions.get(name.lower())
        if function is None:
            raise WorkflowError(f"expression {self.text!r}: the function {name}() is not supported here")
        try:
            return function(*args)
        except (TypeError, ValueError, IndexError, KeyError) as exc:  # fromJSON of nothing, format('{3}'): one line
            raise WorkflowError(f"expression {self.text!r}: {name}(): {exc}".splitlines()[0])

    def path(self, value: Any) -> Any:
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key: Any = self.take()[1]
            else:
                key = self.either()
                self.take("]")
            value = value.get(key) if isinstance(value, dict) else None
        return value


def format_function(template: str, *args: Any) -> str:
    return (
        re.sub(
            r"\{(\d+)\}", lambda m: to_string(args[int(m.group(1))]), template.replace("{{", "\0").replace("}}", "\1")
        )
        .replace("\0", "{")
        .replace("\1", "}")
    )


def evaluate(text: str, context: Context, status: Optional[Dict[str, bool]] = None) -> Any:
    state = status or {"failed": False}
    functions: Dict[str, Callable[..., Any]] = {
        "always": lambda: True,
        "success": lambda: not state["failed"],
        "failure": lambda: state["failed"],
        "cancelled": lambda: False,
        "fromjson": lambda s: json.loads(s),
        "tojson": lambda v: json.dumps(v, indent=2),
        "format": format_function,
        "contains": lambda a, b: (b in a) if isinstance(a, list) else to_string(b).lower() in to_string(a).lower(),
        "startswith": lambda a, b: to_string(a).lower().startswith(to_string(b).lower()),
        "endswith": lambda a, b: to_string(a).lower().endswith(to_string(b).lower()),
        "join": lambda a, sep=",": to_string(sep).join(to_string(x) for x in a) if isinstance(a, list) else a,
    }
    return Parser(text, context, functions).parse()


WHOLE = re.compile(r"^\s*\$\{\{(.*)\}\}\s*$", re.S)
PART = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def value_of(raw: Any, context: Context) -> Any:
    """A YAML value with its expressions: a lone `${{ e }}` keeps e's type (a matrix's list), else a string."""
    if not isinstance(raw, str):
        return raw
    whole = WHOLE.match(raw)
    if whole and "${{" not in whole.group(1):
        return evaluate(whole.group(1), context)
    return PART.sub(lambda m: to_string(evaluate(m.group(1), context)), raw)


def condition(raw: Any, context: Context, failed: bool) -> bool:
    """An `if:` (with or without ${{ }}); without a status function it means success() && (it)."""
    if raw is None:
        return not failed
    text = raw if isinstance(raw, str) else to_string(raw)
    whole = WHOLE.match(text)
    text = whole.group(1) if whole else text
    if not any(re.search(rf"\b{name}\s*\(", text) for name in STATUS_FUNCTIONS):
        text = f"success() && ({text})"
    return truthy(evaluate(text, context, {"failed": failed}))


# ---- files the runner gives a step -------------------------------------------------------------------------------


def read_pairs(path: str) -> Dict[str, str]:
    """GITHUB_OUTPUT / GITHUB_ENV: `key=value` lines and `key<<DELIMITER` blocks."""
    pairs: Dict[str, str] = {}
    if not os.path.exists(path):
        return pairs
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            pairs[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if "=" in line:
            key, value = line.split("=", 1)
            pairs[key] = value
        i += 1
    return pairs


SHELLS = {
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
    "python": ["python", "{0}"],
}


def shell_command(shell: str, script: str) -> List[str]:
    template = SHELLS.get(shell) or shell.split()
    if "{0}" not in template:
        raise WorkflowError(f"shell {shell!r}: a custom shell names the script as {{0}}")
    return [script if part == "{0}" else part for part in template]


# ---- a job -------------------------------------------------------------------------------------------------------


class Job:
    """One leg of one job: its workspace, files, environment, and the steps' record."""

    def __init__(
        self, run: "Run", name: str, spec: Dict[str, Any], matrix: Dict[str, Any], leg: str, needs: Context
    ) -> None:
        self.run, self.name, self.spec, self.matrix, self.needs = run, name, spec, matrix, needs
        self.root = os.path.join(run.work, "jobs", leg)
        self.workspace, self.temp = os.path.join(self.root, "workspace"), os.path.join(self.root, "temp")
        self.home = os.path.join(self.root, "kbtool-home")
        for folder in (self.workspace, self.temp, self.home):
            os.makedirs(folder, exist_ok=True)
        real_envs = os.path.join(os.path.expanduser("~"), ".cache", "kbtool", "envs")
        if os.path.isdir(real_envs):
            os.symlink(real_envs, os.path.join(self.home, "envs"))  # what actions/cache restores, already here
        self.logs = os.path.join(run.work, "logs", leg)
        os.makedirs(self.logs, exist_ok=True)
        self.path: List[str] = []
        self.env: Dict[str, str] = {}
        self.steps: Dict[str, Any] = {}
        self.record: List[Dict[str, Any]] = []
        self.failed = False
        # the job's env: (its expressions see the matrix and needs), then what steps add through GITHUB_ENV
        self.env = {k: to_string(value_of(v, self.context())) for k, v in (spec.get("env") or {}).items()}
        self.deadline = time.monotonic() + 60 * float(value_of(spec.get("timeout-minutes", 360), self.context()))

    def context(self) -> Context:
        return {
            **self.run.base_context(),
            "needs": self.needs,
            "matrix": self.matrix,
            "steps": self.steps,
            "env": {**self.run.workflow_env, **self.env},
            "runner": {"os": "Linux", "temp": self.temp, "arch": platform.machine()},
            "job": {"status": "failure" if self.failed else "success"},
        }

    def process_env(self, step_env: Dict[str, str], files: Dict[str, str]) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env.update(CI="true", GITHUB_ACTIONS="true", GITHUB_WORKSPACE=self.workspace, RUNNER_TEMP=self.temp)
        env.update(RUNNER_OS="Linux", GITHUB_WORKFLOW=self.run.name, GITHUB_REF="refs/heads/local")
        # no network here: pip finds what this Python has, and builds a wheel with its setuptools (0: no isolation)
        env.update(GITHUB_JOB=self.name, KBTOOL_HOME=self.home, PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0")
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.update({k: to_string(v) for k, v in self.run.workflow_env.items()})
        env.update(self.env)
        env.update(step_env)
        env.update(files)
        env["PATH"] = os.pathsep.join(self.path + [env.get("PATH", "")])
        return env

    def execute(self) -> None:
        for index, step in enumerate(self.spec.get("steps", [])):
            self.step(index, step)

    def step(self, index: int, step: Dict[str, Any]) -> None:
        title = step.get("name") or step.get("uses") or str(step.get("run", "")).splitlines()[0]
        entry: Dict[str, Any] = {"name": title, "id": step.get("id")}
        self.record.append(entry)
        context = self.context()
        if time.monotonic() > self.deadline:
            entry.update(outcome="skipped", why="the job's timeout-minutes passed")
            return
        if not condition(step.get("if"), context, self.failed):
            entry["outcome"] = "skipped"
            self.remember(step, "skipped", {})
            return
        log, started = os.path.join(self.logs, f"{index:02d}.log"), time.monotonic()
        print(f"== {self.name} {json.dumps(self.matrix) if self.matrix else ''}: {title}", flush=True)
        try:
            if "uses" in step:
                code, outputs = self.uses(step, context, log)
            else:
                code, outputs = self.shell(step, context, log)
        except WorkflowError as exc:
            code, outputs = 1, {}
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{exc}\n")
            print(f"   {exc}", flush=True)
        outcome = "success" if code == 0 else "failure"
        entry.update(outcome=outcome, exit_code=code, outputs=outputs, log=log)
        entry["seconds"] = round(time.monotonic() - started, 1)
        self.remember(step, outcome, outputs)
        if code != 0 and not truthy(value_of(step.get("continue-on-error", False), context)):
            self.failed = True

    def remember(self, step: Dict[str, Any], outcome: str, outputs: Dict[str, str]) -> None:
        if step.get("id"):
            self.steps[step["id"]] = {"outcome": outcome, "conclusion": outcome, "outputs": outputs}

    def shell(self, step: Dict[str, Any], context: Context, log: str) -> Tuple[int, Dict[str, str]]:
        defaults = (self.spec.get("defaults") or {}).get("run") or {}
        shell = value_of(step.get("shell") or defaults.get("shell") or "bash", context)
        folder = value_of(step.get("working-directory") or defaults.get("working-directory") or ".", context)
        script = os.path.join(self.temp, f"step-{len(self.record)}")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(value_of(str(step["run"]), context))
        files = {name: os.path.join(self.temp, f"{name.lower()}-{len(self.record)}") for name in FILES}
        for path in files.values():
            open(path, "w").close()
        env = {k: to_string(value_of(v, context)) for k, v in (step.get("env") or {}).items()}
        code = self.spawn(shell_command(shell, script), os.path.join(self.workspace, folder), env, files, log)
        self.env.update(read_pairs(files["GITHUB_ENV"]))
        with open(files["GITHUB_PATH"], encoding="utf-8") as fh:
            self.path = [line.strip() for line in fh if line.strip()] + self.path
        with open(files["GITHUB_STEP_SUMMARY"], encoding="utf-8") as fh, open(self.run.summary, "a") as out:
            out.write(fh.read())
        return code, read_pairs(files["GITHUB_OUTPUT"])

    def spawn(self, argv: List[str], cwd: str, env: Dict[str, str], files: Dict[str, str], log: str) -> int:
        if not os.path.isdir(cwd):
            raise WorkflowError(f"working-directory {cwd} does not exist")
        with open(log, "w", encoding="utf-8") as out:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=self.process_env(env, files),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                code = process.wait(timeout=max(1.0, self.deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the step's own process group, as the runner cancels it
                process.wait()
                out.write("\nthe job's timeout-minutes passed: step killed\n")
                code = 124
        with open(log, encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-3000:]
        print(tail, flush=True)
        return code

    def uses(self, step: Dict[str, Any], context: Context, log: str) -> Tuple[int, Dict[str, str]]:
        action = str(step["uses"]).split("@")[0]
        args = {k: to_string(value_of(v, context)) for k, v in (step.get("with") or {}).items()}
        stand_in = STAND_INS.get(action)
        if stand_in is None:
            raise WorkflowError(f"{step['uses']}: no local stand-in for this action")
        outputs, said = stand_in(self, args)
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(said + "\n")
        print(f"   local stand-in: {said}", flush=True)
        return 0, outputs


FILES = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")


# ---- stand-ins for `uses:` steps ---------------------------------------------------------------------------------


def checkout(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    shutil.rmtree(job.workspace)
    shutil.copytree(job.run.repo, job.workspace, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    return {}, f"copied {job.run.repo} into {job.workspace}"


def setup_python(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    # one path for every job, made afresh for each, as a hosted runner's tool cache is: what a job's report
    # records of its Python (the shipped known file's path) is the same in every job
    toolcache = os.path.join(job.run.work, "toolcache")
    venv = os.path.join(toolcache, "python")
    if job.run.python_of != job.root:
        shutil.rmtree(toolcache, ignore_errors=True)
        job.run.python_of = job.root
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)  # pip: this Python's
        seen = os.path.join(toolcache, "python-site")  # this Python's packages, kbtool's left out
        os.makedirs(seen)
        for folder in site.getsitepackages():
            for entry in os.listdir(folder):
                hidden = entry.lower().startswith(("kbtool", "__editable__")) or entry.endswith(".pth")
                if not hidden and not os.path.exists(os.path.join(seen, entry)):
                    os.symlink(os.path.join(folder, entry), os.path.join(seen, entry))
        purelib = subprocess.run(
            [os.path.join(venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        with open(os.path.join(purelib, "zz-this-python.pth"), "w", encoding="utf-8") as fh:
            fh.write(seen + "\n")
    job.path.insert(0, os.path.join(venv, "bin"))
    asked = args.get("python-version", "")
    return {"python-version": platform.python_version(), "python-path": os.path.join(venv, "bin", "python")}, (
        f"a venv of this Python {platform.python_version()} (asked for {asked or 'none'}) at {venv}"
    )


def cache(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    paths = [os.path.expanduser(p.strip()) for p in args.get("path", "").splitlines() if p.strip()]
    hit = bool(paths) and all(os.path.exists(p) for p in paths)
    said = "hit: it is here" if hit else "miss: not here (the next steps build it; nothing is saved)"
    return {"cache-hit": "true" if hit else "false"}, f"cache {args.get('key')}: {', '.join(paths)}: {said}"


def setup_uv(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    if not shutil.which("uv"):
        raise WorkflowError("astral-sh/setup-uv: no uv on PATH here")
    return {}, "uv from PATH"


def upload(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    target = os.path.join(job.run.work, "artifacts", args["name"])
    if os.path.exists(target):
        raise WorkflowError(f"upload-artifact: an artifact named {args['name']!r} exists already")
    found = []
    for pattern in (p.strip() for p in args.get("path", "").splitlines() if p.strip()):
        found += [f for f in glob.glob(os.path.join(job.workspace, pattern)) if os.path.isfile(f)]
    if not found:
        if args.get("if-no-files-found", "warn") == "error":
            raise WorkflowError(f"upload-artifact {args['name']}: no files")
        return {}, f"{args['name']}: no files, nothing uploaded"
    os.makedirs(target)
    for path in found:
        shutil.copy2(path, target)
    return {}, f"{args['name']}: copied {len(found)} file(s) to {target}"


def download(job: Job, args: Dict[str, str]) -> Tuple[Dict[str, str], str]:
    stored = os.path.join(job.run.work, "artifacts")
    names = sorted(os.listdir(stored)) if os.path.isdir(stored) else []
    wanted = [n for n in names if fnmatch.fnmatch(n, args.get("pattern") or args.get("name") or "*")]
    target = os.path.join(job.workspace, args.get("path") or ".")
    for name in wanted:
        into = (
            target if truthy(args.get("merge-multiple") == "true") or args.get("name") else os.path.join(target, name)
        )
        os.makedirs(into, exist_ok=True)
        for entry in os.listdir(os.path.join(stored, name)):
            shutil.copy2(os.path.join(stored, name, entry), into)
    return {}, f"copied {len(wanted)} artifact(s) ({', '.join(wanted)}) into {target}"


STAND_INS: Dict[str, Callable[[Job, Dict[str, str]], Tuple[Dict[str, str], str]]] = {
    "actions/checkout": checkout,
    "actions/setup-python": setup_python,
    "actions/cache": cache,
    "astral-sh/setup-uv": setup_uv,
    "actions/upload-artifact": upload,
    "actions/download-artifact": download,
}


# ---- the run -----------------------------------------------------------------------------------------------------


class Run:
    def __init__(self, doc: Dict[str, Any], repo: str, work: str, inputs: Dict[str, Any]) -> None:
        self.doc, self.repo, self.work, self.inputs = doc, repo, work, inputs
        self.name = str(doc.get("name", "workflow"))
        self.summary = os.path.join(work, "summary.md")
        self.python_of = ""  # the job (its folder) whose setup-python made WORK/toolcache/python
        self.jobs: Dict[str, Dict[str, Any]] = {}
        self.workflow_env = {k: to_string(v) for k, v in (doc.get("env") or {}).items()}

    def base_context(self) -> Context:
        return {
            "inputs": self.inputs,
            "github": {"workflow": self.name, "ref": "refs/heads/local", "event_name": "workflow_call"},
            "needs": {},
            "jobs": {name: {"result": j["result"], "outputs": j["outputs"]} for name, j in self.jobs.items()},
        }

    def order(self) -> List[str]:
        jobs: Dict[str, Any] = self.doc.get("jobs") or {}
        done: set[str] = set()
        order: List[str] = []
        while len(order) < len(jobs):
            ready = [n for n, j in jobs.items() if n not in done and set(needs_of(j)) <= done]
            if not ready:
                raise WorkflowError("the jobs' needs form a cycle or name a job that does not exist")
            order.append(ready[0])
            done.add(ready[0])
        return order

    def run_job(self, name: str) -> None:
        spec = self.doc["jobs"][name]
        needs = {n: self.jobs[n] for n in needs_of(spec)}
        context = {**self.base_context(), "needs": needs}
        failed_need = any(j["result"] != "success" for j in needs.values())
        record: Dict[str, Any] = {"result": "skipped", "outputs": {}, "legs": []}
        self.jobs[name] = record
        if not condition(spec.get("if"), context, failed_need):
            print(f"== {name}: skipped", flush=True)
            return
        legs = matrix_legs((spec.get("strategy") or {}).get("matrix"), context)
        results = []
        for number, matrix in enumerate(legs):
            job = Job(self, name, spec, matrix, f"{name}-{number}" if matrix else name, needs)
            job.execute()
            results.append(not job.failed)
            outputs = {k: to_string(value_of(v, job.context())) for k, v in (spec.get("outputs") or {}).items()}
            record["outputs"].update({k: v for k, v in outputs.items() if v != ""})
            record["legs"].append({"matrix": matrix, "failed": job.failed, "steps": job.record})
        record["result"] = "success" if all(results) else "failure"

    def execute(self) -> Dict[str, Any]:
        for name in self.order():
            self.run_job(name)
        declared = (triggers(self.doc).get("workflow_call")) or {}
        context = self.base_context()
        outputs = {k: to_string(value_of(v.get("value"), context)) for k, v in (declared.get("outputs") or {}).items()}
        ok = all(j["result"] in ("success", "skipped") for j in self.jobs.values())
        return {"ok": ok, "inputs": self.inputs, "outputs": outputs, "jobs": self.jobs}


def triggers(doc: Dict[Any, Any]) -> Dict[str, Any]:
    """The workflow's `on:` (YAML 1.1 reads the bare key `on` as True)."""
    found = doc.get(True) or doc.get("on") or {}
    return found if isinstance(found, dict) else {}


def needs_of(job: Dict[str, Any]) -> List[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def matrix_legs(raw: Any, context: Context) -> List[Dict[str, Any]]:
    if raw is None:
        return [{}]
    matrix = value_of(raw, context)
    if not isinstance(matrix, dict) or {"include", "exclude"} & set(matrix):
        raise WorkflowError("a matrix here is keys with lists of values (no include/exclude)")
    keys = list(matrix)
    values = [value_of(matrix[k], context) for k in keys]
    if not all(isinstance(v, list) and v for v in values):
        raise WorkflowError(f"matrix {matrix!r}: each key needs a non-empty list")
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def typed_inputs(doc: Dict[str, Any], given: Dict[str, str]) -> Dict[str, Any]:
    """The workflow_call inputs: given ones by their declared type, the others' defaults; unknown names refused."""
    declared = (triggers(doc).get("workflow_call") or {}).get("inputs") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise WorkflowError(f"unknown input {unknown[0]!r}; the workflow's inputs: {', '.join(declared)}")
    inputs: Dict[str, Any] = {}
    for name, spec in declared.items():
        kind = (spec or {}).get("type", "string")
        if name not in given:
            if (spec or {}).get("required"):
                raise WorkflowError(f"input {name!r} is required")
            inputs[name] = (spec or {}).get("default", "" if kind == "string" else None)
            continue
        text = given[name]
        if kind == "boolean" and text not in ("true", "false"):
            raise WorkflowError(f"input {name!r} is a boolean: true or false, not {text!r}")
        inputs[name] = text == "true" if kind == "boolean" else float(text) if kind == "number" else text
    return inputs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workflow", help="the workflow's YAML file")
    parser.add_argument("--repo", required=True, help="the repository each job's checkout copies")
    parser.add_argument("--work", required=True, help="an empty (or new) folder for the run")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", help="a workflow_call input")
    args = parser.parse_args(argv)
    try:
        with open(args.workflow, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), dict):
            raise WorkflowError(f"{args.workflow}: not a workflow (no jobs)")
        if not os.path.isdir(args.repo):
            raise WorkflowError(f"--repo {args.repo}: not a folder")
        if os.path.exists(args.work) and os.listdir(args.work):
            raise WorkflowError(f"--work {args.work}: not empty")
        bad = [i for i in args.input if "=" not in i]
        if bad:
            raise WorkflowError(f"--input {bad[0]!r}: give NAME=VALUE")
        inputs = typed_inputs(doc, dict(i.split("=", 1) for i in args.input))
        os.makedirs(args.work, exist_ok=True)
        run = Run(doc, os.path.abspath(args.repo), os.path.abspath(args.work), inputs)
        result = run.execute()
    except (WorkflowError, OSError) as exc:
        print(f"run-workflow-locally: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    except yaml.YAMLError as exc:  # its first line ("while parsing a flow sequence") names neither file nor line
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        print(f"run-workflow-locally: {args.workflow}{where}: not YAML: {problem}", file=sys.stderr)
        return 2
    with open(os.path.join(run.work, "result.json"), "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
    print(f"== {'ok' if result['ok'] else 'failed'}: outputs {json.dumps(result['outputs'])}", flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
