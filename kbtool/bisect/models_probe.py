"""`kbtool bisect --model NAME`: the release where one zoo model's forward pass changed.

The probe at a release is the model's forward run on that release's engine (`kbtool models`'s worker request,
kbtool.models.wire.run_model: seeded weights and inputs, no training step), compared with the first release's
outputs as `kbtool models` compares an engine with its oracle (kbtool.models.metrics: the outputs' mean absolute
deviation against the spec's float32 tolerance times the model's depth). Its outcome, for search.search, is `same`
(within the tolerance of LO's outputs; LO's own), `changed` (past it, or another shape), or the run's failure
(`error`, `crash`, `timeout`, `unsupported`, `could_not_start`) with its reason's words: a release where the model
stops building is a change too. The one result key is (model, "outputs", "forward").
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence

from kbtool.bisect.search import CheckRunner, Interrupted, Key, Outcome
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint

if TYPE_CHECKING:
    from kbtool.models.records import Difference, EngineRun

CASE, MODE = "outputs", "forward"  # the result key's case and mode: a model has one result, its outputs
MODEL_TIMEOUT = 900.0  # seconds a model may take at one release (Theano compiles an application for minutes)

Compare = Callable[["EngineRun", "EngineRun"], "Difference"]  # (a release's run, LO's run) -> how far apart
RunAt = Callable[[str], "EngineRun"]  # a release backend's name -> the model's run there


def key(model: str) -> Key:
    return (model, CASE, MODE)


def forward_difference(run: EngineRun, baseline: EngineRun) -> Difference:
    """How far a run's outputs are from LO's, judged as `kbtool models` judges an engine's against its oracle."""
    from kbtool.models import compare, metrics

    return metrics.difference(run.outputs, baseline.outputs, metrics.depth_tolerance(compare.model_depth(baseline)))


def model_probe(run: EngineRun, baseline: EngineRun, lo: str, compare: Compare = forward_difference) -> Outcome:
    """The outcome of one release's run of the model against LO's run (`lo`: how LO is named in a message)."""
    if run.status != "ok":
        why = run.reason or run.status
        return Outcome(run.status, why, fingerprint.words(why))
    if baseline.status != "ok":
        said = f"ran; {lo} did not ({baseline.status}): no outputs to compare with"
        return Outcome("ran", said, fingerprint.words(said))
    found = compare(run, baseline)
    figures = f"MAD {found.mad:.3g}, threshold {found.threshold:.3g}, max abs {found.max_abs:.3g}"
    if found.inconsistent:
        said = f"outputs differ from {lo}'s past the tolerance ({figures})"
        return Outcome("changed", said, fingerprint.words(said))
    said = f"outputs within the tolerance of {lo}'s ({figures})"
    return Outcome("same", said, fingerprint.words(said))


class ModelRunner(CheckRunner):
    """A search.Runner that runs one zoo model at releases of `package` on `base` (installing a release env it
    lacks, as CheckRunner does) and judges each run against LO's: the first release of the first call (search's
    first call is LO and HI, oldest first)."""

    def __init__(
        self,
        base: str,
        package: str,
        model: str,
        seed: int = 0,
        timeout: Optional[float] = None,
        cancel: Any = None,
        note: Callable[[str], None] = lambda line: None,
        run_at: Optional[RunAt] = None,
        compare: Compare = forward_difference,
    ) -> None:
        super().__init__(base, package, None, (), cancel=cancel, note=note)
        self.model, self.seed = model, seed
        self.lo: Optional[str] = None  # LO: the first release search asks for (it runs both ends first)
        self.timeout = timeout if timeout is not None else MODEL_TIMEOUT
        self.run_at: RunAt = run_at or self._run_release
        self.compare = compare
        self.baseline: Optional[EngineRun] = None

    def plan(self, versions: Sequence[str]) -> None:
        """Says an unknown model (one line, with the zoo's names) before anything is installed."""
        from kbtool.worker.modelzoo import zoo

        if self.model not in zoo.MODELS:
            raise KbtoolError(f"--model {self.model}: no such model in the zoo ({', '.join(zoo.MODELS)})")

    def repro(self, version: str) -> str:
        name = self.release_name(version)
        return f"kbtool models --backend {shlex.quote(name)} --model {shlex.quote(self.model)} --seed {self.seed}"

    def _run_release(self, name: str) -> EngineRun:
        """The model's forward run on release backend `name`, in a worker of its own."""
        from kbtool.models import wire
        from kbtool.models.records import EngineRun
        from kbtool.runners import registry
        from kbtool.runners.session import BackendSession, Cancel

        with BackendSession(name, registry.launch_for(name), cancel=self.cancel or Cancel()) as session:
            worker = session.worker()
            if not worker.ready:
                return EngineRun(name, self.model, "could_not_start", reason=worker.why_not_ready)
            return wire.run_model(worker.client, self.model, self.seed, False, self.timeout)

    def _probe(self, version: str) -> EngineRun:
        if self.cancel is not None and self.cancel.is_set():
            raise Interrupted(self.cancel.reason)
        self.ensure_installed(version)
        started = time.monotonic()
        run = self.run_at(self.release_name(version))
        self.note(
            f"kbtool: ran {self.model} on {self.release_name(version)}: {run.status} in {time.monotonic() - started:.1f} s"
        )
        return run

    def __call__(self, versions: Sequence[str]) -> Dict[str, Dict[Key, Outcome]]:
        runs: Dict[str, EngineRun] = {}
        if self.baseline is None:
            self.lo = versions[0]
            self.baseline = runs[self.lo] = self._probe(self.lo)
        for version in versions:
            if version not in runs:
                runs[version] = self._probe(version)
        lo = f"{self.package} {self.lo}"
        found: Dict[str, Dict[Key, Outcome]] = {}
        for version in versions:
            outcome = model_probe(runs[version], self.baseline, lo, self.compare)
            found[version] = {
                key(self.model): Outcome(outcome.status, outcome.message, outcome.words, self.repro(version))
            }
        return found
