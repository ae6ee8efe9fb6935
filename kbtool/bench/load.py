"""How busy the machine was around a bench: load averages, other processes' CPU use, the CPU clock and governor.

A bench times calls on shared cores: what else runs moves its numbers (most unstable results on a busy machine
are the machine's doing, not the backend's). The bench records, in the report's `machine.load`:

- the load averages (1, 5, 15 minutes) before the first measurement and after the last one, and the CPU count;
- other processes' CPU use during the bench, where /proc/stat is readable: the CPU time every process spent minus
  what this bench and its workers spent (os.times), as a fraction of all cores over the bench's wall time;
- the CPU clock (MHz: min, mean, max over the cores) before and after, from cpufreq's scaling_cur_freq or else
  /proc/cpuinfo, and the cpufreq governor, where readable.

The machine counts as **busy** when the 1-minute load average before the bench passes BUSY_PER_CORE per core, or
other processes used more than BUSY_PER_CORE of all cores during it (without /proc/stat: the 1-minute load
average after the bench, less the one core the bench's own worker keeps busy, passes BUSY_PER_CORE per core).
Every view then says so, with the figures."""

import glob
import os
import time
from typing import Any, Dict, List, Optional

BUSY_PER_CORE = 0.5


def _loadavg() -> Optional[List[float]]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _cpu_times() -> Optional[Dict[str, float]]:
    """All processes' busy and total CPU seconds since boot (/proc/stat), and the CPU count it covers."""
    try:
        with open("/proc/stat") as fh:
            lines = fh.read().splitlines()
        ticks = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, AttributeError):
        return None
    total = [line for line in lines if line.startswith("cpu ")]
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    if not total or not cpus:
        return None
    try:
        values = [float(v) for v in total[0].split()[1:]]
    except ValueError:
        return None
    if len(values) < 4:
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    used = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return {"busy_s": (used - idle) / ticks, "cpus": float(cpus)}


def _own_cpu() -> float:
    """CPU seconds this process and its finished children (the backends' workers) spent."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_clock() -> Optional[Dict[str, Any]]:
    """The cores' current clock in MHz (min, mean, max) and where it was read; None where nothing says."""
    found: List[float] = []
    source = None
    for path in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            with open(path) as fh:
                found.append(float(fh.read().strip()) / 1000.0)  # kHz
        except (OSError, ValueError):
            continue
    if found:
        source = "cpufreq"
    else:
        try:
            with open("/proc/cpuinfo") as fh:
                found = [float(line.split(":", 1)[1]) for line in fh if line.lower().startswith("cpu mhz")]
        except (OSError, ValueError, IndexError):
            found = []
        source = "/proc/cpuinfo" if found else None
    if not found:
        return None
    return {
        "min_mhz": round(min(found), 1),
        "mean_mhz": round(sum(found) / len(found), 1),
        "max_mhz": round(max(found), 1),
        "source": source,
    }


def governor() -> Optional[str]:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


class Watch:
    """Started before a bench measures anything; `record()` after its last measurement gives `machine.load`."""

    def __init__(self) -> None:
        self.loadavg_before = _loadavg()
        self.clock_before = cpu_clock()
        self.cpu_before = _cpu_times()
        self.own_before = _own_cpu()
        self.started = time.monotonic()

    def busy_before(self) -> Optional[str]:
        """Why the machine is busy already (a line for the terminal before the bench starts), or None."""
        cores = os.cpu_count() or 1
        if self.loadavg_before and self.loadavg_before[0] / cores > BUSY_PER_CORE:
            return (
                f"the machine is busy: load average {self.loadavg_before[0]:.2f} on {cores} cores ({self.loadavg_before[0] / cores:.2f} per core, above {BUSY_PER_CORE:g}); "
                "timings will be less stable"
            )
        return None

    def record(self) -> Dict[str, Any]:
        wall = time.monotonic() - self.started
        cores = os.cpu_count() or 1
        after = _cpu_times()
        others = None
        if self.cpu_before and after and wall > 0:
            busy = after["busy_s"] - self.cpu_before["busy_s"] - (_own_cpu() - self.own_before)
            others = round(min(max(busy / (after["cpus"] * wall), 0.0), 1.0), 3)
        loadavg_after = _loadavg()
        return judge(
            {
                "cores": cores,
                "loadavg_before": self.loadavg_before,
                "loadavg_after": loadavg_after,
                "others_cpu": others,
                "clock_before": self.clock_before,
                "clock_after": cpu_clock(),
                "governor": governor(),
                "busy_per_core": BUSY_PER_CORE,
            }
        )


def judge(load: Dict[str, Any]) -> Dict[str, Any]:
    """`load` with `busy` and `reasons` (the figures that made it busy) filled in from its figures."""
    cores = load.get("cores") or 1
    limit = load.get("busy_per_core", BUSY_PER_CORE)
    reasons = []
    before = load.get("loadavg_before")
    if before and before[0] / cores > limit:
        reasons.append(
            f"load average {before[0]:.2f} on {cores} cores before the bench ({before[0] / cores:.2f} per core)"
        )
    if load.get("others_cpu") is not None:
        if load["others_cpu"] > limit:
            reasons.append("other processes used {:.0%} of the CPU time during the bench".format(load["others_cpu"]))
    else:
        after = load.get("loadavg_after")
        if after and max(after[0] - 1.0, 0.0) / cores > limit:
            reasons.append(
                f"load average {after[0]:.2f} on {cores} cores after the bench ({(after[0] - 1.0) / cores:.2f} per core beside the bench's own)"
            )
    return dict(load, busy=bool(reasons), reasons=reasons)


def warning(report: Dict[str, Any]) -> Optional[str]:
    """The line every view shows when the machine was busy during the bench (None when it was not, or when the
    report predates the record)."""
    load = (report.get("machine") or {}).get("load")
    if not load or not load.get("busy"):
        return None
    return "machine busy: {}; timings on a busy machine vary more (more results unstable, medians slower)".format(
        "; ".join(load["reasons"])
    )


def describe(load: Optional[Dict[str, Any]]) -> Optional[str]:
    """One line of the figures (for the machine facts), or None for a report without them."""
    if not load:
        return None
    parts = []
    before, after = load.get("loadavg_before"), load.get("loadavg_after")
    if before or after:
        parts.append(
            "load average (1 min) {} before, {} after on {} cores".format(
                f"{before[0]:.2f}" if before else "?",
                f"{after[0]:.2f}" if after else "?",
                load["cores"],
            )
        )
    if load.get("others_cpu") is not None:
        parts.append("other processes {:.0%} of the CPU time".format(load["others_cpu"]))
    clocks = [c for c in (load.get("clock_before"), load.get("clock_after")) if c]
    if clocks:
        parts.append(
            "clock {:.0f}–{:.0f} MHz ({})".format(
                min(c["min_mhz"] for c in clocks), max(c["max_mhz"] for c in clocks), clocks[0]["source"]
            )
        )
    if load.get("governor"):
        parts.append("governor " + load["governor"])
    return ", ".join(parts) or None
