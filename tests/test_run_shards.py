"""A backend's cases shared by several workers (Launch.workers): the same results, in the same order, as one."""
import dataclasses

from kbtool.plan import make_plan
from kbtool.run import run_plan
from kbtool.runners.registry import launch_for
from kbtool.specs import loader


def run_with(workers):
    def launcher(name):
        return dataclasses.replace(launch_for("numpy"), workers=workers)

    plan = make_plan(loader.load(), ops=["conv2d", "abs"], backends=["numpy"], launcher=launcher, builtin=["numpy"])
    return run_plan(plan)


def test_shared_work_gives_the_same_results_in_the_same_order():
    (one_info,), one = run_with(1)
    (two_info,), two = run_with(2)
    key = lambda r: (r.op, r.case, r.backend, r.mode, r.status, r.message)  # noqa: E731
    assert [key(r) for r in one] == [key(r) for r in two] and len(one) > 40
    assert two_info["workers"] == 2 and "workers" not in one_info
    assert two_info["status"] == one_info["status"] == "available"


def test_no_more_workers_than_cases():
    def launcher(name):
        return dataclasses.replace(launch_for("numpy"), workers=8)

    plan = make_plan(loader.load(), ops=["abs"], backends=["numpy"], case_patterns=["basic"], launcher=launcher,
                     builtin=["numpy"])
    (info,), results = run_plan(plan)
    assert "workers" not in info  # one case: one worker, not eight
    assert len(results) == 2 and all(r.status.value == "pass" for r in results)


def test_a_backends_own_case_timeout_applies_unless_one_is_given(custom_backend):
    from kbtool.runners.custom import launch as custom_launch

    name = custom_backend("slow", "sleeper", "import time\nfrom kbtool.reference import *\n"
                          "from kbtool.reference import abs as _abs\n"
                          "def abs(x):\n    time.sleep(3)\n    return _abs(x)\n")

    def launcher(backend):
        return dataclasses.replace(custom_launch(backend, {}), case_timeout=0.5)

    plan = make_plan(loader.load(), ops=["abs"], backends=[name], case_patterns=["basic"], modes=["eager"],
                     launcher=launcher, builtin=[])
    (_,), results = run_plan(plan)
    assert [r.status.value for r in results] == ["timeout"]
    (_,), results = run_plan(plan, case_timeout=10)  # --timeout wins
    assert [r.status.value for r in results] == ["pass"]


def test_theano_compiles_cold_within_its_own_timeout():
    from kbtool.runners.theano import RECIPE

    assert RECIPE.case_timeout >= 600 and RECIPE.workers == 2
