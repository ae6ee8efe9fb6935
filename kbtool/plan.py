"""The plan of a check: which ops, cases, modes and backends run, and what an unavailable backend means.

Everything a check decides before it runs anything is decided here, so the CLI only parses flags and the run
stage only executes. A plan that would check nothing is refused (a run that checked nothing is never green).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from kbtool.errors import KbtoolError
from kbtool.specs import cases as cases_mod
from kbtool.vocabulary import (
    CASE_DEFAULTS,
    DEFAULT_DEVICE,
    DEFAULT_PRECISION,
    DEVICES,
    MODES,
    PRECISIONS,
    choice_problem,
)

if TYPE_CHECKING:
    from kbtool.keras_settings import CheckSettings
    from kbtool.runners.base import Launch
    from kbtool.shard import Share, Timings
    from kbtool.specs.cases import Case
    from kbtool.specs.loader import Spec

EXAMPLES = "example:*"  # the case ids of documented examples

Entry = Dict[str, Any]  # an op's entry in the spec
Work = List[Tuple[Entry, "Case"]]  # (spec entry, case) pairs, modes already filtered
ResultKey = Tuple[str, str, str]  # (op, case id, mode)
# what --last-failed reruns on one backend: (op, case id, mode) keys, (op, None, None) for every case of an op
FailedKeys = Set[Tuple[str, Optional[str], Optional[str]]]
Failures = Dict[str, Optional[FailedKeys]]  # backend -> its failed keys (None: everything selected)
Launcher = Callable[[str], "Launch"]  # a backend's name -> its Launch, or Unavailable


@dataclass
class PlannedBackend:
    """One backend of the plan: a launch line to run it, or why it cannot run here."""

    name: str
    launch: Optional[Launch] = None
    unavailable: Optional[str] = None  # why there is no launch (not installed, no interpreter, not on --device)
    status: str = "not installed"  # the report's backend status when there is no launch (BackendStatus)


@dataclass
class Plan:
    spec: Spec
    ops: List[str]
    work: Work  # (spec entry, case), modes already filtered
    backends: List[PlannedBackend]
    seed: int = 0
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples_only: bool = False
    filters: List[str] = field(default_factory=list)  # what narrowed the run, in words
    grid: str = "pairwise"  # how the grids of the spec's parameter domains are expanded (specs/domains.py)
    keras_config: Optional[Dict[str, Any]] = None  # --keras-config: settings every case runs under instead of its own
    active_backend: Optional[str] = None  # the user's configured Keras backend (keras_settings.apply)
    settings: Optional[CheckSettings] = None  # every setting and where it came from (keras_settings.apply)
    shard: Optional[Tuple[int, int]] = None  # --shard K/N: this plan's work is part K of N (kbtool/shard.py)
    last_failed: bool = False  # --last-failed: the work is what failed in the last check
    # per backend, the (op, case id, mode) it runs (--last-failed); a backend not named runs all the work
    only: Optional[Dict[str, Set[ResultKey]]] = None
    shard_share: Optional[Share] = None  # how much of the work this shard runs
    notes: List[str] = field(default_factory=list)  # what the user should know about how the plan was chosen
    device: str = DEFAULT_DEVICE  # --device: where backends with devices compute (runners.base.on_device)
    precision: str = DEFAULT_PRECISION  # --precision: their engines' float32 setting (KBTOOL_PRECISION)
    named_backends: Tuple[str, ...] = ()  # --backend (or --active): the backends the user named; () every built-in

    @property
    def counts_comparable(self) -> bool:
        """A default run of the whole spec: known-difference counts can be compared with the recorded ones."""
        return self.all_cases and self.whole_spec and self.grid == "pairwise" and not self.keras_config

    @property
    def as_recorded(self) -> bool:
        """Whether the cases run as `kbtool known record` records them: the default grid and the documented keras.json
        settings (no --keras-config, no other values in keras.json). Elsewhere a recorded known difference's
        fingerprints do not apply, and its entry explains by status and regex."""
        values = self.settings.values if self.settings is not None else {}
        return (
            self.grid == "pairwise"
            and not self.keras_config
            and all(values.get(key, default) == default for key, default in CASE_DEFAULTS.items())
        )

    @property
    def runnable(self) -> List[PlannedBackend]:
        return [b for b in self.backends if b.launch is not None]

    @property
    def all_cases(self) -> bool:
        """Every case of the planned ops in every mode, as a default run has them: no --case, --mode, --examples,
        --keras-config, --shard or --last-failed."""
        # under --keras-config every result differs from a default run's: no entry can be judged stale by it;
        # a shard or a --last-failed run holds part of the cases (a merge of every shard judges them: reports/merge)
        return (
            unfiltered(self.case_patterns, self.modes, self.examples_only, self.keras_config)
            and not self.shard
            and not self.last_failed
        )

    def work_for(self, backend: str) -> Work:
        """The (entry, case) work `backend` runs: all of it, or under `only` its cases in its modes, in the modes the
        backend can run (Launch.modes: keras3 has no symbolic mode)."""
        wanted = (self.only or {}).get(backend)
        allowed = set(backend_modes(self.slot(backend)))
        if wanted is None and allowed >= set(MODES):
            return self.work
        work: Work = []
        for entry, case in self.work:
            modes = [m for m in case.modes if m in allowed and (wanted is None or (case.op, case.id, m) in wanted)]
            if modes:
                work.append((entry, case if modes == case.modes else replace(case, modes=modes)))
        return work

    def slot(self, backend: str) -> Optional[PlannedBackend]:
        return next((b for b in self.backends if b.name == backend), None)

    def unsupported_modes(self, backend: str) -> Dict[str, str]:
        """{mode: why} for each mode the plan's cases have that `backend` cannot run: reported once, not per case."""
        slot = self.slot(backend)
        reasons = dict(slot.launch.unsupported_modes) if slot and slot.launch else {}
        planned = {m for _, case in self.work for m in case.modes}
        return {
            m: reasons.get(m, f"this backend cannot run {m} mode")
            for m in MODES
            if m in planned and m not in backend_modes(slot)
        }

    @property
    def whole_spec(self) -> bool:
        """Every op that can be checked is planned."""
        return set(self.ops) >= checkable_ops(self.spec)


@dataclass(frozen=True)
class PlanRequest:
    """What the user asked a check to run (the flags of `kbtool check`, the --kbtool-* options): make_plan's input.

    `launcher(name)` gives a Launch or raises Unavailable, `builtin` the backends run when none is named (both:
    the registry's when None). `shard` (K, N) keeps part K of N of the work (kbtool/shard.py, balanced by
    `timings`, default specs/timings.json); `last_failed` (failures_of(the last report)) keeps what failed."""

    ops: Tuple[str, ...] = ()
    backends: Tuple[str, ...] = ()
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples: bool = False
    seed: int = 0
    launcher: Optional[Launcher] = None
    builtin: Optional[Tuple[str, ...]] = None
    grid: str = "pairwise"
    keras_config: Optional[Mapping[str, Any]] = None
    shard: Optional[Tuple[int, int]] = None
    last_failed: Optional[Failures] = None
    timings: Optional[Timings] = None
    device: str = DEFAULT_DEVICE
    precision: str = DEFAULT_PRECISION
    # a sweep's (--versions) releases that could not be installed: {name: why}; each is a backend that did not run
    # (broken: a check that asked for it is not green), never a usage error
    not_run: Optional[Mapping[str, str]] = None

    @property
    def patterns(self) -> Tuple[str, ...]:
        """The case-id patterns the work is selected by: --case's, else the examples' under --examples."""
        return self.case_patterns or ((EXAMPLES,) if self.examples else ())


def backend_modes(slot: Optional[PlannedBackend]) -> Tuple[str, ...]:
    """The modes a plan's backend slot can run (every mode, unless its launch says otherwise)."""
    return tuple(slot.launch.modes or MODES) if slot and slot.launch else MODES


def unfiltered(
    case_patterns: Sequence[str], modes: Sequence[str], examples_only: bool, keras_config: Optional[Mapping[str, Any]]
) -> bool:
    """Every case of the planned ops in every mode under its own settings (no --case, --mode, --examples or
    --keras-config); reports/merge asks it of a report's recorded plan."""
    return not case_patterns and not modes and not examples_only and not keras_config


def checkable_ops(spec: Spec) -> Set[str]:
    """The ops a default check runs: those with cases or examples (and not marked not_checkable)."""
    return {
        name
        for name, entry in spec.ops.items()
        if not entry.get("not_checkable") and (entry.get("cases") or entry.get("examples"))
    }


def select_ops(spec: Spec, ops: Sequence[str] = (), examples: bool = False) -> List[str]:
    """The named ops (each must exist), or every op that has something to run."""
    for op in ops:
        spec.op(op)  # an unknown op is a usage error naming the closest ones
    if ops:
        return list(dict.fromkeys(ops))
    return sorted(
        name for name, entry in spec.ops.items() if entry.get("examples") or (entry.get("cases") and not examples)
    )


def select_work(
    spec: Spec,
    ops: Sequence[str],
    case_patterns: Sequence[str] = (),
    modes: Sequence[str] = (),
    seed: int = 0,
    grid: str = "pairwise",
    keras_config: Optional[Mapping[str, Any]] = None,
) -> Work:
    """(entry, case) pairs of `ops` whose case id matches a pattern (all when none), in the chosen modes."""
    from kbtool.specs.domains import DomainError

    work: Work = []
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


def check_device(device: str, precision: str = DEFAULT_PRECISION) -> None:
    """A KbtoolError (one line) for a --device or --precision value kbtool does not know."""
    for problem in (choice_problem("--device", device, DEVICES), choice_problem("--precision", precision, PRECISIONS)):
        if problem:
            raise KbtoolError(problem)


def resolve_backends(
    names: Sequence[str],
    launcher: Launcher,
    builtin: Sequence[str],
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    not_run: Optional[Mapping[str, str]] = None,
) -> List[PlannedBackend]:
    """Named backends must be runnable (else a usage error); by default every built-in one, and those not
    installed are listed with the reason instead of running. A backend that cannot run on `device` is listed with
    the reason (named or not): it is no usage error that some of the backends asked have no GPU. A name in
    `not_run` (a release a sweep could not install) is listed as broken with its reason, and not launched."""
    from kbtool.results import BackendStatus
    from kbtool.runners.base import DeviceUnsupported, Unavailable, kbtool_home, on_device

    check_device(device, precision)
    kbtool_home()  # a home that is a file is a configuration error now, not a broken backend later
    slots = []
    for name in dict.fromkeys(names or builtin):
        if name in (not_run or {}):
            slots.append(PlannedBackend(name, unavailable=(not_run or {})[name], status=BackendStatus.BROKEN.value))
            continue
        try:
            launch = launcher(name)
        except Unavailable as exc:
            if names:
                raise KbtoolError(f"backend {name}: {exc}")
            slots.append(PlannedBackend(name, unavailable=str(exc)))
            continue
        try:
            slots.append(PlannedBackend(name, launch=on_device(launch, device, precision)))
        except DeviceUnsupported as exc:
            slots.append(PlannedBackend(name, unavailable=str(exc), status=BackendStatus.DEVICE_UNSUPPORTED.value))
    return slots


def make_plan(
    spec: Spec,
    *,
    ops: Sequence[str] = (),
    backends: Sequence[str] = (),
    case_patterns: Sequence[str] = (),
    modes: Sequence[str] = (),
    examples: bool = False,
    seed: int = 0,
    launcher: Optional[Launcher] = None,
    builtin: Optional[Sequence[str]] = None,
    grid: str = "pairwise",
    keras_config: Optional[Mapping[str, Any]] = None,
    shard: Optional[Tuple[int, int]] = None,
    last_failed: Optional[Failures] = None,
    timings: Optional[Timings] = None,
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    not_run: Optional[Mapping[str, str]] = None,
) -> Plan:
    """Decide what a check runs: plan_for(spec, PlanRequest(...)) with these keywords (see PlanRequest)."""
    request = PlanRequest(
        ops=tuple(ops),
        backends=tuple(backends),
        case_patterns=tuple(case_patterns),
        modes=tuple(modes),
        examples=examples,
        seed=seed,
        launcher=launcher,
        builtin=None if builtin is None else tuple(builtin),
        grid=grid,
        keras_config=keras_config,
        shard=None if shard is None else (shard[0], shard[1]),
        last_failed=last_failed,
        timings=timings,
        device=device,
        precision=precision,
        not_run=dict(not_run) if not_run else None,
    )
    return plan_for(spec, request)


def plan_for(spec: Spec, request: PlanRequest) -> Plan:
    """Decide what a check runs. Under `last_failed`, what failed within the other selections; when nothing of it
    is selected, the plan is the normal one and `notes` says so."""
    if request.last_failed:
        restricted = _last_failed_plan(spec, request, request.last_failed)
        if restricted is not None:
            return restricted
        plan = plan_for(spec, replace(request, last_failed=None))
        plan.notes.append("the last run's failures are outside this selection; running everything selected")
        return plan
    from kbtool.specs.domains import GRID_MODES

    grid, modes, examples, case_patterns = request.grid, request.modes, request.examples, request.case_patterns
    if grid not in GRID_MODES:
        raise KbtoolError("unknown grid {!r}; grids are {}".format(grid, ", ".join(GRID_MODES)))
    launcher, builtin = request.launcher, request.builtin
    if launcher is None or builtin is None:
        from kbtool.runners import registry

        launcher, builtin = launcher or registry.launch_for, builtin or tuple(registry.BUILTIN)
    bad_modes = [m for m in modes if m not in MODES]
    if bad_modes:
        raise KbtoolError("unknown mode {}; modes are {}".format(", ".join(bad_modes), ", ".join(MODES)))
    op_names = select_ops(spec, request.ops, examples)
    work = select_work(spec, op_names, request.patterns, modes, request.seed, grid, request.keras_config)
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
    slots = resolve_backends(request.backends, launcher, builtin, request.device, request.precision, request.not_run)
    if not any(s.launch for s in slots):
        raise KbtoolError(
            "nothing to check: no backend can run here{} ({})".format(
                "" if request.device == DEFAULT_DEVICE else f" on the {request.device}",
                "; ".join(f"{s.name}: {s.unavailable}" for s in slots),
            )
        )
    if all(not set(backend_modes(s)) & {m for _, case in work for m in case.modes} for s in slots if s.launch):
        raise KbtoolError(
            "nothing to check: {} cannot run {} mode ({})".format(
                ", ".join(s.name for s in slots if s.launch),
                "/".join(modes or MODES),
                "; ".join(f"{s.name}: {r}" for s in slots if s.launch for r in s.launch.unsupported_modes.values()),
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
        seed=request.seed,
        case_patterns=case_patterns,
        modes=modes,
        examples_only=examples,
        filters=filters,
        grid=grid,
        keras_config=dict(request.keras_config) if request.keras_config else None,
        device=request.device,
        precision=request.precision,
        named_backends=tuple(request.backends),
    )
    if not request.backends and [s.name for s in slots if s.launch] == ["numpy"] and len(slots) > 1:
        # the numpy backend is kbtool's own reference: alone, it checks no Keras engine
        plan.notes.append(
            "only numpy (kbtool's own reference) can run here: no Keras backend is installed "
            "(`kbtool backends` says why; `kbtool env install --all` installs them)"
        )
    if request.device != DEFAULT_DEVICE:
        plan.filters.append(f"--device {request.device}")
    if request.precision != DEFAULT_PRECISION:
        plan.filters.append(f"--precision {request.precision}")
    return _sharded(plan, request.shard, request.timings)


def failures_of(report: Mapping[str, Any]) -> Failures:
    """What --last-failed reruns from a report: {backend: {(op, case id, mode)}} of the results that did not pass
    and are not explained (a backend's variant result, e.g. '.kernel_flipped', as its case), and for a backend
    that could not start, {(op, None, None)} for each op the report planned (None: every op)."""
    from kbtool.known import variant_suffixes
    from kbtool.results import BackendStatus

    failed: Dict[str, FailedKeys] = {}
    for record in report["results"]:
        if record["status"] == "pass" or record.get("known"):
            continue
        case = record["case"]
        for suffix in variant_suffixes(record["op"]):
            if case.endswith(suffix):
                case = case[: -len(suffix)]
                break
        failed.setdefault(record["backend"], set()).add((record["op"], case, record["mode"]))
    selection: Failures = dict(failed)
    planned = (report.get("plan") or {}).get("ops") or sorted({r["op"] for r in report["results"]})
    for info in report["backends"]:
        if info["status"] == BackendStatus.BROKEN.value:
            every: FailedKeys = {(op, None, None) for op in planned}
            selection[info["name"]] = every or None
    order = [info["name"] for info in report["backends"]]  # the report's backend order, not the failures'
    return dict(sorted(selection.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def _last_failed_plan(spec: Spec, request: PlanRequest, last_failed: Failures) -> Optional[Plan]:
    """The plan of --last-failed, or None when none of the failures is within the selection."""
    selection = {b: keys for b, keys in last_failed.items() if not request.backends or b in request.backends}
    failing_ops: Optional[Set[str]] = None  # a backend that could not start reruns everything selected
    if not any(keys is None for keys in selection.values()):
        failing_ops = {op for keys in selection.values() if keys for op, _, _ in keys if op in spec.ops}
    for op in request.ops:
        spec.op(op)  # a misspelt --op is an error, not a selection without failures
    if request.ops:
        narrowed = [op for op in request.ops if failing_ops is None or op in failing_ops]
    else:
        narrowed = sorted(failing_ops or ())
    if not selection or (failing_ops is not None and not narrowed):
        return None
    chosen_ops = select_ops(spec, narrowed, request.examples)
    if not select_work(
        spec, chosen_ops, request.patterns, request.modes, request.seed, request.grid, request.keras_config
    ):
        return None  # no case of the failing ops is selected (--case, --mode)
    plan = plan_for(
        spec, replace(request, ops=tuple(narrowed), backends=tuple(selection), shard=None, last_failed=None)
    )
    only: Dict[str, Set[ResultKey]] = {}
    for name, keys in selection.items():
        if keys is None:
            continue
        chosen: Set[ResultKey] = set()
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
    return _sharded(plan, request.shard, request.timings)


def _sharded(plan: Plan, shard: Optional[Tuple[int, int]], timings: Optional[Timings]) -> Plan:
    """The plan with only part K of N of its work (shard = (K, N); the plan itself when None)."""
    if shard:
        from kbtool import shard as shard_mod

        plan.work, plan.shard_share = shard_mod.select(plan.work, shard[0], shard[1], timings)
        plan.shard = (shard[0], shard[1])
        plan.filters.append("--shard {}/{}".format(*shard))
    return plan


def _names(ops: Sequence[str]) -> str:
    return ", ".join(ops) if len(ops) <= 5 else f"{len(ops)} ops"
