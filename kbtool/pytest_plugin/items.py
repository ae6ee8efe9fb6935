"""The collection of `pytest --kbtool`: the plan's results as items, with ids people can read and select.

    kbtool::<op>::<case>[<backend>-<mode>]      e.g. kbtool::batch_dot::axes_1[cntk-eager]
    kbtool::<backend>                           one skipped item per default backend that is not installed

`-k "batch_dot and cntk"` selects by any part. A case id keeps the characters pytest reads safely; any other one
(and a ':' that would make '::') is written %XX, so ids stay unique. Each backend worker (a backend, and its share of
the cases where it runs several workers, as `kbtool check` shares them) is one xdist group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, List, Optional, Set, Tuple

import pytest

from kbtool.pytest_plugin import verdict
from kbtool.pytest_plugin.verdict import KbtoolFailure, WorkerUnavailable

if TYPE_CHECKING:
    from kbtool.plan import Entry, Plan
    from kbtool.pytest_plugin.hooks import KbtoolHooks
    from kbtool.runners.base import Launch
    from kbtool.specs.cases import Case

_SAFE = re.compile(r"[A-Za-z0-9_.=,+@()-]")


@dataclass(eq=False)
class Target:
    """One result of the plan: a case (or a backend's variant of it) in one mode on one backend worker."""

    backend: str
    share: int  # which of the backend's workers runs it (Launch.workers caps them; one when it is not set)
    launch: Launch  # of that worker
    entry: Entry  # the op's spec entry
    case: Case  # that runs: the case itself, or a variant of it
    base: Case  # the case whose reference judges it (the case itself for a variant)
    mode: str
    variants: Tuple[Target, ...] = field(default=())  # the variants of the same case and mode (for verified_by)

    @property
    def key(self) -> Tuple[str, str, str, str]:
        """(op, case id, backend, mode): what known differences match, as for a check's result."""
        return (self.case.op, self.case.id, self.backend, self.mode)

    @property
    def group(self) -> str:
        """Its xdist group: the backend worker it runs on (no '@': xdist reads the group after the last '@')."""
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.backend) + ("" if self.share == 0 else f"-{self.share}")


def plan_targets(plan: Plan) -> List[Target]:
    """Every result the plan sets out to produce, in the order of a check's report (op, case, backend, mode)."""
    targets: List[Target] = []
    order = {planned_backend.name: i for i, planned_backend in enumerate(plan.backends)}
    for planned_backend in plan.runnable:
        assert planned_backend.launch is not None  # a runnable backend has its launch
        work = plan.work_for(planned_backend.name)
        workers = max(1, min(len(work), int(planned_backend.launch.workers or 1)))
        for index, (entry, case) in enumerate(work):
            share = index % workers  # fixed shares: each xdist group's worker keeps its warm cache
            launch = planned_backend.launch.for_worker(share)
            variants = list(planned_backend.launch.variants(case) or [])
            for mode in case.modes:
                own = tuple(
                    Target(planned_backend.name, share, launch, entry, variant, case, mode)
                    for variant in variants
                    if mode in variant.modes
                )
                targets.append(Target(planned_backend.name, share, launch, entry, case, case, mode, variants=own))
                targets.extend(own)
    targets.sort(key=lambda t: (t.case.op, t.case.id, order[t.backend], t.mode))
    return targets


def safe(text: object) -> str:
    """`text` with what pytest reads specially (/, [, ], ::, spaces, ...) written %XX: readable, and unique."""
    out: List[str] = []
    for char in str(text):
        if _SAFE.match(char) or (char == ":" and out and not out[-1].endswith(":")):
            out.append(char)
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
    return "".join(out)


def item_name(target: Target) -> str:
    return f"{safe(target.case.id)}[{safe(target.backend)}-{target.mode}]"


class KbtoolRoot(pytest.Collector):
    """`kbtool`: the plan's items, one collector per op (added to the session's collection by hooks.py)."""

    def __init__(self, *, run: KbtoolHooks, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run

    def collect(self) -> List[pytest.Item | pytest.Collector]:
        nodes: List[pytest.Item | pytest.Collector] = [
            UnavailableBackend.from_parent(
                self,
                name=safe(planned_backend.name),
                backend=planned_backend.name,
                reason=planned_backend.unavailable,
                status=planned_backend.status,
            )
            for planned_backend in self.run.plan.backends
            if planned_backend.launch is None
        ]
        by_op: dict[str, List[Target]] = {}
        for target in self.run.targets:
            by_op.setdefault(target.case.op, []).append(target)
        nodes += [OpCollector.from_parent(self, name=safe(op), targets=targets) for op, targets in by_op.items()]
        return nodes


class OpCollector(pytest.Collector):
    def __init__(self, *, targets: List[Target], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.targets = targets

    def collect(self) -> List[pytest.Item | pytest.Collector]:
        names: Set[str] = set()
        run = self.parent.run if isinstance(self.parent, KbtoolRoot) else None
        return [
            KbtoolItem.from_parent(self, name=unique(item_name(target), names), target=target, run=run)
            for target in self.targets
        ]


class KbtoolItem(pytest.Item):
    """One result: run on this process's worker for its backend, judged, known differences applied."""

    def __init__(self, *, target: Target, run: KbtoolHooks, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.run = target, run
        op, case, backend, mode = target.key
        self.user_properties.extend([("backend", backend), ("op", op), ("case", case), ("mode", mode)])
        if run.xdist:
            self.add_marker(pytest.mark.xdist_group(target.group))

    def setup(self) -> None:
        self.run.runner.worker(self.target)  # a worker that cannot start: every item of it errors, saying why

    def runtest(self) -> None:
        self.run.judge(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (KbtoolFailure, WorkerUnavailable)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, None, verdict.headline(self.target)


class UnavailableBackend(pytest.Item):
    """A default backend that is not installed here (or cannot run on --kbtool-device): one skipped item saying why
    (not one per result)."""

    def __init__(self, *, backend: str, reason: Optional[str], status: str = "not installed", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user_properties.extend([("backend", backend), ("status", status)])
        self.add_marker(pytest.mark.skip(reason=f"{backend}: {reason}"))  # reported at the item's id

    def runtest(self) -> None:
        pass  # skipped at setup

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path / "kbtool", 0, ""  # where the skip is reported: `kbtool:1`


def unique(name: str, taken: Set[str]) -> str:
    """`name`, or with ~2, ~3 ... when the op already has an item of that name (a spec with a repeated case id)."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}~{n}"
    taken.add(candidate)
    return candidate
