"""Exploring one op on each backend: Hypothesis draws cases, `check`'s own code judges them, failures shrink.

One backend at a time, so each failure shrinks for its own backend; one worker per backend, started once and
reused across examples (as `kbtool check` does). A drawn case runs exactly like a spec case: expanded with
`specs.cases.expand_case`, its expected outcome from the reference (`reference.oracle.Oracle`), each mode run and
judged by a `session.BackendSession` (the one owner of workers), known differences applied by `known.apply`. A draw the reference refuses (it raises, or
the case does not bind) is rejected, never a failure. A failure a known difference explains is kept as `known`
and the search goes on; the first unexplained one ends the search for that backend and is shrunk to a minimal
example, with a command that replays it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from kbtool import known, paths
from kbtool.errors import KbtoolError
from kbtool.explore import strategies
from kbtool.reference.oracle import Oracle
from kbtool.results import Status
from kbtool.runners import envs
from kbtool.runners import messages as protocol
from kbtool.runners.registry import keras_name_of
from kbtool.runners.session import BackendSession, Cancel, Expected
from kbtool.settings import RunSettings
from kbtool.specs import binding, domains
from kbtool.specs.cases import expand_case, raw_cases

if TYPE_CHECKING:
    from kbtool.explore.render import Progress
    from kbtool.known import KnownEntry
    from kbtool.plan import PlannedBackend
    from kbtool.results import Result
    from kbtool.runners.base import Launch
    from kbtool.specs.loader import Spec

RawCase = Dict[str, Any]  # a raw spec case (literal inputs), as the spec writes one and `--replay` takes it

MAX_INLINE_REPLAY = 1500  # characters of case JSON a repro command carries itself; a longer case goes to a file
KNOWN_KEPT = 3  # known failures kept per known-difference reason and mode (the search goes on past them)


@dataclass
class Failure:
    """One non-passing outcome of a drawn case on one backend in one mode."""

    op: str
    backend: str
    mode: str
    case: RawCase  # the drawn raw spec case (literal inputs), as `--replay` and `--save` take it
    case_id: str  # its id, or a backend variant's (what known differences matched)
    status: str
    message: str
    known: Optional[str] = None  # the reason of the known difference that explains it
    details: Optional[Dict[str, Any]] = None
    repro: str = ""

    def as_dict(self) -> Dict[str, Any]:
        return {
            "op": self.op,
            "backend": self.backend,
            "mode": self.mode,
            "case": self.case_id,
            "inputs": self.case.get("inputs"),
            "kwargs": self.case.get("kwargs", {}),
            "keras_config": self.case.get("keras_config"),
            "status": self.status,
            "message": self.message,
            "known": self.known is not None,
            "known_reason": self.known,
            "details": self.details,
            "repro": self.repro,
        }


@dataclass
class BackendOutcome:
    """What exploring one backend found."""

    backend: str
    examples: int = 0  # drawn cases that ran (the reference accepted them), shrinking included
    rejected: int = 0  # drawn cases the reference refused
    failures: List[Failure] = field(default_factory=list)
    could_not_run: Optional[str] = None  # why the backend did not run (not installed, its worker did not start)
    note: Optional[str] = None  # e.g. the reference refused every drawn case

    @property
    def unexplained(self) -> List[Failure]:
        return [f for f in self.failures if f.known is None]

    def as_dict(self) -> Dict[str, Any]:
        return {
            "backend": self.backend,
            "examples": self.examples,
            "rejected": self.rejected,
            "failures": len(self.failures),
            "unexplained": len(self.unexplained),
            "could_not_run": self.could_not_run,
            "note": self.note,
        }


class _Divergence(Exception):
    """Raised inside the Hypothesis test for an unexplained failure: what Hypothesis shrinks."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Exploration:
    """What every example of one exploration shares: the spec, the known differences, the seed, the case timeout."""

    def __init__(
        self,
        spec: Spec,
        op: str,
        seed: int = 0,
        known_entries: Optional[Sequence[KnownEntry]] = None,
        case_timeout: Optional[float] = None,
        repeat: int = 1,
    ) -> None:
        self.spec, self.op, self.seed, self.case_timeout = spec, op, seed, case_timeout
        self.repeat = repeat  # --repeat N: each draw runs N times; runs that disagree are `nondeterministic`
        self.cancel = Cancel()  # set by a signal: kills the worker of the backend being explored
        self.entry = spec.op(op)  # an unknown op: one line naming the closest ones
        self.strategy = strategies.case_strategy(op, self.entry, raw_cases(spec, op), *domains_of(spec, op))
        self.known_entries = known.alias_entries(spec) + list(
            load_known_entries(spec) if known_entries is None else known_entries
        )

    def session(self, backend: str, launch: Launch) -> BackendSession:
        """The backend session an exploration runs its draws on (one worker per keras.json settings, reused)."""
        settings = RunSettings(seed=self.seed, repeat=self.repeat, case_timeout=self.case_timeout)
        return BackendSession(backend, launch, settings=settings, cancel=self.cancel)

    def evaluate(self, session: BackendSession, raw: RawCase) -> Optional[List[Failure]]:
        """The failures of `raw` on one backend's session, one per mode (and backend variant) that does not pass;
        None when the reference refuses the case (it does not bind, or the reference raises where no exception is
        due)."""
        try:
            case = expand_case(self.op, self.entry, raw, self.seed)
        except (binding.BindingError, ValueError, TypeError, KeyError):
            return None
        backend = session.name
        try:  # a fresh oracle: drawn cases share ids, and the oracle caches by id
            expected = Oracle().expected(case, None, backend, keras_name_of)
        except Exception:
            return None
        if expected[0].get("status") != protocol.OK and not case.raises:
            return None
        worker = session.worker(case.keras_config)
        if not worker.ready or worker.mismatch:
            why = worker.mismatch and f"the backend did not apply its keras.json: {worker.mismatch}"
            return [
                self._failure(
                    raw,
                    backend,
                    mode,
                    Status.COULD_NOT_START if not worker.mismatch else Status.ERROR,
                    why or f"no worker with these keras.json settings: {worker.why_not_ready}",
                )
                for mode in case.modes
            ]
        failures: List[Failure] = []
        for variant in [case, *session.variants(case)]:
            for mode in variant.modes:
                result = session.result(self.entry, variant, mode, Expected(reply=expected))
                if result is None:
                    raise KeyboardInterrupt  # the client was killed under us: the exploration is over
                if result.status == Status.PASS:
                    continue
                versions = known.lookup([result], None, envs.read_lock)  # (the worker's are not kept: the locks)
                # a draw is no recorded case
                known.apply([result], self.known_entries, by_regex=True, versions=versions)
                if result.known is None:
                    explain_at_template_shape(result, self.known_entries)
                failures.append(
                    self._failure(
                        raw,
                        backend,
                        mode,
                        result.status,
                        result.message,
                        result.known,
                        result.details,
                        case_id=variant.id,
                    )
                )
        return failures

    def _failure(
        self,
        raw: RawCase,
        backend: str,
        mode: str,
        status: object,
        message: str,
        known_reason: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
        case_id: Optional[str] = None,
    ) -> Failure:
        failure = Failure(
            op=self.op,
            backend=backend,
            mode=mode,
            case=raw,
            case_id=case_id or raw["id"],
            status=str(status),
            message=message,
            known=known_reason,
            details=details,
        )
        failure.repro = self.repro(failure)
        return failure

    def repro(self, failure: Failure) -> str:
        """The command that replays `failure` exactly: this case, this backend, this mode."""
        case = dict(failure.case, modes=[failure.mode])
        text = json.dumps(case, sort_keys=True, separators=(",", ":"))
        if len(text) > MAX_INLINE_REPLAY:
            text = "@" + save_replay(text)
        spec = "" if self.spec.path == paths.spec_file() else f" --spec {shlex.quote(self.spec.path)}"
        return f"kbtool explore --op {shlex.quote(self.op)} --backend {shlex.quote(failure.backend)}{spec} --seed {self.seed} --replay {shlex.quote(text)}"


_SHAPE_PART = re.compile(r"\.shape=[^.]*$")


def explain_at_template_shape(result: Result, entries: Sequence[KnownEntry]) -> None:
    """A draw that differs from its case only in its input shapes is explained by what explains that case with
    the same status and message (a known difference's `case` glob names cases, not shapes); the reason says so."""
    base = _SHAPE_PART.sub("", result.case)
    if base == result.case:
        return
    probe = dataclasses.replace(result, case=base, known=None)
    known.apply([probe], entries, by_regex=True, versions=known.lookup([probe], None, envs.read_lock))
    if probe.known is not None:
        result.known = f"{probe.known} (case {base} at another shape)"


def load_known_entries(spec: Spec, known_files: Optional[known.KnownFiles] = None) -> List[KnownEntry]:
    """The entries of the known files (default: the shipped one; then each --known, layered), each judged against
    `spec` when it lies beside it (as `check` does)."""
    return known.load_layers(known_files or known.SHIPPED, spec)


def save_replay(text: str) -> str:
    """Writes a long replay case under kbtool's home; returns its path (named by its content)."""
    from kbtool.files import write_atomic
    from kbtool.runners.base import kbtool_home

    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(kbtool_home(), "explore", "replays", digest + ".json")
    if not os.path.exists(path):
        write_atomic(path, text + "\n")
    return path


def explore_backend(
    exploration: Exploration,
    backend: str,
    launch: Launch,
    max_examples: int,
    database_dir: Optional[str] = None,
    tick: Optional[Callable[[BackendOutcome], None]] = None,
    outcome: Optional[BackendOutcome] = None,
) -> BackendOutcome:
    """Hypothesis on one backend; `tick(outcome)` after each example (progress). Fills `outcome` as it goes."""
    from hypothesis import reject
    from hypothesis.errors import Flaky, Unsatisfiable

    outcome = outcome or BackendOutcome(backend)
    session = exploration.session(backend, launch)
    try:
        worker = session.worker(dict(domains.CONFIG_DEFAULTS))
        if not worker.ready:
            outcome.could_not_run = f"its worker did not start: {worker.why_not_ready}"
            return outcome
        known_seen: Dict[Tuple[str, str], List[Failure]] = {}
        last: List[Failure] = []

        def probe(raw: RawCase) -> None:
            failures = exploration.evaluate(session, raw)
            if failures is None:
                outcome.rejected += 1
                reject()
            outcome.examples += 1
            if tick:
                tick(outcome)
            for failure in failures:
                if failure.known is not None:
                    kept = known_seen.setdefault((failure.known, failure.mode), [])
                    if len(kept) < KNOWN_KEPT:
                        kept.append(failure)
            unexplained = [f for f in failures if f.known is None]
            if unexplained:
                last[:] = [unexplained[0]]
                raise _Divergence(unexplained[0])

        test = _hypothesis_test(exploration, probe, max_examples, database_dir)
        try:
            with _without_local_constants():
                test()
        except _Divergence as exc:
            outcome.failures.append(exc.failure)
        except Flaky:  # the minimal example did not fail again: keep the last one that did
            outcome.failures.extend(last)
        except Unsatisfiable:
            outcome.note = f"the reference refused every drawn case ({outcome.rejected} rejected)"
        except KeyboardInterrupt:  # a signal: keep the failure found so far (not yet shrunk) and what was known
            outcome.failures.extend(last)
            outcome.failures.extend(f for kept in known_seen.values() for f in kept)
            raise
        outcome.failures.extend(f for kept in known_seen.values() for f in kept)
        return outcome
    finally:
        session.stop()


def _hypothesis_test(
    exploration: Exploration, probe: Callable[[RawCase], None], max_examples: int, database_dir: Optional[str]
) -> Callable[[], None]:
    """`probe` as a Hypothesis test over the exploration's drawn cases: its seed, quiet, no deadline, the failing
    examples of `database_dir` (if any) first."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    database = DirectoryBasedExampleDatabase(database_dir) if database_dir else None
    assert exploration.strategy is not None  # the command refuses an op whose cases cannot start a draw
    test: Callable[[], None] = settings(
        max_examples=max_examples,
        database=database,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
        print_blob=False,
    )(seed(exploration.seed)(given(exploration.strategy)(probe)))
    return test


@contextlib.contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis (6.13x on) also draws literals found in the source of every loaded module that is not installed in
    site-packages: from an editable install, kbtool's own constants, so the same --seed drew other examples whenever
    kbtool's code changed. Explore draws from the spec's domains alone (guarded: that provider API is internal)."""
    try:
        from hypothesis.internal.conjecture import providers

        original = providers.HypothesisProvider.__dict__["_local_constants"]
        cached = providers.CONSTANTS_CACHE.cache  # the values drawn per choice type, local constants included
    except (ImportError, KeyError, AttributeError):
        yield
        return
    # hypothesis's internals are typed as a method and do not export Constants
    providers.HypothesisProvider._local_constants = providers.Constants()  # type: ignore[method-assign, attr-defined, assignment]
    cached.clear()
    try:
        yield
    finally:
        providers.HypothesisProvider._local_constants = original  # type: ignore[method-assign]
        cached.clear()


def replay(exploration: Exploration, backend: str, launch: Launch, raw: RawCase) -> BackendOutcome:
    """One case on one backend, judged as during exploration."""
    outcome = BackendOutcome(backend)
    session = exploration.session(backend, launch)
    try:
        failures = exploration.evaluate(session, raw)
        if failures is None:
            raise KbtoolError(
                f"the reference refuses this case (it does not bind to {exploration.op}'s signature, or the reference "
                "raises on it): nothing to compare"
            )
        outcome.examples = 1
        outcome.failures = failures
        return outcome
    finally:
        session.stop()


def domains_of(spec: Spec, op: str) -> Tuple[Any, Any]:
    """(param domains, keras.json domains) of `op` as the spec declares them."""
    return domains.param_domains(spec, op), domains.config_domains(spec, op)


def database_dir(op: str, backend: str) -> str:
    """Where the Hypothesis example database of one op on one backend lives (failing examples replay first)."""
    from kbtool.runners.base import kbtool_home

    safe = "".join(c if c.isalnum() or c in "._-@" else "_" for c in f"{op}__{backend}")
    return os.path.join(kbtool_home(), "hypothesis", safe)


def parse_replay(text: str) -> RawCase:
    """The raw case a `--replay` names: JSON text, or @FILE holding it; a KbtoolError (one line) otherwise."""
    from kbtool import files

    if text.startswith("@"):
        read = files.read_text(text[1:], "replay ")
        assert read is not None  # not missing_ok: a missing file raises
        text = read
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise KbtoolError(f"--replay takes a case as JSON (or @FILE): {files.clip(exc)}")
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise KbtoolError("--replay takes a JSON object with an `id` and the case's `inputs` (as `repro` prints it)")
    return raw


def explore(
    exploration: Exploration,
    planned_backends: Sequence[PlannedBackend],
    max_examples: int,
    use_database: bool = True,
    progress: Optional[Progress] = None,
    outcomes: Optional[List[BackendOutcome]] = None,
) -> List[BackendOutcome]:
    """Every runnable backend slot (plan.PlannedBackend) in turn; a slot that cannot run is an outcome with its
    problem. `progress` is a render.Progress (or None). Each outcome is appended to `outcomes` as it starts, so an
    interrupted exploration keeps what it found."""
    outcomes = [] if outcomes is None else outcomes
    for planned_backend in planned_backends:
        if planned_backend.launch is None:
            # a built-in backend that is not installed is listed, as `check` lists it, and is no failure
            outcomes.append(BackendOutcome(planned_backend.name, note=f"not run: {planned_backend.unavailable}"))
            continue
        if progress:
            progress.start(planned_backend.name, max_examples)
        outcome = BackendOutcome(planned_backend.name)
        outcomes.append(outcome)
        try:
            explore_backend(
                exploration,
                planned_backend.name,
                planned_backend.launch,
                max_examples,
                database_dir(exploration.op, planned_backend.name) if use_database else None,
                tick=progress.tick if progress else None,
                outcome=outcome,
            )
        except KeyboardInterrupt:
            outcome.note = "interrupted: the search did not finish"
            raise
        if progress:
            progress.done(outcome)
    return outcomes


def exit_code(outcomes: Sequence[BackendOutcome]) -> int:
    """0: nothing unexplained; 1: an unexplained failure, or a backend that could not run."""
    return 1 if any(o.unexplained or o.could_not_run for o in outcomes) else 0
