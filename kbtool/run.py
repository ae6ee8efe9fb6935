"""Running a plan: every planned case on every runnable backend's worker, each judged against the reference.

One thread per backend drives that backend's worker process; the reference's outcome for a case is computed
once and shared. Produces the backends' info (what each worker said at start) and one Result per
op × case × backend × mode.
"""
import shlex
import time
from concurrent.futures import ThreadPoolExecutor

from . import verdicts
from .reference.oracle import Oracle
from .results import BackendStatus, Result, Status
from .runners.worker import protocol


def run_plan(plan, oracle=None, progress=None, jobs=None, case_timeout=None):
    """Returns (backend infos in plan order, results sorted by op, case, backend, mode)."""
    from .runners.registry import not_installed_info

    oracle = oracle or Oracle()
    infos, results = {}, []
    for slot in plan.backends:
        if slot.launch is None:
            infos[slot.name] = not_installed_info(slot.name, slot.unavailable)
    runnable = plan.runnable
    with ThreadPoolExecutor(max_workers=jobs or max(1, len(runnable))) as pool:
        futures = {slot.name: pool.submit(run_backend, slot.name, slot.launch, plan.work, oracle, plan.seed,
                                          progress, case_timeout) for slot in runnable}
        for name, future in futures.items():
            infos[name], backend_results = future.result()
            results.extend(backend_results)
    order = {slot.name: i for i, slot in enumerate(plan.backends)}
    results.sort(key=lambda r: (r.op, r.case, order[r.backend], r.mode))
    return [infos[slot.name] for slot in plan.backends], results


def run_backend(name, launch, work, oracle, seed, progress=None, case_timeout=None):
    """Every (entry, case) of `work` on one backend, in each of the case's modes."""
    from .runners.client import WorkerClient
    from .runners.registry import backend_info

    client = WorkerClient(launch, **({"case_timeout": case_timeout} if case_timeout else {}))
    hello = client.start()
    info = backend_info(name, hello)
    results = []
    try:
        if info["status"] != BackendStatus.AVAILABLE.value:
            return info, results
        for entry, case in work:
            expected = oracle.expected(case, hello, name)
            for mode in case.modes:
                result = run_case(client, name, entry, case, mode, expected, seed)
                results.append(result)
                if progress:
                    progress(name, result)
    finally:
        info["restarts"] = client.restarts
        client.stop()
    return info, results


def run_case(client, backend, entry, case, mode, expected, seed):
    """One case in one mode on one worker, judged."""
    started = time.monotonic()
    actual = client.request(case.request(mode), case.arrays)
    seconds = time.monotonic() - started
    verdict = verdicts.judge(case, expected, actual, entry.get("shape_rules"))
    result = Result(op=case.op, case=case.id, backend=backend, mode=mode, status=verdict.status,
                    message=verdict.message, seconds=round(seconds, 4),
                    details=verdict.details.as_dict() if verdict.details else None, note=actual[0].get("note"))
    if case.shown and actual[0].get("status") == protocol.OK:
        result.doc_check = verdicts.doc_check(case.shown, verdicts.output_values(*actual))
    if result.status != Status.PASS:
        result.repro = repro_command(result, seed)
    return result


def repro_command(result, seed):
    return "kbtool check --op {} --case {} --backend {} --mode {} --seed {}".format(
        shlex.quote(result.op), shlex.quote(result.case), shlex.quote(result.backend), result.mode, seed)
