"""`kbtool report devices CPU.json DEVICE.json [--highest REPORT.json ...]`: which results a device computes
otherwise than the CPU, by how much, and of what kind.

The two reports hold runs of the same calls on two devices (`check --device cpu` and `--device gpu`, on one machine,
with one kbtool). Each call both ran is compared by its verdict (status and fingerprint, kbtool/known/fingerprint.py):
the same verdict is the same result, whatever a known difference says of it. A call whose verdict differs is one of

    tf32               fails on the device only, a matmul or convolution within the TF32 bound that passes at
                       --precision highest (kbtool/reports/device_differences.py)
    tf32-unconfirmed   the same, but no --highest report holds the call
    device only        fails on the device only, otherwise
    passes on device   fails on the CPU only (a kernel the CPU lacks, a rounding that helps)
    fails otherwise    fails on both, differently

Exit 1 when a call is `device only` or `fails otherwise`: a device difference nobody has named yet.
"""

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.known import fingerprint
from kbtool.reports import device_differences as dd
from kbtool.reports.text import cell
from kbtool.reports.text import markdown as md
from kbtool.results import Result, Status
from kbtool.vocabulary import DEFAULT_DEVICE

Record = Dict[str, Any]
Call = Tuple[str, str, str, str]  # (op, case, backend, mode)

KINDS = (dd.TF32, dd.TF32_UNCONFIRMED, "device only", "passes on device", "fails otherwise")
UNNAMED = ("device only", "fails otherwise")  # what makes the comparison exit 1


@dataclass
class Change:
    """One call whose verdict differs between the devices: both sides' status, message and numbers."""

    op: str
    case: str
    backend: str
    mode: str
    kind: str
    cpu: Record
    device: Record
    classified: Optional[Record] = None  # device_differences' record, for tf32 kinds

    def as_dict(self) -> Record:
        out: Record = {"op": self.op, "case": self.case, "backend": self.backend, "mode": self.mode}
        out.update(kind=self.kind, cpu=self.cpu, device=self.device)
        if self.classified is not None:
            out["device_difference"] = self.classified
        return out


def _device_of(name: str, report: Record) -> str:
    devices = {r.get("device") or DEFAULT_DEVICE for r in report.get("results") or []}
    if len(devices) != 1:
        raise KbtoolError(
            "{}: its results ran on {} devices ({}); compare one device's run".format(
                name, len(devices), ", ".join(sorted(devices)) or "none"
            )
        )
    return devices.pop()


def _side(record: Mapping[str, Any]) -> Record:
    details = record.get("details") or {}
    out: Record = {"status": record["status"], "fingerprint": fingerprint.of_result(record)}
    for key in ("max_abs_diff", "max_rel_diff"):
        if details.get(key) is not None:
            out[key] = details[key]
    if record.get("margin") is not None:
        out["margin"] = record["margin"]
    return out


def _verdict(record: Mapping[str, Any]) -> str:
    changed = record.get("changed")
    return changed["status"] if changed else str(record["status"])


def compare(
    cpu: Tuple[str, Record],
    device: Tuple[str, Record],
    highest: Sequence[Tuple[str, Record]] = (),
    magnitude: Optional[Any] = None,
) -> Record:
    """The comparison's record: the devices, how many calls each holds and both hold, the changes by kind."""
    (cpu_name, cpu_report), (device_name, device_report) = cpu, device
    if _device_of(cpu_name, cpu_report) != DEFAULT_DEVICE:
        raise KbtoolError(f"{cpu_name}: the first report must be the CPU's run")
    other = _device_of(device_name, device_report)
    if other == DEFAULT_DEVICE:
        raise KbtoolError(
            f"{device_name}: the second report must be a device's run (check --device gpu), not the CPU's"
        )
    by_call = {_call(r): r for r in cpu_report.get("results") or []}
    on_device = {_call(r): r for r in device_report.get("results") or []}
    both = [call for call in on_device if call in by_call]
    highest_results = dd.highest_results(highest)
    lookup = magnitude if magnitude is not None else dd.MagnitudeLookup(seed=int(device_report.get("seed") or 0))
    changes: List[Change] = []
    for call in sorted(both):
        was, now = by_call[call], on_device[call]
        if _verdict(was) == _verdict(now) and fingerprint.of_result(was) == fingerprint.of_result(now):
            continue
        changes.append(_change(call, was, now, highest_results, lookup, other))
    counts = {kind: sum(c.kind == kind for c in changes) for kind in KINDS}
    return {
        "cpu": {"file": cpu_name, "results": len(by_call)},
        "device": {"file": device_name, "name": other, "results": len(on_device)},
        "highest": [name for name, _ in highest],
        "compared": len(both),
        "same": len(both) - len(changes),
        "counts": counts,
        "changes": [c.as_dict() for c in changes],
        "ok": not any(counts[kind] for kind in UNNAMED),
    }


def _call(record: Mapping[str, Any]) -> Call:
    return (str(record["op"]), str(record["case"]), str(record["backend"]), str(record["mode"]))


def _change(call: Call, was: Record, now: Record, highest: Mapping[dd.Key, Record], lookup: Any, device: str) -> Change:
    cpu_passes, device_passes = _verdict(was) == Status.PASS.value, _verdict(now) == Status.PASS.value
    classified = None
    if cpu_passes:
        result = Result(*call, status=Status(_verdict(now)), message=now.get("message", ""))
        result.details, result.device, result.margin = now.get("details"), device, now.get("margin")
        classified = dd.tf32_difference(result, highest.get(call + (device,)), lookup)
        kind = classified["kind"] if classified else "device only"
    elif device_passes:
        kind = "passes on device"
    else:
        kind = "fails otherwise"
    return Change(*call, kind=kind, cpu=_side(was), device=_side(now), classified=classified)


def terminal(comparison: Record, width: int = 80) -> str:
    """The comparison for a terminal: one line per change (call, kind, both sides' largest error), then the counts."""
    lines = []
    for change in comparison["changes"]:
        cpu, device = change["cpu"], change["device"]
        lines.append(
            "{} {} on {} ({}): {}; cpu {}{}, {} {}{}".format(
                cell(change["op"]),
                cell(change["case"]),
                cell(change["backend"]),
                change["mode"],
                change["kind"],
                cpu["status"],
                _error(cpu),
                comparison["device"]["name"],
                device["status"],
                _error(device),
            )[:width]
        )
    lines.append(summary(comparison))
    return "\n".join(lines) + "\n"


def _error(side: Mapping[str, Any]) -> str:
    return f" (max abs diff {side['max_abs_diff']:.3g})" if side.get("max_abs_diff") is not None else ""


def summary(comparison: Record) -> str:
    counts = ", ".join(f"{n} {kind}" for kind, n in comparison["counts"].items() if n) or "none"
    return "kbtool: {} calls on both the cpu and {}: {} the same, {} differ ({}); {}".format(
        comparison["compared"],
        comparison["device"]["name"],
        comparison["same"],
        len(comparison["changes"]),
        counts,
        "ok" if comparison["ok"] else "not ok: a device difference no kind names",
    )


def markdown(comparison: Record) -> str:
    """The comparison as a Markdown page: the counts, then one table row per change."""
    name = comparison["device"]["name"]
    lines = [
        f"# What the {name.upper()} computes otherwise than the CPU",
        "",
        "CPU run: {} ({} results); {} run: {} ({} results){}.".format(
            md(comparison["cpu"]["file"]),
            comparison["cpu"]["results"],
            name,
            md(comparison["device"]["file"]),
            comparison["device"]["results"],
            "; --precision highest runs: " + ", ".join(md(h) for h in comparison["highest"])
            if comparison["highest"]
            else "",
        ),
        "",
        summary(comparison).replace("kbtool: ", "", 1),
        "",
        f"| op | case | backend | mode | kind | cpu | {name} | TF32 bound |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for change in comparison["changes"]:
        bound = (change.get("device_difference") or {}).get("bound")
        lines.append(
            "| {} | {} | {} | {} | {} | {}{} | {}{} | {} |".format(
                md(change["op"]),
                md(change["case"]),
                md(change["backend"]),
                change["mode"],
                change["kind"],
                change["cpu"]["status"],
                _error(change["cpu"]),
                change["device"]["status"],
                _error(change["device"]),
                "" if bound is None else f"{bound:.3g}",
            )
        )
    return "\n".join(lines) + "\n"


def as_json(comparison: Record) -> str:
    return json.dumps(comparison, indent=1, sort_keys=False) + "\n"
