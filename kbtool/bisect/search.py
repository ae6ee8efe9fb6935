"""`kbtool bisect`: in which release of a package a result changed.

The releases are every release of PKG the index has from LO to HI (runners/releases.expand), oldest first. Both ends
run the selection (one check of the two release backends); each result key (op, case, mode) whose *outcome* differs
between them is then bisected: the first release whose outcome is no longer LO's, with the last release still LO's
before it. An outcome is the status and the message's words (fingerprint.words: numbers left out, so a shape named in
an error does not count) and, for a failing value, the shape and dtype it returned: a pass, an error and a result of
another shape are three outcomes.

Each release probed runs the whole selection once and its outcomes are kept, so keys share probes: n releases cost
at most 2 + ceil(log2(n - 1)) runs per distinct change point, and fewer when changes share releases. A probed release
whose outcome for a key is neither end's makes that change *non-monotonic*: bisection then names a release where the
result left LO's outcome (the first, if it left it once), and the report lists the third outcomes it saw.

`search` is the logic, with the runner given (tests pass outcomes per release as data); `CheckRunner` is the real
runner: it installs each release env it needs (reusing installed ones) and runs the selection in-process through the
same plan → run_check path as `kbtool check`.
"""

import json
import os
import shlex
import textwrap
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool import __version__, files, schemas
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint
from kbtool.reports.text import cell
from kbtool.settings import RunSettings

Key = Tuple[str, str, str]  # (op, case id, mode)
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bisect.schema.json")
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Outcome:
    """What one result key gave at one release: its status, its message (as shown), the words compared
    (`fingerprint.words` and, for a failing value, its shape and dtype), and the command that runs it again."""

    status: str
    message: str = ""
    words: str = ""
    repro: Optional[str] = None

    @property
    def identity(self) -> Tuple[str, str]:
        return (self.status, self.words)

    def same(self, other: "Outcome") -> bool:
        return self.identity == other.identity

    @classmethod
    def of_result(cls, result: Mapping[str, Any], repro: Optional[str] = None) -> "Outcome":
        """The outcome of a report's result (a dict of the JSON report)."""
        changed = result.get("changed")
        status = str(changed["status"] if changed else result.get("status"))
        message = str(result.get("message") or "")
        words = fingerprint.words(message)
        details = result.get("details") or {}
        shape, dtype = details.get("actual_shape"), details.get("actual_dtype")
        if shape is not None or dtype is not None:
            words += " | returned {} {}".format(
                "(" + ",".join(str(d) for d in shape) + ")" if shape is not None else "?", dtype or "?"
            )
        return cls(status, message, words, repro)


ABSENT = Outcome("absent", "no result for this key at this release", "no result")


@dataclass(frozen=True)
class Probe:
    """One run of the selection: the releases it ran (the two ends run together), their results, its seconds."""

    versions: Tuple[str, ...]
    results: int
    seconds: float


@dataclass(frozen=True)
class Change:
    """A result key whose outcome differs between the ends, located: `first_changed` is the first release found whose
    outcome is not LO's, `last_same` the release before it (LO's outcome). `before`/`after` are the outcomes there;
    `lo`/`hi` the ends'. `others`: probed releases whose outcome is neither end's (a non-monotonic change)."""

    op: str
    case: str
    mode: str
    first_changed: str
    last_same: str
    before: Outcome
    after: Outcome
    lo: Outcome
    hi: Outcome
    others: Tuple[Tuple[str, Outcome], ...] = ()

    @property
    def key(self) -> Key:
        return (self.op, self.case, self.mode)

    @property
    def monotonic(self) -> bool:
        return not self.others


@dataclass
class Bisection:
    """What a bisect found: the releases of the range (versions, oldest first), the runs made, the keys compared and
    the changes located (in key order)."""

    versions: List[str]
    probes: List[Probe] = field(default_factory=list)
    compared: int = 0
    changes: List[Change] = field(default_factory=list)

    @property
    def probed(self) -> List[str]:
        """The releases run, in the order they ran."""
        return [v for probe in self.probes for v in probe.versions]


# A runner runs the selection at some releases (versions of the package): {version: {key: outcome}}.
Runner = Callable[[Sequence[str]], Mapping[str, Mapping[Key, Outcome]]]


def search(versions: Sequence[str], run: Runner, clock: Callable[[], float] = time.monotonic) -> Bisection:
    """Bisect every key whose outcome differs between versions[0] and versions[-1] (see the module)."""
    if len(versions) < 2:
        raise KbtoolError("a bisect needs two releases at least: LO and HI name the same release")
    found = Bisection(list(versions))
    cache: Dict[int, Mapping[Key, Outcome]] = {}

    def ensure(indices: Sequence[int]) -> None:
        missing = [i for i in indices if i not in cache]
        if not missing:
            return
        started = clock()
        got = run([versions[i] for i in missing])
        for i in missing:
            cache[i] = dict(got.get(versions[i], {}))
        found.probes.append(
            Probe(tuple(versions[i] for i in missing), sum(len(cache[i]) for i in missing), clock() - started)
        )

    last = len(versions) - 1
    ensure([0, last])
    keys = sorted(set(cache[0]) | set(cache[last]))
    found.compared = len(keys)
    for key in keys:
        lo, hi = cache[0].get(key, ABSENT), cache[last].get(key, ABSENT)
        if lo.same(hi):
            continue
        left, right = 0, last  # invariant: left has LO's outcome, right does not
        while right - left > 1:
            middle = (left + right) // 2
            ensure([middle])
            if cache[middle].get(key, ABSENT).same(lo):
                left = middle
            else:
                right = middle
        others = tuple(
            (versions[i], cache[i].get(key, ABSENT))
            for i in sorted(cache)
            if not cache[i].get(key, ABSENT).same(lo) and not cache[i].get(key, ABSENT).same(hi)
        )
        found.changes.append(
            Change(
                *key,
                first_changed=versions[right],
                last_same=versions[left],
                before=cache[left].get(key, ABSENT),
                after=cache[right].get(key, ABSENT),
                lo=lo,
                hi=hi,
                others=others,
            )
        )
    return found


# ---------------------------------------------------------------------------- the real runner


@dataclass(frozen=True)
class Install:
    """A release env the bisect installed, and how long it took."""

    release: str
    seconds: float


class Interrupted(Exception):
    """A signal stopped a probe's run (the CLI exits with 128 + the signal)."""


class CheckRunner:
    """Runs the selection at releases of `package` on `base`, in-process as `kbtool check` does (plan → run_check),
    with no known differences applied (raw verdicts are compared). Installs a release env it lacks first."""

    def __init__(
        self,
        base: str,
        package: str,
        spec: Any,
        ops: Sequence[str],
        case_patterns: Sequence[str] = (),
        modes: Sequence[str] = (),
        run: Optional[RunSettings] = None,
        cancel: Any = None,
        note: Callable[[str], None] = lambda line: None,
    ) -> None:
        """`run`: the probes' seed, case timeout and --jobs (the keras.json overrides are the documented defaults)."""
        from kbtool import keras_settings

        self.base, self.package, self.spec = base, package, spec
        self.ops, self.case_patterns, self.modes = tuple(ops), tuple(case_patterns), tuple(modes)
        self.cancel, self.note = cancel, note
        self.settings = keras_settings.resolve(())
        self.run = replace(run or RunSettings(), keras_config=self.settings.override)
        self.installs: List[Install] = []

    def release_name(self, version: str) -> str:
        from kbtool.runners.releases import Release

        return Release(self.base, ((self.package, version),)).name

    def plan(self, versions: Sequence[str]) -> Any:
        """The plan of one probe; with no versions, the selection on numpy (kbtool's own Python, always here): how
        the CLI says an unknown op or a case glob that matches nothing before it installs anything."""
        from kbtool import keras_settings
        from kbtool.plan import Selection, make_plan

        backends = tuple(self.release_name(v) for v in versions) or ("numpy",)
        chosen = Selection(ops=self.ops, backends=backends, case_patterns=self.case_patterns, modes=self.modes)
        plan = make_plan(self.spec, chosen, self.run)
        keras_settings.apply(plan, self.settings)
        return plan

    def ensure_installed(self, version: str) -> None:
        from kbtool.runners import releases

        name = releases.parse(self.release_name(version)).name
        base = releases.recipe_for(name).layered_on
        if base and not releases.is_installed(name) and not releases.is_installed(base):  # never built unasked
            raise KbtoolError(
                f"{name} is layered on the {base} env, which is not installed: `kbtool env install {shlex.quote(base)}` "
                "installs it (bisect installs only the releases)"
            )
        for done in releases.install_releases(
            [name], started=lambda i, n, name: self.note(f"kbtool: installing {name} ...")
        ):
            if done.failed:
                last = next((line.strip() for line in reversed(done.said) if line.strip()), "no reason given")
                raise KbtoolError(f"{name} did not install ({last}); `kbtool env install '{name}'` says more")
            self.installs.append(Install(name, done.seconds))
            self.note(f"kbtool: installed {name} in {done.seconds:.1f} s")

    def __call__(self, versions: Sequence[str]) -> Dict[str, Dict[Key, Outcome]]:
        from kbtool import repro
        from kbtool.check.run import run_check
        from kbtool.results import Result, Status

        for version in versions:
            if self.cancel is not None and self.cancel.is_set():
                raise Interrupted(self.cancel.reason)
            self.ensure_installed(version)
        plan = self.plan(versions)
        started = time.monotonic()
        report = run_check(plan, known_entries=[], cancel=self.cancel)
        if self.cancel is not None and self.cancel.is_set():
            raise Interrupted(self.cancel.reason)
        flags = plan.run.resolved(plan.spec.path)
        cases = {(case.op, case.id): case for _, case in plan.work}
        by_name = {self.release_name(v): v for v in versions}
        found: Dict[str, Dict[Key, Outcome]] = {v: {} for v in versions}
        for result in report["results"]:
            at = by_name.get(result["backend"])
            if at is None:
                continue
            stub = Result(
                result["op"],
                result["case"],
                result["backend"],
                result["mode"],
                Status.PASS,
                device=result.get("device"),
            )
            command = repro.command(stub, cases.get((result["op"], result["case"])), flags)
            found[at][(result["op"], result["case"], str(result["mode"]))] = Outcome.of_result(result, command)
        for info in report["backends"]:  # a release whose worker did not start: every planned key says why
            gone = by_name.get(info["name"])
            if gone is None or info["status"] == "available":
                continue
            why = str(info.get("error") or info.get("reason") or info["status"])
            for _, case in plan.work:
                for mode in case.modes:
                    key = (case.op, case.id, str(mode))
                    found[gone].setdefault(key, Outcome("could_not_start", why, fingerprint.words(why)))
        self.note(
            "kbtool: ran {}: {} results in {:.1f} s".format(
                ", ".join(shlex.quote(self.release_name(v)) for v in versions),
                sum(len(found[v]) for v in versions),
                time.monotonic() - started,
            )
        )
        return found


# ---------------------------------------------------------------------------- views


def document(
    found: Bisection,
    base: str,
    package: str,
    selection: Mapping[str, Sequence[str]],
    installs: Sequence[Install],
    wall_seconds: float,
    release_name: Callable[[str], str],
) -> Dict[str, Any]:
    """The JSON document of a bisect (bisect.schema.json)."""

    def outcome(o: Outcome) -> Dict[str, Any]:
        return {k: v for k, v in asdict(o).items() if v is not None}

    return {
        "schema_version": SCHEMA_VERSION,
        "kbtool": __version__,
        "backend": base,
        "package": package,
        "range": f"{found.versions[0]}..{found.versions[-1]}",
        "releases": list(found.versions),
        "selection": {k: list(v) for k, v in selection.items()},
        "probes": [
            {"releases": [release_name(v) for v in p.versions], "results": p.results, "seconds": round(p.seconds, 3)}
            for p in found.probes
        ],
        "installed": [{"release": i.release, "seconds": round(i.seconds, 3)} for i in installs],
        "compared": found.compared,
        "changes": [
            {
                "op": c.op,
                "case": c.case,
                "mode": c.mode,
                "first_changed": c.first_changed,
                "last_same": c.last_same,
                "monotonic": c.monotonic,
                "before": outcome(c.before),
                "after": outcome(c.after),
                "lo": outcome(c.lo),
                "hi": outcome(c.hi),
                "others": [dict(outcome(o), release=v) for v, o in c.others],
            }
            for c in found.changes
        ],
        "wall_seconds": round(wall_seconds, 3),
    }


def validate(doc: Any) -> List[str]:
    """Problems of a bisect document against its schema (empty when valid)."""
    return schemas.problems(SCHEMA_FILE, doc)


def write(path: str, doc: Mapping[str, Any]) -> None:
    files.write_atomic(path, json.dumps(doc, indent=2) + "\n")


def _column(status: str, message: str, width: int) -> List[str]:
    lines = [cell(status)]
    text = " ".join(cell(message).split())  # a worker's message may hold terminal escapes: never printed as such
    if text:
        wrapped = textwrap.wrap(text, width) or [""]
        lines += wrapped[:3]
        if len(wrapped) > 3:
            lines[-1] = lines[-1][: width - 1] + "…"
    return lines


def side_by_side(left: Tuple[str, Outcome], right: Tuple[str, Outcome], width: int = 80) -> List[str]:
    """Two outcomes in two columns under their labels, each message wrapped to at most three lines."""
    column = (width - 2 - 3) // 2
    a = [left[0]] + _column(left[1].status, left[1].message, column)
    b = [right[0]] + _column(right[1].status, right[1].message, column)
    rows = max(len(a), len(b))
    a += [""] * (rows - len(a))
    b += [""] * (rows - len(b))
    return [f"  {x:<{column}} | {y}".rstrip() for x, y in zip(a, b)]


def render(found: Bisection, package: str, installs: Sequence[Install], wall_seconds: float) -> List[str]:
    """The terminal view: each change, its two sides and their repros, then the summary line."""
    lines: List[str] = []
    for c in found.changes:
        lines.append(f"{c.op} {c.case} {c.mode}: changed in {package} {c.first_changed} (last same: {c.last_same})")
        lines += side_by_side((f"{package} {c.last_same}", c.before), (f"{package} {c.first_changed}", c.after))
        if not c.monotonic:
            lines.append(
                "  non-monotonic: {}; {} {} gives {}".format(
                    "; ".join(f"{package} {v} gives {o.status}" for v, o in c.others),
                    package,
                    found.versions[-1],
                    c.hi.status,
                )
            )
        for version, o in ((c.last_same, c.before), (c.first_changed, c.after)):
            if o.repro:
                lines.append(f"  repro {version}: {o.repro}")
        lines.append("")
    by_release: Dict[str, int] = {}
    for c in found.changes:
        by_release[c.first_changed] = by_release.get(c.first_changed, 0) + 1
    if by_release:
        lines.append(
            "changes by release: " + ", ".join(f"{package} {v}: {n}" for v, n in sorted(by_release.items(), key=order))
        )
    installed = sum(i.seconds for i in installs)
    summary = "bisect: {} releases in {} {}..{}, {} installed{}, {} probed in {} runs; {} of {} results changed; {:.1f} s".format(
        len(found.versions),
        package,
        found.versions[0],
        found.versions[-1],
        len(installs),
        f" ({installed:.1f} s)" if installs else "",
        len(found.probed),
        len(found.probes),
        len(found.changes),
        found.compared,
        wall_seconds,
    )
    # every line may quote outside text (a message, a case, a release): terminal escapes never reach the terminal
    return [cell(line) for line in lines] + textwrap.wrap(cell(summary), 80, subsequent_indent="  ")


def order(item: Tuple[str, int]) -> Any:
    from kbtool.runners.releases import version_key

    return version_key(item[0])
