"""The shared pool of worker slots (kbtool/runners/pool.py): who runs what, and that scheduling never changes a result."""

import collections
import dataclasses

import pytest

from kbtool.execute import execute_plan
from kbtool.plan import Selection, Sources, make_plan
from kbtool.runners.pool import BackendLoad, Lane, Pool, default_jobs, rss_kb
from kbtool.runners.registry import launch_for
from kbtool.settings import RunSettings
from kbtool.specs import loader


def lanes_of(**sizes):
    return [Lane(name, {}, collections.deque(range(n))) for name, n in sizes.items()]


def pool_of(rates, min_join_seconds=None, caps=None, **sizes):
    loads = {
        name: BackendLoad(name, case_seconds=rates[name], start_seconds=1.0, cap=(caps or {}).get(name))
        for name in sizes
    }
    return Pool(lanes_of(**sizes), loads, min_join_seconds=min_join_seconds)


# ------------------------------------------------------------------------------------------------ picking
def test_the_longest_estimated_backend_starts_first_then_the_next_longest():
    pool = pool_of({"theano": 0.08, "numpy": 0.001, "cntk": 0.01}, theano=100, numpy=500, cntk=100)
    first, second = pool.pick(), pool.pick()
    assert (first[0].backend, second[0].backend) == ("theano", "cntk")  # 8 s, then 1 s (numpy: 0.5 s)
    assert first[1] == second[1] == 0 and not first[2]  # each backend's first worker: index 0, from the front


def test_every_unstarted_lane_goes_before_a_second_worker_on_a_long_one():
    pool = pool_of({"theano": 1.0, "numpy": 0.001}, min_join_seconds=0, theano=1000, numpy=2)
    assert [pool.pick()[0].backend for _ in range(2)] == ["theano", "numpy"]


def test_a_second_worker_joins_the_long_pole_from_the_back_when_it_pays():
    pool = pool_of({"theano": 1.0}, theano=100)
    lane, index, from_end = pool.pick()
    lane2, index2, from_end2 = pool.pick()
    assert lane2 is lane and (index, index2) == (0, 1) and (from_end, from_end2) == (False, True)
    assert lane.take(from_end) == 0 and lane.take(from_end2) == 99
    assert pool.loads["theano"].most_workers == 2


def test_no_worker_joins_when_its_share_would_not_repay_starting_it():
    pool = pool_of({"numpy": 0.001}, numpy=100)  # 0.1 s of work left; a start costs 1 s
    assert pool.pick() is not None and pool.pick() is None and pool.has_work()


def test_a_backends_cap_bounds_its_workers():
    pool = pool_of({"theano": 1.0}, min_join_seconds=0, caps={"theano": 1}, theano=100)
    assert pool.pick() is not None and pool.pick() is None


def test_released_indices_are_reused_so_each_worker_keeps_its_environment():
    pool = pool_of({"theano": 1.0}, min_join_seconds=0, theano=100)
    a, b = pool.pick(), pool.pick()
    pool.release(a[0], a[1])
    c = pool.pick()
    assert (a[1], b[1], c[1]) == (0, 1, 0)


def test_measured_rates_replace_the_hints():
    pool = pool_of({"a": 0.001, "b": 0.01}, a=50, b=50)
    for _ in range(5):
        pool.finished("a", 1.0)  # a turns out slow: 1 s per case
    assert pool.loads["a"].rate() == 1.0 and pool.estimate(pool.lanes[0]) == 50.0
    assert pool.pick()[0].backend == "a"


def test_stopping_a_backend_drops_its_remaining_cases():
    pool = pool_of({"a": 1.0, "b": 1.0}, a=10, b=10)
    lane, index, from_end = pool.pick()
    pool.stop(lane.backend)
    assert pool.take(lane, from_end) is None and not lane.items
    assert pool.pick()[0].backend != lane.backend


def test_default_jobs_is_the_cores_this_process_may_use():
    assert 1 <= default_jobs() <= 4096


def test_rss_of_a_process_that_is_gone_is_zero():
    import os

    assert rss_kb(os.getpid()) > 0 and rss_kb(2**22 + 7) == 0


# ------------------------------------------------------------------------------------------------ whole runs
def run_with(jobs, workers=None, min_join_seconds=None, ops=("conv2d", "abs")):
    def launcher(name):
        return dataclasses.replace(launch_for("numpy"), workers=workers)

    plan = make_plan(
        loader.load(),
        Selection(ops=list(ops), backends=["numpy"]),
        sources=Sources(launcher=launcher, builtin=["numpy"]),
    )
    usage = {}
    settings = RunSettings(jobs=jobs)
    infos, results = execute_plan(plan, min_join_seconds=min_join_seconds, usage=usage, settings=settings)
    return infos, results, usage


def key(r):
    return (r.op, r.case, r.backend, r.mode, r.status, r.message)


@pytest.mark.parametrize("jobs", [2, 3])
def test_results_and_their_order_do_not_depend_on_the_scheduling(jobs):
    (one_info,), one, usage_one = run_with(1)
    (many_info,), many, usage_many = run_with(jobs, min_join_seconds=0)  # every slot joins the one backend
    assert [key(r) for r in one] == [key(r) for r in many] and len(one) > 40
    assert "workers" not in one_info and many_info["workers"] == jobs
    assert many_info["status"] == one_info["status"] == "available"
    assert usage_one["jobs"] == 1 and usage_many["jobs"] == jobs
    assert usage_many["peak_workers_rss_mb"] > 10 and usage_many["peak_controller_rss_mb"] > 10


def test_jobs_caps_the_workers_and_a_backend_cap_caps_its_own():
    (info,), _, _ = run_with(2, workers=1, min_join_seconds=0)
    assert "workers" not in info  # capped at one worker although two slots were free


def test_no_more_workers_than_cases():
    (info,), results, _ = run_with(8, min_join_seconds=0, ops=["abs"])
    cases = len({r.case for r in results})
    assert [key(r) for r in results] == [key(r) for r in run_with(1, ops=["abs"])[1]]
    spec_cases = len(loader.load().op("abs")["cases"])
    assert cases == spec_cases < 8  # every case ran, and fewer cases than the 8 jobs asked for
    assert info.get("workers", 1) <= cases  # a worker that would find no case is never started


def test_a_backends_own_case_timeout_applies_unless_one_is_given(custom_backend):
    from kbtool.runners.custom import launch as custom_launch

    name = custom_backend(
        "slow",
        "sleeper",
        "import time\nfrom kbtool.reference import *\n"
        "from kbtool.reference import abs as _abs\n"
        "def abs(x):\n    time.sleep(3)\n    return _abs(x)\n",
    )

    def launcher(backend):
        return dataclasses.replace(custom_launch(backend, {}), case_timeout=0.5)

    plan = make_plan(
        loader.load(),
        Selection(ops=["abs"], backends=[name], case_patterns=["basic"], modes=["eager"]),
        sources=Sources(launcher=launcher, builtin=[]),
    )
    (_,), results = execute_plan(plan)
    assert [r.status.value for r in results] == ["timeout"]
    (_,), results = execute_plan(plan, settings=RunSettings(case_timeout=10))  # --timeout wins
    assert [r.status.value for r in results] == ["pass"]


def test_theano_compiles_cold_within_its_own_timeout_and_starts_first():
    from kbtool.runners.registry import RECIPES

    theano = RECIPES["theano"]
    assert theano.case_timeout >= 600 and theano.workers is None
    assert theano.case_seconds == max(r.case_seconds for r in RECIPES.values() if r.name != "plaidml")
