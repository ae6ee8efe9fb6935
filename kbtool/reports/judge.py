"""`kbtool report judge REPORT.json [--known FILE ...] [--highest REPORT.json ...]`: a stored report's results judged
again against the known-differences files, as `check` judges its own. A report made elsewhere (a GPU machine, another
team's CI) is gated and recorded here; its verdicts (statuses, messages, fingerprints) are the report's own, only the
known differences are applied anew: the entries of the shipped file and each --known (kbtool/known/layers.py) with
the spec's Keras 1.x alias entries.

A report made with another spec (its SHA-256 is not this kbtool's) holds results of other cases and verdicts of
another wording, which this kbtool's recorded fingerprints do not describe: it is judged against the entries it
carries (embedded, or referenced by hash and found in the known files at hand: the known files of the kbtool that
made it, whose records may be of the first fingerprint format: fingerprint.holds_for), followed by the known files'
device entries (those naming a `device`: they record only what a device does otherwise than its CPU). The report
says which (`known_file`).

With --highest (reports of the same calls at --precision highest), each device result is classified first
(kbtool/reports/device_differences.py): a TF32 difference carries `device_difference` with both runs' numbers."""

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.reports import device_differences, merge
from kbtool.reports.assemble import now
from kbtool.reports.report import Report
from kbtool.results import Status
from kbtool.vocabulary import DEFAULT_PRECISION

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known import KnownFiles

Record = Dict[str, Any]


def judge(
    name: str,
    report: Record,
    known_files: Optional["KnownFiles"] = None,
    strict: bool = False,
    highest: Sequence[Tuple[str, Record]] = (),
) -> Record:
    """The report `report` (read from `name`) with its results judged against the known files `known_files`
    (default: the shipped one), its device results classified against the `highest` reports ((name, report)
    pairs)."""
    from kbtool import __version__, known
    from kbtool.known import layers
    from kbtool.reports.assemble import sha256_of
    from kbtool.runners import envs
    from kbtool.specs import loader

    if report.get("incomplete") is None and not report.get("results"):
        raise KbtoolError(f"{name}: the report holds no results to judge")
    spec = loader.load()
    results = merge.fresh_results([(name, report)])  # the verdicts' own statuses, no entry's mark
    plan = dict(report.get("plan") or {})
    by_precision = device_differences.highest_results(highest)
    if by_precision:
        device_differences.classify(
            results,
            by_precision,
            device_differences.MagnitudeLookup(seed=int(report.get("seed") or 0)),
            precision=str(plan.get("precision", "default")),
        )
    read_from = known_files or layers.SHIPPED
    files = [layers.file_record(path, shipped) for path, shipped in read_from.files()]
    loaded = layers.load_layers(read_from, spec)
    known_file: Optional[Record] = None
    if other_spec(report, sha256_of(spec.path).get("sha256")):
        pool = loaded + known.alias_entries(spec) + layers.at_hand(name, report)
        entries = carried_entries(name, report, loaded, pool)
        said = ", ".join(f["path"] for f in files) or "no file"
        known_file = {"path": f"{name} (the {len(entries)} entries it carries, then {said}'s device entries)"}
    else:
        entries = known.alias_entries(spec) + loaded
    applied = known.apply(
        results,
        entries,
        # an interrupted run judges no entry stale (as check); an unfiltered one judges them as its plan says
        whole_spec=bool(plan.get("whole_spec")) and not report.get("incomplete"),
        all_cases=bool(plan.get("all_cases")) and not report.get("incomplete"),
        planned_ops=plan.get("ops"),
        spec_ops=set(plan.get("checkable_ops") or plan.get("ops") or []),
        by_regex=not plan.get("as_recorded", True),
        versions=known.lookup(results, known.reported_versions(report["backends"]), envs.read_lock),
        precision=str(plan.get("precision", DEFAULT_PRECISION)),
    )
    return Report(
        kbtool=__version__,
        created=now(),
        seed=report["seed"],
        spec=report["spec"],
        filters=report.get("filters", []),
        grid=report.get("grid"),
        keras_config=report.get("keras_config"),
        active_backend=report.get("active_backend"),
        has_active_backend="active_backend" in report,
        backends=report["backends"],
        results=results,
        known_differences=applied.counts,
        stale_known_differences=applied.stale,
        wall_seconds=report["wall_seconds"],
        resources=report.get("resources"),
        known_file=known_file,
        known_files=files,
        known_refs=[layers.reference(e) for e in applied.used],
        plan=plan or None,
        incomplete=report.get("incomplete"),
        judged_from=merge.part_record(name, report),
        strict=strict,
    ).to_dict()


def other_spec(report: Record, sha256: Optional[str]) -> bool:
    """Whether the report was made with another spec than this kbtool's (both SHA-256s known and different)."""
    theirs = (report.get("spec") or {}).get("sha256")
    return bool(theirs and sha256 and theirs != sha256)


def carried_entries(name: str, report: Record, shipped: Sequence[Any], pool: Sequence[Any] = ()) -> List[Any]:
    """The entries a report of another spec is judged by: those it carries (embedded, or referenced and found by
    hash in `pool`), then the device entries of `shipped` (the known files given)."""
    from kbtool.known import layers
    from kbtool.known.entry import numbered

    if "known_refs" in report:
        own = layers.resolve(name, report, pool)
    elif isinstance(report.get("known_entries"), list):
        own = merge.report_entries(name, report)
    else:
        raise KbtoolError(
            f"{name}: the report was made with another spec and carries no known entries: name a known file (--known)"
        )
    return numbered(list(own) + [entry for entry in shipped if entry.device is not None])


def counts(report: Record) -> Dict[str, int]:
    """{pass, known, unexplained, changed, tf32} over a judged report's results (the command's last line)."""
    out = dict.fromkeys(("pass", "known", "unexplained", "changed"), 0)
    for result in report["results"]:
        if result["status"] == Status.PASS.value:
            out["pass"] += 1
        elif result.get("known"):
            out["known"] += 1
        else:
            out["unexplained"] += 1
            out["changed"] += result["status"] == Status.CHANGED.value
    out.update(device_differences.counts(report["results"]))
    return out
