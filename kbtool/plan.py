"""The plan of a check: which ops, cases, modes and backends run, and what an unavailable backend means.

Everything a check decides before it runs anything is decided here, so the CLI only parses flags and the run
stage only executes. A plan that would check nothing is refused (a run that checked nothing is never green).
"""
import fnmatch
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .errors import KbtoolError
from .specs import cases as cases_mod

MODES = ("eager", "symbolic")
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

    @property
    def counts_comparable(self):
        """A default run of the whole spec: known-difference counts can be compared with the recorded ones."""
        return self.all_cases and self.whole_spec and self.grid == "pairwise" and not self.keras_config

    @property
    def runnable(self):
        return [b for b in self.backends if b.launch is not None]

    @property
    def all_cases(self):
        """Every case of the planned ops in every mode, as a default run has them: no --case, --mode, --examples
        or --keras-config."""
        # under --keras-config every result differs from a default run's: no entry can be judged stale by it
        return not self.case_patterns and not self.modes and not self.examples_only and not self.keras_config

    @property
    def whole_spec(self):
        """Every op that can be checked is planned."""
        return set(self.ops) >= checkable_ops(self.spec)


def checkable_ops(spec):
    """The ops a default check runs: those with cases or examples (and not marked not_checkable)."""
    return {name for name, entry in spec.ops.items()
            if not entry.get("not_checkable") and (entry.get("cases") or entry.get("examples"))}


def select_ops(spec, ops=(), examples=False):
    """The named ops (each must exist), or every op that has something to run."""
    for op in ops:
        spec.op(op)  # an unknown op is a usage error naming the closest ones
    if ops:
        return list(dict.fromkeys(ops))
    return sorted(name for name, entry in spec.ops.items()
                  if entry.get("examples") or (entry.get("cases") and not examples))


def select_work(spec, ops, case_patterns=(), modes=(), seed=0, grid="pairwise", keras_config=None):
    """(entry, case) pairs of `ops` whose case id matches a pattern (all when none), in the chosen modes."""
    from .specs.domains import DomainError

    work = []
    for op in ops:
        entry = spec.op(op)
        try:
            op_cases = cases_mod.cases_for(spec, op, seed, grid=grid, keras_config=keras_config)
        except DomainError as exc:
            raise KbtoolError("{}: grid: {}".format(op, exc))
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
                raise KbtoolError("backend {}: {}".format(name, exc))
            slots.append(BackendSlot(name, unavailable=str(exc)))
    return slots


def make_plan(spec, ops=(), backends=(), case_patterns=(), modes=(), examples=False, seed=0,
              launcher=None, builtin=None, grid="pairwise", keras_config=None):
    """Decide what a check runs. `launcher(name)` gives a Launch or raises Unavailable."""
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
        raise KbtoolError("nothing to check: no case of {} matches{}{}{}".format(
            _names(op_names), " --case " + " ".join(case_patterns) if case_patterns else "",
            " --mode " + " ".join(modes) if modes else "", " --examples (no documented example)" if examples else ""))
    slots = resolve_backends(list(backends), launcher, builtin)
    if not any(s.launch for s in slots):
        raise KbtoolError("nothing to check: no backend can run here ({})".format(
            "; ".join("{}: {}".format(s.name, s.unavailable) for s in slots)))
    filters = (["--case " + p for p in case_patterns] + ["--mode " + m for m in modes]
               + (["--examples"] if examples else []))
    return Plan(spec=spec, ops=op_names, work=work, backends=slots, seed=seed, case_patterns=tuple(case_patterns),
                modes=tuple(modes), examples_only=examples, filters=filters, grid=grid,
                keras_config=dict(keras_config) if keras_config else None)


def _names(ops):
    return ", ".join(ops) if len(ops) <= 5 else "{} ops".format(len(ops))
