"""Planted faults: does `kbtool check` catch each fault of tests/faults/faults.yaml? (issue #30, "Done means")

Each fault is a wrong backend function. It is planted without editing the checked tree: most through the worker's
test-only seam (KBTOOL_PLANT names tests/faults/plant.py, which wraps K.<op> inside the worker); kind `map` through
a copy of the checkout whose adapter function (kbtool/worker/keras3_port/) is edited, run with PYTHONPATH on the copy.
A fault is caught when the faulted run reports at least one unexplained result of its op (not pass, not known, not
unsupported) and the same run without the fault reports none. Faults on distinct ops of one backend share a run.

    python3 scripts/planted_faults.py                       # the table: kind -> planted, caught; the missed faults
    python3 scripts/planted_faults.py --json out.json       # and every fault's outcome as JSON
    python3 scripts/planted_faults.py --root ../other --kind masked --id 'dist-*'

Exit code: 0 every selected fault caught, 1 some missed (or not planted), 2 bad input.
"""

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
FAULTS_FILE = os.path.join(CHECKOUT, "tests", "faults", "faults.yaml")
PLANT_FILE = os.path.join(CHECKOUT, "tests", "faults", "plant.py")
PORT_DIR = os.path.join("kbtool", "worker", "keras3_port")
EXPLAINED = ("pass", "unsupported")  # besides a result with a known difference
PLANT_KEYS = ("when", "set", "out")
EDIT_KEYS = ("function", "old", "new")


class FaultsError(Exception):
    """Bad faults data or arguments: one line for the user."""


@dataclass
class Fault:
    id: str
    kind: str
    backend: str
    op: str
    why: str
    plant: Optional[Dict[str, Any]] = None
    edit: Optional[Dict[str, str]] = None
    cases: Tuple[str, ...] = ()


@dataclass
class Outcome:
    id: str
    kind: str
    backend: str
    op: str
    caught: bool
    outcome: str  # caught | missed | baseline not clean | not planted
    detail: str = ""
    unexplained: List[Dict[str, str]] = field(default_factory=list)  # a few of the faulted run's results


# ---------------------------------------------------------------------------------------------------- the data
def load(path: str = FAULTS_FILE) -> Tuple[Dict[str, str], List[Fault]]:
    """The kinds and the faults of a faults file, validated."""
    with open(path) as f:
        data = yaml.safe_load(f)
    kinds = data.get("kinds") or {}
    faults = [_fault(entry, kinds) for entry in data.get("faults") or []]
    seen: Dict[str, int] = {}
    for fault in faults:
        seen[fault.id] = seen.get(fault.id, 0) + 1
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        raise FaultsError(f"{path}: fault ids used twice: {', '.join(twice)}")
    return dict(kinds), faults


def _fault(entry: Dict[str, Any], kinds: Dict[str, str]) -> Fault:
    name = entry.get("id", "?")
    for key in ("id", "kind", "backend", "op", "why"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise FaultsError(f"fault {name}: `{key}` must be a non-empty string")
    if entry["kind"] not in kinds:
        raise FaultsError(f"fault {name}: kind {entry['kind']!r} is not one of {', '.join(kinds)}")
    plant, edit = entry.get("plant"), entry.get("edit")
    if (plant is None) == (edit is None):
        raise FaultsError(f"fault {name}: give exactly one of `plant` and `edit`")
    if plant is not None and (not isinstance(plant, dict) or not plant or set(plant) - set(PLANT_KEYS)):
        raise FaultsError(f"fault {name}: `plant` holds some of {', '.join(PLANT_KEYS)}, nothing else")
    if edit is not None and (not isinstance(edit, dict) or set(edit) != set(EDIT_KEYS)):
        raise FaultsError(f"fault {name}: `edit` holds exactly {', '.join(EDIT_KEYS)}")
    if (edit is not None) != (entry["kind"] == "map"):
        raise FaultsError(f"fault {name}: a `map` fault is an `edit` of the adapter, any other kind a `plant`")
    cases = entry.get("cases") or []
    return Fault(entry["id"], entry["kind"], entry["backend"], entry["op"], entry["why"], plant, edit, tuple(cases))


def select(faults: Sequence[Fault], kinds: Sequence[str], ids: Sequence[str], backends: Sequence[str]) -> List[Fault]:
    return [
        f
        for f in faults
        if (not kinds or f.kind in kinds)
        and (not ids or any(fnmatch.fnmatchcase(f.id, pattern) for pattern in ids))
        and (not backends or f.backend in backends)
    ]


# ---------------------------------------------------------------------------------------------------- the runs
@dataclass
class Batch:
    """Faults on distinct ops of one backend, planted together in one run."""

    backend: str
    cases: Tuple[str, ...]
    edits: bool  # a copy of the checkout with edited adapter functions, else the worker seam
    faults: List[Fault] = field(default_factory=list)

    @property
    def ops(self) -> List[str]:
        return sorted({f.op for f in self.faults})


def batches(faults: Sequence[Fault]) -> List[Batch]:
    """The fewest runs, greedily: a fault joins the first batch of its backend, case filter and mechanism that has
    no fault on its op yet (two faults on one op would be one wrapper over another)."""
    out: List[Batch] = []
    for fault in faults:
        edits = fault.edit is not None
        for batch in out:
            same = (batch.backend, batch.cases, batch.edits) == (fault.backend, fault.cases, edits)
            if same and fault.op not in batch.ops:
                batch.faults.append(fault)
                break
        else:
            out.append(Batch(fault.backend, fault.cases, edits, [fault]))
    return out


def check_command(backend: str, ops: Sequence[str], cases: Sequence[str], report: str) -> List[str]:
    argv = [sys.executable, "-m", "kbtool", "check", "--backend", backend, "-j", "1", "-o", report]
    for op in ops:
        argv += ["--op", op]
    for case in cases:
        argv += ["--case", case]
    return argv


def run_check(root: str, argv: Sequence[str], extra_env: Dict[str, str], timeout: float) -> Dict[str, Any]:
    """One `kbtool check` of the checkout at `root`: its JSON report ({} with an `error` when none was written)."""
    env = dict(os.environ, PYTHONPATH=root, **extra_env)
    for name in ("KBTOOL_PLANT", "KBTOOL_PLANT_FAULTS", "KBTOOL_PLANT_MARK"):
        if name not in extra_env:
            env.pop(name, None)  # a baseline never inherits a fault
    report = argv[argv.index("-o") + 1]
    try:
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"kbtool check ran past {timeout:.0f} s"}
    if not os.path.exists(report):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return {"error": f"kbtool check exited {done.returncode} without a report: {' '.join(tail)}"}
    with open(report) as f:
        data: Dict[str, Any] = json.load(f)
    data["exit_code"] = done.returncode
    return data


def unexplained(report: Dict[str, Any], op: str) -> List[Dict[str, Any]]:
    return [
        r for r in report.get("results", []) if r["op"] == op and r["status"] not in EXPLAINED and not r.get("known")
    ]


def not_started(report: Dict[str, Any], backend: str) -> str:
    """Why the report's backend did not run ('' when it did)."""
    if "error" in report:
        return str(report["error"])
    for entry in report.get("backends", []):
        if entry.get("name") == backend and entry.get("status") != "available":
            return f"{backend} is {entry.get('status')}: {entry.get('error') or entry.get('reason') or ''}".strip()
    return ""


# ---------------------------------------------------------------------------------------------------- the copy
def function_block(text: str, name: str) -> Tuple[int, int]:
    """Start and end offsets of top-level `def name(` in a module's text; (-1, -1) when absent."""
    start = text.find(f"\ndef {name}(")
    if start < 0:
        return -1, -1
    start += 1
    end = start
    for line in text[start:].splitlines(keepends=True)[1:]:
        if line.strip() and not line[0].isspace() and not line.startswith(")"):
            break
        end += len(line)
    first = text[start:].splitlines(keepends=True)[0]
    return start, end + len(first)


def edit_port(root: str, edit: Dict[str, str]) -> str:
    """Applies one edit to the adapter under `root`: `old` -> `new`, once, inside function `function`; returns
    the file edited. Raises FaultsError when the function or the text is not there exactly once."""
    port = os.path.join(root, PORT_DIR)
    for name in sorted(os.listdir(port)):
        path = os.path.join(port, name)
        if not name.endswith(".py"):
            continue
        with open(path) as f:
            text = f.read()
        start, end = function_block(text, edit["function"])
        if start < 0:
            continue
        block = text[start:end]
        if block.count(edit["old"]) != 1:
            raise FaultsError(f"{path}: {edit['function']}() holds {edit['old']!r} {block.count(edit['old'])} times")
        with open(path, "w") as f:
            f.write(text[:start] + block.replace(edit["old"], edit["new"]) + text[end:])
        return path
    raise FaultsError(f"no function {edit['function']}() in {port}")


def edited_copy(root: str, faults: Sequence[Fault], into: str) -> str:
    """A copy of the checkout's kbtool/ and specs/ with each fault's adapter edit applied; its root."""
    copy = os.path.join(into, "checkout")
    for part in ("kbtool", "specs"):
        shutil.copytree(
            os.path.join(root, part), os.path.join(copy, part), ignore=shutil.ignore_patterns("__pycache__")
        )
    for fault in faults:
        assert fault.edit is not None
        edit_port(copy, fault.edit)
    return copy


# ---------------------------------------------------------------------------------------------------- measuring
def plant_env(batch: Batch, mark: str) -> Dict[str, str]:
    planted = [dict(f.plant or {}, id=f.id, op=f.op) for f in batch.faults]
    return {"KBTOOL_PLANT": PLANT_FILE, "KBTOOL_PLANT_FAULTS": json.dumps(planted), "KBTOOL_PLANT_MARK": mark}


def run_batch(root: str, batch: Batch, work: str, timeout: float) -> Tuple[Dict[str, Any], str]:
    """The faulted run of one batch: its report, and why its faults were not planted ('' when they were)."""
    os.makedirs(work)
    report = os.path.join(work, "report.json")
    argv = check_command(batch.backend, batch.ops, batch.cases, report)
    if batch.edits:
        try:
            copy = edited_copy(root, batch.faults, work)
        except FaultsError as exc:
            return {}, str(exc)
        return run_check(copy, argv, {}, timeout), ""
    mark = os.path.join(work, "marks")
    os.makedirs(mark)
    data = run_check(root, argv, plant_env(batch, mark), timeout)
    if not os.listdir(mark) and not not_started(data, batch.backend):
        return data, f"the worker of {root} never called plant(K): it has no KBTOOL_PLANT seam (kbtool/worker/main.py)"
    return data, ""


def judge(fault: Fault, baseline: Dict[str, Any], faulted: Dict[str, Any], unplanted: str) -> Outcome:
    def outcome(caught: bool, word: str, detail: str = "", found: Sequence[Dict[str, Any]] = ()) -> Outcome:
        shown = [{k: str(r.get(k, "")) for k in ("case", "mode", "status", "message")} for r in found[:3]]
        return Outcome(fault.id, fault.kind, fault.backend, fault.op, caught, word, detail, shown)

    why = unplanted or not_started(baseline, fault.backend) or not_started(faulted, fault.backend)
    if why:
        return outcome(False, "not planted", why)
    before = unexplained(baseline, fault.op)
    if before:
        return outcome(False, "baseline not clean", f"{len(before)} unexplained without the fault", before)
    ran = [r for r in faulted.get("results", []) if r["op"] == fault.op]
    found = unexplained(faulted, fault.op)
    broken = [r for r in found if "PlantError" in r.get("message", "")]
    if broken:  # the fault's own expression failed (tests/faults/plant.py): that error is no catch
        return outcome(False, "not planted", broken[0]["message"], broken)
    if found:
        return outcome(True, "caught", f"{len(found)} of {len(ran)} results unexplained", found)
    return outcome(False, "missed", f"all {len(ran)} results pass or known")


def measure(
    root: str, faults: Sequence[Fault], timeout: float = 900, log: Any = None, jobs: Optional[int] = None
) -> List[Outcome]:
    """Every fault's outcome: one baseline run per backend and case filter, one faulted run per batch; `jobs` runs
    at once (default: one per core; each is a `kbtool check -j 1`, one worker)."""
    say = log or (lambda line: None)
    plan = batches(faults)
    keys = sorted({(b.backend, b.cases) for b in plan})
    with tempfile.TemporaryDirectory(prefix="kbtool-faults-") as work:

        def baseline(index: int, key: Tuple[str, Tuple[str, ...]]) -> Dict[str, Any]:
            ops = sorted({f.op for f in faults if (f.backend, f.cases) == key})
            t0 = time.time()
            report = run_check(
                root, check_command(key[0], ops, key[1], os.path.join(work, f"baseline-{index}.json")), {}, timeout
            )
            say(f"baseline {key[0]} ({len(ops)} ops): {time.time() - t0:.0f} s")
            return report

        def faulted(index: int, batch: Batch) -> Tuple[Dict[str, Any], str]:
            t0 = time.time()
            done = run_batch(root, batch, os.path.join(work, f"batch-{index}"), timeout)
            say(f"batch {index + 1}/{len(plan)} {batch.backend} ({len(batch.faults)} faults): {time.time() - t0:.0f} s")
            return done

        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            base_runs = {key: pool.submit(baseline, i, key) for i, key in enumerate(keys)}
            batch_runs = [pool.submit(faulted, i, batch) for i, batch in enumerate(plan)]
            outcomes: Dict[str, Outcome] = {}
            for batch, future in zip(plan, batch_runs):
                report, unplanted = future.result()
                base = base_runs[(batch.backend, batch.cases)].result()
                for fault in batch.faults:
                    outcomes[fault.id] = judge(fault, base, report, unplanted)
    return [outcomes[f.id] for f in faults]


def table(kinds: Dict[str, str], outcomes: Sequence[Outcome]) -> List[Dict[str, Any]]:
    rows = []
    for kind, what in kinds.items():
        mine = [o for o in outcomes if o.kind == kind]
        if mine:
            rows.append({"kind": kind, "what": what, "planted": len(mine), "caught": sum(o.caught for o in mine)})
    return rows


def render(rows: Sequence[Dict[str, Any]], outcomes: Sequence[Outcome]) -> str:
    width = max([len(r["kind"]) for r in rows] + [5])
    lines = [f"{'kind':<{width}}  planted  caught  what"]
    for r in rows:
        lines.append(f"{r['kind']:<{width}}  {r['planted']:>7}  {r['caught']:>6}  {r['what']}")
    total = sum(r["planted"] for r in rows), sum(r["caught"] for r in rows)
    lines.append(f"{'total':<{width}}  {total[0]:>7}  {total[1]:>6}")
    missed = [o for o in outcomes if not o.caught]
    if missed:
        lines += ["", f"not caught ({len(missed)}):"]
        lines += [f"  {o.id} [{o.kind}] {o.backend} {o.op}: {o.outcome}, {o.detail}" for o in missed]
    return "\n".join(lines)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=CHECKOUT, help="the kbtool checkout to measure (default: this one)")
    parser.add_argument("--faults", default=FAULTS_FILE, help="the faults file (default: tests/faults/faults.yaml)")
    parser.add_argument("--kind", action="append", default=[], help="only faults of this kind (repeatable)")
    parser.add_argument("--id", action="append", default=[], help="only faults whose id matches this glob")
    parser.add_argument("--backend", action="append", default=[], help="only faults on this backend")
    parser.add_argument("--json", help="also write every fault's outcome and the table to this file")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one kbtool check may take")
    parser.add_argument("--jobs", type=int, default=None, help="kbtool checks at once (default: one per core)")
    args = parser.parse_args(argv)
    try:
        kinds, faults = load(args.faults)
        chosen = select(faults, args.kind, args.id, args.backend)
        if not chosen:
            raise FaultsError("no fault matches the filters")
        if not os.path.isdir(os.path.join(args.root, "kbtool")):
            raise FaultsError(f"{args.root} is not a kbtool checkout (no kbtool/ in it)")
    except (FaultsError, OSError, yaml.YAMLError) as exc:
        print(f"planted_faults: {exc}", file=sys.stderr)
        return 2
    t0 = time.time()
    if args.jobs is not None and args.jobs < 1:
        print("planted_faults: --jobs takes a whole number of at least 1", file=sys.stderr)
        return 2
    outcomes = measure(os.path.abspath(args.root), chosen, args.timeout, _say, args.jobs)
    rows = table(kinds, outcomes)
    print(render(rows, outcomes))
    seconds = round(time.time() - t0, 1)
    print(f"{len(chosen)} faults in {seconds} s", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"root": args.root, "seconds": seconds, "table": rows, "faults": [asdict(o) for o in outcomes]},
                f,
                indent=1,
            )
    return 0 if all(o.caught for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
