"""The plan of a check: which ops, cases, modes and backends run, and what an unavailable backend means.

Everything a check decides before it runs anything is decided here, so the CLI only parses flags and the run
stage only executes. A plan that would check nothing is refused (a run that checked nothing is never green).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from kbtool.errors import KbtoolError
from kbtool.settings import DEFAULTS, RunSettings
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
REFERENCE_BACKEND = "numpy"  # kbtool's own reference run as a backend: alone, it checks only itself


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
    run: RunSettings = field(default_factory=RunSettings)  # the run's settings (seed, device, --keras-config, ...)
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples_only: bool = False
    filters: List[str] = field(default_factory=list)  # what narrowed the run, in words
    grid: str = "pairwise"  # how the grids of the spec's parameter domains are expanded (specs/domains.py)
    active_backend: Optional[str] = None  # the user's configured Keras backend (keras_settings.apply)
    settings: Optional[CheckSettings] = None  # every setting and where it came from (keras_settings.apply)
    shard: Optional[Tuple[int, int]] = None  # --shard K/N: this plan's work is part K of N (kbtool/shard.py)
    last_failed: bool = False  # --last-failed: the work is what failed in the last check
    # per backend, the (op, case id, mode) it runs (--last-failed); a backend not named runs all the work
    only: Optional[Dict[str, Set[ResultKey]]] = None
    shard_share: Optional[Share] = None  # how much of the work this shard runs
    notes: List[str] = field(default_factory=list)  # what the user should know about how the plan was chosen
    named_backends: Tuple[str, ...] = ()  # --backend (or --active): the backends the user named; () every built-in

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def keras_config(self) -> Optional[Dict[str, Any]]:
        """--keras-config: settings every case runs under instead of its own (None: each case its own)."""
        return dict(self.run.keras_config) if self.run.keras_config else None

    @property
    def device(self) -> str:
        """--device: where backends with devices compute (runners.base.on_device)."""
        return self.run.device

    @property
    def precision(self) -> str:
        """--precision: their engines' float32 setting (KBTOOL_PRECISION)."""
        return self.run.precision

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
    def self_test(self) -> bool:
        """Only kbtool's own reference runs (the numpy backend): it is checked against itself, which tests kbtool,
        not a Keras backend (`kbtool check` refuses it unless --backend numpy asked for it)."""
        return [b.name for b in self.runnable] == [REFERENCE_BACKEND]

    def refuse_checking_nothing(self, named: Sequence[str], flag: str = "--backend") -> None:
        """A run where only numpy, kbtool's own reference, can run checks the reference against itself: a KbtoolError
        (what to install) unless `flag` numpy alone asked for that self-test, or a backend that could not start (a
        release that did not install) fails the run with a report that says why. `kbtool check` and `pytest
        --kbtool` both refuse it (#33: nothing checked is not green)."""
        from kbtool.results import BackendStatus
        from kbtool.runners.names import canonical_names

        if (
            not self.self_test
            or list(canonical_names(named)) == [REFERENCE_BACKEND]
            or any(b.status == BackendStatus.BROKEN.value for b in self.backends if b.launch is None)
        ):
            return
        others = [b.name for b in self.backends if b.launch is None]
        raise KbtoolError(
            "nothing to check: {} (numpy, kbtool's own reference, alone would check itself); install one, e.g. "
            "`kbtool env install tensorflow` (`kbtool backends` lists them; {} numpy runs a self-test)".format(
                "no Keras backend is installed" if not named else "{} cannot run here".format(", ".join(others)),
                flag,
            )
        )

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
        allowed = set(backend_modes(self.planned_backend(backend)))
        if wanted is None and allowed >= set(MODES):
            return self.work
        work: Work = []
        for entry, case in self.work:
            modes = [m for m in case.modes if m in allowed and (wanted is None or (case.op, case.id, m) in wanted)]
            if modes:
                work.append((entry, case if modes == case.modes else replace(case, modes=modes)))
        return work

    def planned_backend(self, backend: str) -> Optional[PlannedBackend]:
        return next((b for b in self.backends if b.name == backend), None)

    def unsupported_modes(self, backend: str) -> Dict[str, str]:
        """{mode: why} for each mode the plan's cases have that `backend` cannot run: reported once, not per case."""
        planned_backend = self.planned_backend(backend)
        reasons = dict(planned_backend.launch.unsupported_modes) if planned_backend and planned_backend.launch else {}
        planned = {m for _, case in self.work for m in case.modes}
        return {
            m: reasons.get(m, f"this backend cannot run {m} mode")
            for m in MODES
            if m in planned and m not in backend_modes(planned_backend)
        }

    @property
    def whole_spec(self) -> bool:
        """Every op that can be checked is planned."""
        return set(self.ops) >= checkable_ops(self.spec)


@dataclass(frozen=True)
class Selection:
    """What the user asked a check to run (the selecting flags of `kbtool check`, the --kbtool-* options): which ops,
    backends, cases and modes. `shard` (K, N) keeps part K of N of the work (kbtool/shard.py); `last_failed`
    (failures_of(the last report)) keeps what failed. Sequences given as lists are kept as tuples."""

    ops: Tuple[str, ...] = ()
    backends: Tuple[str, ...] = ()
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples: bool = False
    grid: str = "pairwise"
    shard: Optional[Tuple[int, int]] = None
    last_failed: Optional[Failures] = None

    def __post_init__(self) -> None:
        for name in ("ops", "backends", "case_patterns", "modes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.shard is not None:
            object.__setattr__(self, "shard", (self.shard[0], self.shard[1]))

    @property
    def patterns(self) -> Tuple[str, ...]:
        """The case-id patterns the work is selected by: --case's, else the examples' under --examples."""
        return self.case_patterns or ((EXAMPLES,) if self.examples else ())


@dataclass(frozen=True)
class Sources:
    """Where a plan's backends and case times come from (None: the registry's, specs/timings.json). `launcher(name)`
    gives a Launch or raises Unavailable; `builtin` are the backends run when none is named; `not_run` are a
    sweep's (--versions) releases that could not be installed, {name: why}: each a backend that did not run
    (broken: a check that asked for it is not green), never a usage error."""

    launcher: Optional[Launcher] = None
    builtin: Optional[Tuple[str, ...]] = None
    timings: Optional[Timings] = None
    not_run: Optional[Mapping[str, str]] = None

    def registry(self) -> Tuple[Launcher, Tuple[str, ...]]:
        """(launcher, builtin): the given ones, else the registry's."""
        if self.launcher is not None and self.builtin is not None:
            return self.launcher, tuple(self.builtin)
        from kbtool.runners import registry

        return self.launcher or registry.launch_for, tuple(self.builtin or registry.BUILTIN)


def backend_modes(planned_backend: Optional[PlannedBackend]) -> Tuple[str, ...]:
    """The modes a plan's backend planned_backend can run (every mode, unless its launch says otherwise)."""
    return tuple(planned_backend.launch.modes or MODES) if planned_backend and planned_backend.launch else MODES


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
    jobs: Optional[int] = None,
) -> List[PlannedBackend]:
    """Named backends must be runnable (else a usage error); by default every built-in one, and those not
    installed are listed with the reason instead of running. A backend that cannot run on `device` is listed with
    the reason (named or not): it is no usage error that some of the backends asked have no GPU. A name in
    `not_run` (a release a sweep could not install) is listed as broken with its reason, and not launched. On a
    device other than the CPU, each backend gets up to `jobs` workers (--jobs) and each worker its share of the
    device's memory (runners.base.on_device, share_memory)."""
    from kbtool.results import BackendStatus
    from kbtool.runners.base import DeviceUnsupported, Unavailable, kbtool_home, on_device, share_memory
    from kbtool.runners.names import canonical_names

    check_device(device, precision)
    kbtool_home()  # a home that is a file is a configuration error now, not a broken backend later
    planned_backends = []
    for name in canonical_names(names or builtin):  # two spellings of one release run once, under one name
        if name in (not_run or {}):
            planned_backends.append(
                PlannedBackend(name, unavailable=(not_run or {})[name], status=BackendStatus.BROKEN.value)
            )
            continue
        try:
            launch = launcher(name)
        except Unavailable as exc:
            if names:
                raise KbtoolError(f"backend {name}: {exc}")
            planned_backends.append(PlannedBackend(name, unavailable=str(exc)))
            continue
        try:
            planned_backends.append(PlannedBackend(name, launch=on_device(launch, device, precision, jobs)))
        except DeviceUnsupported as exc:
            planned_backends.append(
                PlannedBackend(name, unavailable=str(exc), status=BackendStatus.DEVICE_UNSUPPORTED.value)
            )
    runnable = [s for s in planned_backends if s.launch is not None]
    for planned_backend, launch in zip(runnable, share_memory([s.launch for s in runnable if s.launch], jobs)):
        planned_backend.launch = launch
    return planned_backends


def make_plan(
    spec: Spec, selection: Selection = Selection(), settings: RunSettings = DEFAULTS, sources: Sources = Sources()
) -> Plan:
    """Decide what a check of `selection` runs under `settings`. Under `last_failed`, what failed within the other
    selections; when nothing of it is selected, the plan is the normal one and `notes` says so."""
    if selection.last_failed:
        restricted = _last_failed_plan(spec, selection, settings, sources)
        if restricted is not None:
            return restricted
        plan = make_plan(spec, replace(selection, last_failed=None), settings, sources)
        plan.notes.append("the last run's failures are outside this selection; running everything selected")
        return plan
    _check_choices(selection)
    op_names = select_ops(spec, selection.ops, selection.examples)
    work = _work_of(spec, op_names, selection, settings)
    planned_backends = _runnable_backends(selection, settings, sources, work)
    plan = Plan(
        spec=spec,
        ops=op_names,
        work=work,
        backends=planned_backends,
        run=settings,
        case_patterns=selection.case_patterns,
        modes=selection.modes,
        examples_only=selection.examples,
        filters=_filters(selection, settings),
        grid=selection.grid,
        named_backends=selection.backends,
    )
    if (
        not selection.backends
        and [s.name for s in planned_backends if s.launch] == ["numpy"]
        and len(planned_backends) > 1
    ):
        # the numpy backend is kbtool's own reference: alone, it checks no Keras engine
        plan.notes.append(
            "only numpy (kbtool's own reference) can run here: no Keras backend is installed "
            "(`kbtool backends` says why; `kbtool env install --all` installs them)"
        )
    return _sharded(plan, selection.shard, sources.timings)


def _check_choices(selection: Selection) -> None:
    """A one-line KbtoolError for a --grid or --mode kbtool does not know."""
    from kbtool.specs.domains import GRID_MODES

    if selection.grid not in GRID_MODES:
        raise KbtoolError("unknown grid {!r}; grids are {}".format(selection.grid, ", ".join(GRID_MODES)))
    bad_modes = [m for m in selection.modes if m not in MODES]
    if bad_modes:
        raise KbtoolError("unknown mode {}; modes are {}".format(", ".join(bad_modes), ", ".join(MODES)))


def _work_of(spec: Spec, op_names: List[str], selection: Selection, settings: RunSettings) -> Work:
    """The selected (entry, case) work of `op_names`; a KbtoolError when it is empty (a run that checks nothing)."""
    work = select_work(
        spec, op_names, selection.patterns, selection.modes, settings.seed, selection.grid, settings.keras_config
    )
    if selection.examples:
        work = [(entry, case) for entry, case in work if case.id.startswith("example:")]
    if not work:
        raise KbtoolError(
            "nothing to check: no case of {} matches{}{}{}".format(
                _names(op_names),
                " --case " + " ".join(selection.case_patterns) if selection.case_patterns else "",
                " --mode " + " ".join(selection.modes) if selection.modes else "",
                " --examples (no documented example)" if selection.examples else "",
            )
        )
    return work


def _runnable_backends(
    selection: Selection, settings: RunSettings, sources: Sources, work: Work
) -> List[PlannedBackend]:
    """The plan's backends; a KbtoolError when none of them can run here, or none can run a mode of the work."""
    launcher, builtin = sources.registry()
    planned_backends = resolve_backends(
        selection.backends, launcher, builtin, settings.device, settings.precision, sources.not_run, settings.jobs
    )
    if not any(s.launch for s in planned_backends):
        raise KbtoolError(
            "nothing to check: no backend can run here{} ({})".format(
                "" if settings.device == DEFAULT_DEVICE else f" on the {settings.device}",
                "; ".join(f"{s.name}: {s.unavailable}" for s in planned_backends),
            )
        )
    if all(
        not set(backend_modes(s)) & {m for _, case in work for m in case.modes} for s in planned_backends if s.launch
    ):
        raise KbtoolError(
            "nothing to check: {} cannot run {} mode ({})".format(
                ", ".join(s.name for s in planned_backends if s.launch),
                "/".join(selection.modes or MODES),
                "; ".join(
                    f"{s.name}: {r}" for s in planned_backends if s.launch for r in s.launch.unsupported_modes.values()
                ),
            )
        )
    return planned_backends


def _filters(selection: Selection, settings: RunSettings) -> List[str]:
    """What narrowed the run, in words (the report's plan says them)."""
    filters = ["--case " + p for p in selection.case_patterns] + ["--mode " + m for m in selection.modes]
    filters += ["--examples"] if selection.examples else []
    if settings.device != DEFAULT_DEVICE:
        filters.append(f"--device {settings.device}")
    if settings.precision != DEFAULT_PRECISION:
        filters.append(f"--precision {settings.precision}")
    return filters


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


def _last_failed_plan(spec: Spec, selection: Selection, settings: RunSettings, sources: Sources) -> Optional[Plan]:
    """The plan of --last-failed, or None when none of the failures is within the selection."""
    last_failed = selection.last_failed or {}
    chosen = {b: keys for b, keys in last_failed.items() if not selection.backends or b in selection.backends}
    narrowed = _failing_ops(spec, selection, chosen)
    if narrowed is None:
        return None
    if not select_work(
        spec,
        select_ops(spec, narrowed, selection.examples),
        selection.patterns,
        selection.modes,
        settings.seed,
        selection.grid,
        settings.keras_config,
    ):
        return None  # no case of the failing ops is selected (--case, --mode)
    narrower = replace(selection, ops=tuple(narrowed), backends=tuple(chosen), shard=None, last_failed=None)
    plan = make_plan(spec, narrower, settings, sources)
    only = _failed_keys(plan, chosen)
    plan.only = only
    runs = {
        planned_backend.name
        for planned_backend in plan.backends
        if planned_backend.name not in only or only[planned_backend.name]
    }
    plan.backends = [planned_backend for planned_backend in plan.backends if planned_backend.name in runs]
    wanted = {(op, case) for keys in only.values() for op, case, _ in keys}
    everything = any(name not in only for name in runs)
    plan.work = [(entry, case) for entry, case in plan.work if everything or (case.op, case.id) in wanted]
    if not plan.work or not any(planned_backend.launch for planned_backend in plan.backends):
        return None
    plan.last_failed = True
    plan.filters.append("--last-failed")
    return _sharded(plan, selection.shard, sources.timings)


def _failing_ops(spec: Spec, selection: Selection, chosen: Failures) -> Optional[List[str]]:
    """The ops --last-failed reruns within the selection (None: none of the failures is within it)."""
    failing_ops: Optional[Set[str]] = None  # a backend that could not start reruns everything selected
    if not any(keys is None for keys in chosen.values()):
        failing_ops = {op for keys in chosen.values() if keys for op, _, _ in keys if op in spec.ops}
    for op in selection.ops:
        spec.op(op)  # a misspelt --op is an error, not a selection without failures
    if selection.ops:
        narrowed = [op for op in selection.ops if failing_ops is None or op in failing_ops]
    else:
        narrowed = sorted(failing_ops or ())
    if not chosen or (failing_ops is not None and not narrowed):
        return None
    return narrowed


def _failed_keys(plan: Plan, chosen: Failures) -> Dict[str, Set[ResultKey]]:
    """Per backend with failed keys, the (op, case id, mode) of the plan's work it reruns."""
    only: Dict[str, Set[ResultKey]] = {}
    for name, keys in chosen.items():
        if keys is None:
            continue
        picked: Set[ResultKey] = set()
        for _, case in plan.work:
            every = (case.op, None, None) in keys
            picked.update((case.op, case.id, m) for m in case.modes if every or (case.op, case.id, m) in keys)
        only[name] = picked
    return only


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
