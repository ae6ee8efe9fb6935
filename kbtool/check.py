"""`kbtool check`: run spec cases on backends, compare with the reference, build the JSON report.

The JSON report is the source of truth; every other view renders it (kbtool/reports/).
"""
import datetime
import fnmatch
import os
import re
import shlex
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import yaml

from . import __version__, compare
from .errors import KbtoolError
from .runners.worker import invoke
from .specs import cases as cases_mod
from .specs import shapes

STATUSES = ("pass", "fail", "error", "crash", "timeout", "unsupported")
KNOWN_DIFFERENCES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "specs",
                                 "known_differences.yaml")


def load_known_differences(path=KNOWN_DIFFERENCES):
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        try:
            entries = yaml.safe_load(fh) or []
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = "{}:{}".format(path, mark.line + 1) if mark else path
            raise KbtoolError("{}: not valid YAML ({})".format(where, getattr(exc, "problem", exc)))
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise KbtoolError("{}: expected a list of entries (op, backend, reason, ...)".format(path))
    for i, entry in enumerate(entries):
        missing = [k for k in ("op", "backend", "reason") if k not in entry]
        if missing:
            raise KbtoolError("{}: entry {} lacks {}".format(path, i + 1, ", ".join(missing)))
        for key in ("op", "case", "backend", "mode", "status"):
            value = entry.get(key, "*")
            if not isinstance(value, str) and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise KbtoolError("{}: entry {} ({}): {} must be a glob or a list of globs".format(
                    path, i + 1, entry["op"], key))
        try:
            re.compile(entry.get("match") or "")
        except re.error as exc:
            raise KbtoolError("{}: entry {} ({}): match is not a valid regex: {}".format(path, i + 1, entry["op"], exc))
    return entries


def _matches(value, patterns):
    """A glob, or a list of globs any of which may match."""
    patterns = [patterns] if isinstance(patterns, str) else patterns
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _known_match(entry, record):
    return (_matches(record["op"], entry["op"]) and _matches(record["case"], entry.get("case", "*"))
            and _matches(record["backend"], entry["backend"]) and _matches(record["mode"], entry.get("mode", "*")))


def _explains(entry, record):
    """Whether a targeted, non-passing result has the entry's status and message."""
    return (record["status"] != "pass" and _matches(record["status"], entry.get("status", "*"))
            and (not entry.get("match") or re.search(entry["match"], record["message"])))


def apply_known_differences(records, entries, whole_spec=True, all_cases=True):
    """Mark results that a known difference explains; return the entries that no longer reproduce.

    Staleness is judged only where the run covers what an entry explains: every case of the ops it names
    (no --case, --mode or --examples filter), and the whole spec for an entry for every op ("*").
    """
    stale = []
    for entry in entries:
        targeted = [r for r in records if _known_match(entry, r)]
        explained = [r for r in targeted if _explains(entry, r)]
        for record in explained:
            record.setdefault("known", entry["reason"])  # the first entry that explains a result names it
        judged = all_cases and (whole_spec or entry["op"] != "*")
        if targeted and not explained and judged:
            stale.append(dict(entry, note="did not reproduce in this run ({} results checked)".format(len(targeted))))
    return stale


class Reference:
    """The NumPy reference, called in-process through the same invoke path as the workers."""

    def __init__(self):
        from . import reference

        self.module = reference
        self._lock = threading.Lock()
        self._cache = {}

    def outcome(self, case):
        key = (case.op, case.id)
        with self._lock:
            if key not in self._cache:
                if case.grad:
                    self._cache[key] = self._numeric_gradients(case)
                else:
                    # the reference answers in the case's first mode (a placeholder-only case has no eager form)
                    self._cache[key] = invoke.evaluate(self.module, case.request(case.modes[0]), case.arrays)
            return self._cache[key]

    def _numeric_gradients(self, case, step=1e-6):
        """d sum(op(...)) / d input, by central differences in float64, for each tensor input.

        The reference has no autodiff of its own; differences in float64 are independent of every
        backend's gradient code, which is the point of the comparison.
        """
        request = dict(case.request("eager"), grad=False)
        arrays64 = [a.astype("float64") if a.dtype.kind == "f" else a for a in case.arrays]

        def total(arrays):
            header, outs = invoke.evaluate(self.module, request, arrays)
            if header["status"] != "ok":
                raise RuntimeError(header)
            return float(sum(np.sum(o, dtype="float64") for o in outs))

        try:
            total(arrays64)
        except RuntimeError as exc:
            return exc.args[0], []
        grads = []
        for index in _tensor_indices(request):
            base = arrays64[index]
            grad = np.zeros_like(base)
            for pos in np.ndindex(base.shape):
                h = step * max(1.0, abs(base[pos]))
                for sign in (1, -1):
                    bumped = list(arrays64)
                    bumped[index] = base.copy()
                    bumped[index][pos] += sign * h
                    grad[pos] += sign * total(bumped) / (2 * h)
            grads.append(grad.astype(case.arrays[index].dtype))
        outputs = [{"kind": "array", "index": i, "dtype": str(g.dtype), "shape": list(g.shape)}
                   for i, g in enumerate(grads)]
        return {"status": "ok", "outputs": outputs, "sequence": True}, grads


def _tensor_indices(request):
    """Array indices of the tensor arguments, in the order the worker builds them."""
    found = []

    def walk(spec):
        if "tensor" in spec:
            found.append(spec["tensor"])
        for item in spec.get("list", []):
            walk(item)

    for spec in list(request.get("args", [])) + list(request.get("kwargs", {}).values()):
        walk(spec)
    return found


def _shape_rule_problem(spec_entry, case, header):
    rules = spec_entry.get("shape_rules")
    if not rules or header.get("status") != "ok" or case.raises or case.grad or case.observe:
        return None
    arrays = [o for o in header.get("outputs", []) if o["kind"] == "array"]
    if len(arrays) != 1:
        return None
    try:
        want, index = shapes.expected_shape(rules, case.shape_names)
    except shapes.ShapeExprError as exc:
        return "spec shape rule error: {}".format(exc)
    if want is not None and list(arrays[0]["shape"]) != want:
        return "shape {} but the spec's shape rule {} says {}".format(tuple(arrays[0]["shape"]), index, tuple(want))
    return None


def repro_command(record, seed):
    return "kbtool check --op {} --case {} --backend {} --mode {} --seed {}".format(
        shlex.quote(record["op"]), shlex.quote(record["case"]), shlex.quote(record["backend"]), record["mode"], seed)


def _own_name(name, hello):
    """The outcome K.backend() should have: the backend's name (for `module@env`, the env's; for a custom
    module on kbtool's Python, what its worker reported at start)."""
    want = name.split("@", 1)[1] if "@" in name else name
    if "." in want:
        want = hello.get("backend", want)
    return {"status": "ok", "outputs": [{"kind": "python", "value": want, "pytype": "str"}], "sequence": False}, []


def run_backend(name, launch, work, reference, seed, progress=None, case_timeout=None):
    """Run every (op entry, case) in `work` on one backend; returns (backend info, records)."""
    from .runners.client import WorkerClient

    client = WorkerClient(launch, **({"case_timeout": case_timeout} if case_timeout else {}))
    hello = client.start()
    info = {"name": name, "python": hello.get("python"), "versions": hello.get("versions", {}),
            "status": "available" if hello.get("status") == "ready" else "broken"}
    if hello.get("status") != "ready":
        info["reason"] = hello.get("error")
    records = []
    try:
        for entry, case in work:
            expected = _own_name(name, hello) if case.expect_backend_name else reference.outcome(case)
            for mode in case.modes:
                if info["status"] != "available":
                    break
                started = time.monotonic()
                actual = client.request(case.request(mode), case.arrays)
                seconds = time.monotonic() - started
                status, message = compare.compare(case, expected, actual)
                if status == "pass":
                    problem = _shape_rule_problem(entry, case, actual[0])
                    if problem:
                        status, message = "fail", problem
                record = {"op": case.op, "case": case.id, "backend": name, "mode": mode, "status": status,
                          "message": message, "seconds": round(seconds, 4)}
                if actual[0].get("note"):
                    record["note"] = actual[0]["note"]
                if status == "unsupported" and entry.get("alias_of"):
                    record["known"] = "Keras 1.x name, renamed to {} in Keras 2".format(entry["alias_of"])
                if case.shown and actual[0].get("status") == "ok":
                    record["doc_check"] = compare.doc_check(case.shown, compare.output_values(*actual))
                if status != "pass":
                    record["repro"] = repro_command(record, seed)
                records.append(record)
                if progress:
                    progress(name, record)
    finally:
        info["restarts"] = client.restarts
        client.stop()
    return info, records


def select_work(spec, ops, case_patterns, seed):
    work = []
    for op in ops:
        entry = spec.op(op)
        for case in cases_mod.cases_for(spec, op, seed):
            if case_patterns and not any(fnmatch.fnmatchcase(case.id, p) for p in case_patterns):
                continue
            work.append((entry, case))
    return work


def run_check(spec, ops, backends, seed=0, case_patterns=(), modes=None, progress=None, known=None,
              jobs=None, case_timeout=None):
    """Run and return the JSON report (a dict). `backends` maps name → Launch or Unavailable."""
    started = time.time()
    work = select_work(spec, ops, case_patterns, seed)
    if modes:
        for _, case in work:
            case.modes = [m for m in case.modes if m in modes]
    reference = Reference()
    infos, records = [], []
    runnable = {n: launch for n, launch in backends.items() if not isinstance(launch, Exception)}
    for name, launch in backends.items():
        if isinstance(launch, Exception):
            infos.append({"name": name, "status": "not installed", "reason": str(launch)})
    with ThreadPoolExecutor(max_workers=jobs or max(1, len(runnable))) as pool:
        futures = {name: pool.submit(run_backend, name, launch, work, reference, seed, progress, case_timeout)
                   for name, launch in runnable.items()}
        for name, future in futures.items():
            info, recs = future.result()
            infos.append(info)
            records.extend(recs)
    order = {name: i for i, name in enumerate(backends)}
    infos.sort(key=lambda i: order.get(i["name"], 99))
    records.sort(key=lambda r: (r["op"], r["case"], order.get(r["backend"], 99), r["mode"]))
    all_cases = not case_patterns and not modes
    stale = apply_known_differences(records, load_known_differences() if known is None else known,
                                    whole_spec=set(ops) >= _checkable(spec), all_cases=all_cases)
    report = {
        "kbtool": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "spec": {"path": spec.path, "ops": len(ops), "cases": len(work)},
        "backends": infos,
        "results": records,
        "stale_known_differences": stale,
        "wall_seconds": round(time.time() - started, 2),
    }
    report["summary"] = summarize(report)
    return report


def _checkable(spec):
    return {name for name, entry in spec.ops.items() if not entry.get("not_checkable")}


def summarize(report):
    per_backend = {}
    for record in report["results"]:
        counts = per_backend.setdefault(record["backend"], {s: 0 for s in STATUSES + ("known",)})
        if record.get("known"):
            counts["known"] += 1
        else:
            counts[record["status"]] += 1
    seconds = {}
    for record in report["results"]:
        seconds[record["backend"]] = seconds.get(record["backend"], 0.0) + record["seconds"]
    divergences = sum(1 for r in report["results"] if r["status"] != "pass" and not r.get("known"))
    broken = [b["name"] for b in report["backends"] if b["status"] != "available"]
    return {"per_backend": per_backend, "case_seconds": {k: round(v, 2) for k, v in seconds.items()},
            "divergences": divergences, "stale": len(report["stale_known_differences"]),
            "unavailable_backends": broken, "ok": divergences == 0 and not report["stale_known_differences"]}


def exit_code(report):
    return 0 if report["summary"]["ok"] else 1
