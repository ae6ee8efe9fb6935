"""`kbtool spec coverage --backend B`: the documented values and pairs a backend exercises only in results that do
not pass (kbtool/specs/coverage.py computes them from the set of failing results this module reads).

The failing results come from one of two sources (`failing_results`): by default the known-differences file, whose
entries record the exact results they explain (`results`: "op case backend mode" -> fingerprint, from the last full
run; a green gate means every other result passes), or a report's results for the backend that do not pass. The
claims that make a blind spot `decided` or `broken` (kbtool/specs/coverage.py: Claim) come from the spec's reference
decisions (their `values`) and the known entries' `every_call`.
"""

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from kbtool.errors import KbtoolError
from kbtool.results import Status
from kbtool.runners import names
from kbtool.specs import coverage
from kbtool.specs.cases import cases_for
from kbtool.specs.coverage import ResultKey
from kbtool.vocabulary import DEFAULT_DEVICE, DEVICES, MODES

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known import KnownFiles

STATUSES = tuple(s.value for s in Status)
_STATUS_WORD = re.compile(r"\b({})\b".format("|".join(sorted(STATUSES, key=len, reverse=True))))


def _status_of(fingerprint: Any, entry: Any) -> str:
    """A recorded result's status: its fingerprint's (a mapping's `status`, or the first status word of a string;
    of a record of several ways, the first that does not raise), else the entry's own status where it names exactly
    one, else 'known'."""
    if isinstance(fingerprint, list) and fingerprint:
        statuses = [_status_of(one, entry) for one in fingerprint]
        return next((s for s in statuses if s not in coverage.REFUSED), statuses[0])
    if isinstance(fingerprint, Mapping) and fingerprint.get("status") in STATUSES:
        return str(fingerprint["status"])
    if isinstance(fingerprint, str):
        found = _STATUS_WORD.search(fingerprint)
        if found:
            return found.group(1)
    status = getattr(entry, "status", None)
    if isinstance(status, str) and status in STATUSES:
        return status
    if isinstance(status, (tuple, list)) and len(status) == 1 and status[0] in STATUSES:
        return str(status[0])
    return "known"


def split_key(key: str) -> Tuple[str, str, str, str, str]:
    """'op case backend mode [device]' -> (op, case, backend, mode, device); a one-line KbtoolError for another
    form."""
    parts = str(key).split(" ")
    device = parts.pop() if len(parts) > 4 and parts[-1] in DEVICES else DEFAULT_DEVICE
    if len(parts) < 4 or parts[-1] not in MODES:
        raise KbtoolError(f"a known entry's results key {key!r} is not 'op case backend mode [device]'")
    return parts[0], " ".join(parts[1:-2]), parts[-2], parts[-1], device


# the static shape is judged last, only where the values, shapes and dtypes passed (kbtool/verdicts: judge): a result
# that fails on it alone exercised its documented values, and counts as covering them
STATIC_SHAPE = "static shape "
# a failing output's value verdict in a fingerprint (kbtool/known/fingerprint.py)
_VALUES = re.compile(r"\bvalues: (\S+)")
STATISTICS_AGREE = "(statistics agree)"


def values_agree(fingerprint: Any) -> bool:
    """Whether a recorded or measured fingerprint says every failing output's values were compared and agree: the
    result fails on its shape or dtype alone, each held apart from the values in the fingerprint, so a wrong value
    there would change it (`changed`, as the planted faults of kind `masked` show). Such a result exercised its
    documented values and counts as covering them, as a static-shape failure does; so does a random op's result
    whose draws' statistics were measured and agree (kind `distribution`). Every alternative of a record of several
    must say so."""
    if isinstance(fingerprint, (list, tuple)):
        return bool(fingerprint) and all(values_agree(one) for one in fingerprint)
    if not isinstance(fingerprint, str):
        return False
    verdicts = _VALUES.findall(fingerprint)
    drawn = STATISTICS_AGREE in fingerprint  # a random op's draws: their statistics measured, whatever the dtype
    return (bool(verdicts) or drawn) and all(v == "agree" for v in verdicts)


def _covers(fingerprint: Any) -> bool:
    """Whether a failing result counts as covering its values (see STATIC_SHAPE and values_agree)."""
    static_only = isinstance(fingerprint, str) and fingerprint.startswith(f"{Status.FAIL.value} | {STATIC_SHAPE}")
    return static_only or values_agree(fingerprint)


def known_failing(entries: Iterable[Any], backend: str) -> Dict[ResultKey, str]:
    """The results on `backend` that the known entries record (their `results` keys), with each one's status; a
    KbtoolError when there are entries and none records its results (a file from before `kbtool known record`
    would make every result look passing)."""
    failing: Dict[ResultKey, str] = {}
    entries = list(entries)
    if entries and all(getattr(entry, "results", None) is None for entry in entries):
        raise KbtoolError(
            "the known-differences file records no entry's results, so it cannot tell which results fail: "
            "record them (kbtool known record REPORT.json) or give --report REPORT.json"
        )
    for entry in entries:
        for key, fingerprint in (getattr(entry, "results", None) or {}).items():
            op, case, name, mode, device = split_key(key)
            # coverage is the CPU's: a device's own record says nothing of which values a CPU run reached
            if name == backend and device == DEFAULT_DEVICE and not _covers(fingerprint):
                failing[(op, case, mode)] = _status_of(fingerprint, entry)
    return failing


def report_failing(report: Mapping[str, Any], backend: str) -> Dict[ResultKey, str]:
    """The results on `backend` in a report that do not pass, with each one's status; a KbtoolError when the report
    holds no result for `backend`."""
    mine = [r for r in report.get("results", []) if r.get("backend") == backend]
    if not mine:
        raise KbtoolError(f"the report holds no results for backend {backend!r}")
    from kbtool.known import fingerprint

    return {
        (r["op"], r["case"], r["mode"]): r["status"]
        for r in mine
        if r["status"] != Status.PASS.value
        and not str(r.get("message", "")).startswith(STATIC_SHAPE)
        and not values_agree(fingerprint.of_result(r))
    }


def ops_of_report(
    report: Mapping[str, Any], backend: str, ops: Optional[Iterable[str]], report_path: Optional[str]
) -> List[str]:
    """The ops whose blind spots a report tells (issue #33): a result the report lacks would count as passing, so
    only the ops it ran on `backend` (--op's, each one it ran), and only from a run of every case of them to the
    end; a one-line KbtoolError otherwise."""
    name = report_path or "the report"
    if report.get("incomplete") or (report.get("plan") or {}).get("all_cases") is False:
        raise KbtoolError(
            f"{name} is {'an interrupted run' if report.get('incomplete') else 'a run of some cases only'}: the "
            "results it lacks would count as passing; give the report of a whole run of its ops"
        )
    ran = sorted({str(r.get("op")) for r in report.get("results", []) if r.get("backend") == backend})
    if not ran:
        raise KbtoolError(f"the report holds no results for backend {backend!r}")
    if ops is None:
        return ran
    missing = [op for op in ops if op not in ran]
    if missing:
        raise KbtoolError(
            "{} holds no results of {} on {}: it cannot tell {} blind spots".format(
                name, ", ".join(missing), backend, "its" if len(missing) == 1 else "their"
            )
        )
    return list(ops)


def failing_results(
    backend: str, report: Optional[Mapping[str, Any]] = None, entries: Iterable[Any] = ()
) -> Dict[ResultKey, str]:
    """Every result on `backend` that does not pass, as {(op, case id, mode): status} (its keys are the set): from
    `report` when one is given, else from the known entries' recorded results."""
    if report is not None:
        return report_failing(report, backend)
    return known_failing(entries, backend)


def backend_modes(backend: str) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(the modes `backend` runs, {mode it cannot run: why}); a one-line KbtoolError for an unknown backend."""
    from kbtool.runners import custom, registry

    recipe = registry.recipe_of(backend) if registry.is_builtin(backend) else None
    if recipe is not None:
        return tuple(recipe.modes), dict(recipe.unsupported_modes)
    if backend in registry.BUILTIN:
        return MODES, {}
    module, env_name = names.split_custom(backend)
    is_custom: Callable[[str], bool] = custom.is_custom
    importable: Callable[[str], bool] = custom.importable
    if is_custom(backend) and (env_name in registry.RECIPES if env_name else "." in module or importable(module)):
        # a custom module runs in its environment's modes (kbtool/runners/custom.py: launch)
        return (tuple(registry.RECIPES[env_name].modes), {}) if env_name else (MODES, {})
    raise KbtoolError(
        "unknown backend {!r}; built-in backends are {}, or give an importable module like my_package.my_module[@ENV]".format(
            backend, ", ".join(registry.BUILTIN)
        )
    )


def variants_of(spec: Any, backend: str) -> Callable[[str, str], List[str]]:
    """(op, case id) -> the case ids of the backend's variants of that case (e.g. Theano's '.kernel_flipped'), made
    by its recipe from the op's expanded cases (only for the ops its recipe makes variants for)."""
    from kbtool.runners import registry

    recipe = registry.recipe_of(backend) if registry.is_builtin(backend) else None
    made: Dict[str, Dict[str, List[str]]] = {}

    def variants(op: str, case_id: str) -> List[str]:
        if recipe is None or not any(op in ops for ops in recipe.variant_suffixes.values()):
            return []
        if op not in made:
            made[op] = {case.id: [v.id for v in recipe.variants(case)] for case in cases_for(spec, op)}
        return made[op].get(case_id, [])

    return variants


def decision_claims(spec: Any, backend: str) -> List[coverage.Claim]:
    """The spec's reference decisions that say `backend` differs on every call holding some documented values
    (their `values`; a decision without them names no call: it may concern one case alone)."""
    claims = []
    for op, entry in sorted(spec.ops.items()):
        for number, decision in enumerate(entry.get("reference_decisions") or [], 1):
            if decision.get("values") and backend in decision.get("differs", []):
                by = f"reference decision {number} of {op} in the spec"
                claims.append(coverage.Claim("decided", op, MODES, decision["values"], by))
    return claims


def entry_claims(entries: Iterable[Any], backend: str, spec: Any) -> List[coverage.Claim]:
    """The known entries' `every_call` claims about `backend`: for each op the entry names that documents every
    dimension a claim names ("any": each op), in each mode it names (its case globs aside: the claim is about
    every call)."""
    from kbtool.known.globs import backend_matches, globs_of, matches
    from kbtool.specs import domains

    claims = []
    for entry in entries:
        every_call = getattr(entry, "every_call", None)
        if every_call is None or not backend_matches(backend, entry.backend):
            continue
        sets = [None] if every_call == "any" else every_call if isinstance(every_call, list) else [every_call]
        modes = tuple(m for m in MODES if matches(m, "*" if entry.mode is None else entry.mode))
        for op in globs_of(entry.op):
            dims = domains.all_domains(spec, op) if op in spec.ops else {}
            for values in sets:
                if values is None or all(name in dims for name in values):
                    claims.append(coverage.Claim("broken", op, modes, values, f"known entry {entry.number}"))
    return claims


def blind_spots(
    spec: Any,
    backend: str,
    report: Optional[Mapping[str, Any]] = None,
    report_path: Optional[str] = None,
    known_files: Optional["KnownFiles"] = None,
    ops: Optional[Iterable[str]] = None,
) -> Dict[str, Any]:
    """The blind-spot report of `backend` (kbtool/specs/coverage.py: blind_spots), with where its failing results
    came from and the modes it cannot run."""
    from kbtool import known

    modes, unsupported_modes = backend_modes(backend)
    if report is not None:
        ops = ops_of_report(report, backend, ops, report_path)
    entries = known.load_layers(known_files or known.SHIPPED, spec)  # the claims' source, and the failing results'
    # without a report
    failing = failing_results(backend, report, entries)
    claims = decision_claims(spec, backend) + entry_claims(entries, backend, spec)
    result = coverage.blind_spots(spec, failing, modes, variants_of(spec, backend), ops, claims)
    if report is not None:
        source = "report {}".format(report_path or "(given)")
        result["ops_checked"] = list(ops or [])  # a report tells only of the ops it ran
    else:
        from kbtool import paths

        said = [paths.shown(path) for path, _ in (known_files or known.SHIPPED).files()]
        source = "known file{} {}".format("s" if len(said) != 1 else "", ", ".join(said) or "none")
    return dict(
        {"backend": backend, "source": source, "modes": list(modes), "unsupported_modes": unsupported_modes}, **result
    )
