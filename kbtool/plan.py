"""The plan of a check: which ops, cases, modes and backends run, and what an unavailable backend means.

Everything a check decides before it runs anything is decided here, so the CLI only parses flags and the run
stage only executes. A plan that would check nothing is refused (a run that checked nothing is never green).
"""

import fnmatch
from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple

from .errors import KbtoolError
from .specs import cases as cases_mod
from .vocabulary import MODES

EXAMPLES = "example:*"  # the case ids of documented examples


@dataclass
class BackendSlot:
    """One backend of the plan: a launch line to run it, or why it cannot run here."""

    name: str
    launch: Optional[object] = None  # runners.base.Launch
    unavailable: Optional[str] = None  # why there is no launch (not installed, no interpreter)


@dataclass
class Plan:
    spec: object  # specs.loader.Spec
    ops: List[str]
    work: List[Tuple[dict, object]]  # (spec entry, specs.cases.Case), modes already filtered
    backends: List[BackendSlot]
    seed: int = 0
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples_only: bool = False
    filters: List[str] = field(default_factory=list)  # what narrowed the run, in words
    grid: str = "pairwise"  # how the grids of the spec's parameter domains are expanded (specs/domains.py)
    keras_config: Optional[dict] = None  # --keras-config: settings every case runs under instead of its own
    active_backend: Optional[str] = None  # the user's configured Keras backend (keras_settings.apply)
    settings: Optional[object] = None  # keras_settings.CheckSettings: every setting and where it came from
    shard: Optional[Tuple[int, int]] = None  # --shard K/N: this plan's work is part K of N (kbtool/shard.py)
    last_failed: bool = False  # --last-failed: the work is what failed in the last check
    # per backend, the (op, case id, mode) it runs (--last-failed); a backend not named runs all the work
    only: Optional[dict] = None
    shard_share: Optional[object] = None  # shard.Share: how much of the work this shard runs
    notes: List[str] = field(default_factory=list)  # what the user should know about how the plan was chosen

    @property
    def counts_comparable(self):
        """A default run of the whole spec: known-difference counts can be compared with the recorded ones."""
        return self.all_cases and self.whole_spec and self.grid == "pairwise" and not self.keras_config

    @property
    def runnable(self):
        return [b for b in self.backends if b.launch is not None]

    @property
    def all_cases(self):
        """Every case of the planned ops in every mode, as a default run has them: no --case, --mode, --examples,
        --keras-config, --shard or --last-failed."""
        # under --keras-config every result differs from a default run's: no entry can be judged stale by it;
        # a shard or a --last-failed run holds part of the cases (a merge of every shard judges them: reports/merge)
        return (
            unfiltered(self.case_patterns, self.modes, self.examples_only, self.keras_config)
            and not self.shard
            and not self.last_failed
        )

    def work_for(self, backend):
        """The (entry, case) work `backend` runs: all of it, or under `only` its cases in its modes, in the modes the
        backend can run (Launch.modes: keras3 has no symbolic mode)."""
        wanted = (self.only or {}).get(backend)
        allowed = set(backend_modes(self.slot(backend)))
        if wanted is None and allowed >= set(MODES):
            return self.work
        work = []
        for entry, case in self.work:
            modes = [m for m in case.modes if m in allowed and (wanted is None or (case.op, case.id, m) in wanted)]
            if modes:
                work.append((entry, case if modes == case.modes else replace(case, modes=modes)))
        return work

    def slot(self, backend):
        return next((b for b in self.backends if b.name == backend), None)

    def unsupported_modes(self, backend):
        """{mode: why} for each mode the plan's cases have that `backend` cannot run: reported once, not per case."""
        slot = self.slot(backend)
        reasons = dict(getattr(slot.launch, "unsupported_modes", None) or {}) if slot else {}
        planned = {m for _, case in self.work for m in case.modes}
        return {
            m: reasons.get(m, f"this backend cannot run {m} mode")
            for m in MODES
            if m in planned and m not in backend_modes(slot)
        }

    @property
    def whole_spec(self):
        """Every op that can be checked is planned."""
        return set(self.ops) >= checkable_ops(self.spec)


def backend_modes(slot):
    """The modes a plan's backend slot can run (every mode, unless its launch says otherwise)."""
    launch = getattr(slot, "launch", None)
    return tuple(getattr(launch, "modes", None) or MODES)


def unfiltered(case_patterns, modes, examples_only, keras_config):
    """Every case of the planned ops in every mode under its own settings (no --case, --mode, --examples or
    --keras-config); reports/merge asks it of a report's recorded plan."""
    return not case_patterns and not modes and not examples_only and not keras_config


def checkable_ops(spec):
    """The ops a default check runs: those with cases or examples (and not marked not_checkable)."""
    return {
        name
        for name, entry in spec.ops.items()
        if not entry.get("not_checkable") and (entry.get("cases") or entry.get("examples"))
    }


def select_ops(spec, ops=(), examples=False):
    """The named ops (each must exist), or every op that has something to run."""
    for op in ops:
        spec.op(op)  # an unknown op is a usage error naming the closest ones
    if ops:
        return list(dict.fromkeys(ops))
    return sorted(
        name for name, entry in spec.ops.items() if entry.get("examples") or (entry.get("cases") and not examples)
    )


def select_work(spec, ops, case_patterns=(), modes=(), seed=0, grid="pairwise", keras_config=None):
    """(entry, case) pairs of `ops` whose case id matches a pattern (all when none), in the chosen modes."""
    from .specs.domains import DomainError

    work = []
    for op in ops:
        entry = spec.op(op)
        try:
            op_cases = cases_mod.cases_for(spec, op, seed, grid=grid, keras_config=keras_config)
        except DomainError as exc:
            raise KbtoolError(f"{op}: grid: {exc}")
        for case in op_cases:
            if case_patterns and not any(fnmatch.fnmatchcase(case.id, p) for p in case_patterns):
                continue
            if modes:
                case.modes = [m for m in case.modes if m in modes]
                if not case.modes:
                    continue
            work.append((entry, case))
    return work


def resolve_backends(names, launcher, builtin):
    """Named backends must be runnable (else a usage error); by default every built-in one, and those not
    installed are listed with the reason instead of running."""
    from .runners.base import Unavailable, kbtool_home

    kbtool_home()  # a home that is a file is a configuration error now, not a broken backend later
    slots = []
    for name in dict.fromkeys(names or builtin):
        try:
            slots.append(BackendSlot(name, launch=launcher(name)))
        except Unavailable as exc:
            if names:
                raise KbtoolError(f"backend {name}: {exc}")
            slots.append(BackendSlot(name, unavailable=str(exc)))
    return slots


def make_plan(
    spec,
    ops=(),
    backends=(),
    case_patterns=(),
    modes=(),
    examples=False,
    seed=0,
    launcher=None,
    builtin=None,
    grid="pairwise",
    keras_config=None,
    shard=None,
    last_failed=None,
    timings=None,
):
    """Decide what a check runs. `launcher(name)` gives a Launch or raises Unavailable.

    `shard` (K, N) keeps part K of N of the work (kbtool/shard.py, balanced by `timings`, default
    specs/timings.json); `last_failed` ({backend: keys}, failures_of(the last report)) keeps what failed, within
    the other selections; when nothing of it is selected, the plan is the normal one and `notes` says so."""
    if last_failed:
        restricted = _last_failed_plan(
            spec,
            ops,
            backends,
            case_patterns,
            modes,
            examples,
            seed,
            launcher,
            builtin,
            grid,
            keras_config,
            shard,
            last_failed,
            timings,
        )
        if restricted is not None:
            return restricted
        plan = make_plan(
            spec,
            ops,
            backends,
            case_patterns,
            modes,
            examples,
            seed,
            launcher,
            builtin,
            grid,
            keras_config,
            shard,
            None,
            timings,
        )
        plan.notes.append("the last run's failures are outside this selection; running everything selected")
        return plan
    from .specs.domains import GRID_MODES

    if grid not in GRID_MODES:
        raise KbtoolError("unknown grid {!r}; grids are {}".format(grid, ", ".join(GRID_MODES)))
    if launcher is None or builtin is None:
        from .runners import registry

        launcher, builtin = launcher or registry.launch_for, builtin or registry.BUILTIN
    bad_modes = [m for m in modes if m not in MODES]
    if bad_modes:
        raise KbtoolError("unknown mode {}; modes are {}".format(", ".join(bad_modes), ", ".join(MODES)))
    op_names = select_ops(spec, ops, examples)
    patterns = tuple(case_patterns) or ((EXAMPLES,) if examples else ())
    work = select_work(spec, op_names, patterns, modes, seed, grid, keras_config)
    if examples:
        work = [(entry, case) for entry, case in work if case.id.startswith("example:")]
    if not work:
        raise KbtoolError(
            "nothing to check: no case of {} matches{}{}{}".format(
                _names(op_names),
                " --case " + " ".join(case_patterns) if case_patterns else "",
                " --mode " + " ".join(modes) if modes else "",
                " --examples (no documented example)" if examples else "",
            )
        )
    slots = resolve_backends(list(backends), launcher, builtin)
    if not any(s.launch for s in slots):
        raise KbtoolError(
            "nothing to check: no backend can run here ({})".format(
                "; ".join(f"{s.name}: {s.unavailable}" for s in slots)
            )
        )
    if all(not set(backend_modes(s)) & {m for _, case in work for m in case.modes} for s in slots if s.launch):
        raise KbtoolError(
            "nothing to check: {} cannot run {} mode ({})".format(
                ", ".join(s.name for s in slots if s.launch),
                "/".join(modes or MODES),
                "; ".join(
                    f"{s.name}: {r}"
                    for s in slots
                    if s.launch
                    for r in getattr(s.launch, "unsupported_modes", {}).values()
                ),
            )
        )
    filters = (
        ["--case " + p for p in case_patterns] + ["--mode " + m for m in modes] + (["--examples"] if examples else [])
    )
    plan = Plan(
        spec=spec,
        ops=op_names,
        work=work,
        backends=slots,
        seed=seed,
        case_patterns=tuple(case_patterns),
        modes=tuple(modes),
        examples_only=examples,
        filters=filters,
        grid=grid,
        keras_config=dict(keras_config) if keras_config else None,
    )
    return _sharded(plan, shard, timings)


def failures_of(report):
    """What --last-failed reruns from a report: {backend: {(op, case id, mode)}} of the results that did not pass
    and are not explained (a backend's variant result, e.g. '.kernel_flipped', as its case), and for a backend
    that could not start, {(op, None, None)} for each op the report planned (None: every op)."""
    from .known import variant_suffixes
    from .results import BackendStatus

    selection = {}
    for record in report["results"]:
        if record["status"] == "pass" or record.get("known"):
            continue
        case = record["case"]
        for suffix in variant_suffixes(record["op"]):
            if case.endswith(suffix):
                case = case[: -len(suffix)]
                break
        selection.setdefault(record["backend"], set()).add((record["op"], case, record["mode"]))
    planned = (report.get("plan") or {}).get("ops") or sorted({r["op"] for r in report["results"]})
    for info in report["backends"]:
        if info["status"] == BackendStatus.BROKEN.value:
            selection[info["name"]] = {(op, None, None) for op in planned} or None
    order = [info["name"] for info in report["backends"]]  # the report's backend order, not the failures'
    return dict(sorted(selection.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def _last_failed_plan(
    spec,
    ops,
    backends,
    case_patterns,
    modes,
    examples,
    seed,
    launcher,
    builtin,
    grid,
    keras_config,
    shard,
    last_failed,
    timings,
):
    """The plan of --last-failed, or None when none of the failures is within the selection."""
    selection = {b: keys for b, keys in last_failed.items() if not backends or b in backends}
    if any(keys is None for keys in selection.values()):
        failing_ops = None  # a backend that could not start reruns everything selected
    else:
        failing_ops = {op for keys in selection.values() for op, _, _ in keys if op in spec.ops}
    for op in ops:
        spec.op(op)  # a misspelt --op is an error, not a selection without failures
    narrowed = [op for op in ops if failing_ops is None or op in failing_ops] if ops else sorted(failing_ops or ())
    if not selection or (failing_ops is not None and not narrowed):
        return None
    patterns = tuple(case_patterns) or ((EXAMPLES,) if examples else ())
    if not select_work(spec, select_ops(spec, narrowed, examples), patterns, modes, seed, grid, keras_config):
        return None  # no case of the failing ops is selected (--case, --mode)
    plan = make_plan(
        spec, narrowed, list(selection), case_patterns, modes, examples, seed, launcher, builtin, grid, keras_config
    )
    only = {}
    for name, keys in selection.items():
        if keys is None:
            continue
        chosen = set()
        for _, case in plan.work:
            every = (case.op, None, None) in keys
            chosen.update((case.op, case.id, m) for m in case.modes if every or (case.op, case.id, m) in keys)
        only[name] = chosen
    plan.only = only
    runs = {slot.name for slot in plan.backends if slot.name not in only or only[slot.name]}
    plan.backends = [slot for slot in plan.backends if slot.name in runs]
    wanted = {(op, case) for keys in only.values() for op, case, _ in keys}
    everything = any(name not in only for name in runs)
    plan.work = [(entry, case) for entry, case in plan.work if everything or (case.op, case.id) in wanted]
    if not plan.work or not any(slot.launch for slot in plan.backends):
        return None
    plan.last_failed = True
    plan.filters.append("--last-failed")
    return _sharded(plan, shard, timings)


def _sharded(plan, shard, timings):
    """The plan with only part K of N of its work (shard = (K, N); the plan itself when None)."""
    if shard:
        from . import shard as shard_mod

        plan.work, plan.shard_share = shard_mod.select(plan.work, shard[0], shard[1], timings)
        plan.shard = tuple(shard)
        plan.filters.append("--shard {}/{}".format(*shard))
    return plan


def _names(ops):
    return ", ".join(ops) if len(ops) <= 5 else f"{len(ops)} ops"
