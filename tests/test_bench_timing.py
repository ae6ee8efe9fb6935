"""The worker's timing loop (kbtool/worker/timing.py), in-process on the NumPy reference: calibration,
warmup, the sample budget, one-time costs apart from the steady state, and the harness's own cost."""

import time
import types

import numpy as np
import pytest

from kbtool import reference
from kbtool.worker import invoke, protocol, timing


def busy(seconds):
    def call():
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return call


class FakeClock:
    """A clock that only a call moves: each call costs exactly `per_call` seconds (no scheduler noise)."""

    def __init__(self, per_call):
        self.now, self.per_call = 0.0, per_call

    def __call__(self):
        return self.now

    def call(self):
        self.now += self.per_call


def test_calibration_picks_the_fewest_loops_of_1_2_5_that_fill_a_sample(monkeypatch):
    clock = FakeClock(0.0004)
    monkeypatch.setattr(timing, "timer", clock)
    loops, made = timing.calibrate(clock.call, min_sample=0.002)
    assert loops == 5 and made == 1 + 2 + 5  # 1 and 2 calls last < 2 ms; 5 calls last >= 2 ms
    clock.per_call = 0.003
    assert timing.calibrate(clock.call, min_sample=0.002)[0] == 1


def test_samples_are_seconds_per_call_until_the_budget_and_the_minimum_count(monkeypatch):
    clock = FakeClock(0.001)
    monkeypatch.setattr(timing, "timer", clock)
    timed = timing.measure(clock.call, budget=0.03, min_sample=0.004, min_samples=4, warmup=0.0)
    assert timed["loops"] == 5  # 5 calls of 1 ms fill a 4 ms sample
    samples = timed["samples"]
    assert len(samples) == 6  # 6 samples of 5 ms reach the 30 ms budget
    assert samples == pytest.approx([0.001] * 6)  # per call, not per sample
    timed = timing.measure(clock.call, budget=0.001, min_sample=0.004, min_samples=9, warmup=0.0)
    assert len(timed["samples"]) == 9  # the minimum count outlasts the budget


def test_real_calls_are_timed_in_seconds_per_call():
    timed = timing.measure(busy(0.001), budget=0.02, min_sample=0.004, min_samples=3, warmup=0.0)
    assert len(timed["samples"]) >= 3 and all(s >= 0.00095 for s in timed["samples"])


def test_a_slow_call_stops_at_max_seconds_with_the_samples_it_has():
    started = time.perf_counter()
    timed = timing.measure(busy(0.05), budget=10, min_sample=0.001, min_samples=50, max_seconds=0.2, warmup=0)
    assert time.perf_counter() - started < 2  # (generous: a loaded machine preempts the busy loop)
    assert 1 <= len(timed["samples"]) < 50 and timed["loops"] == 1


def test_warmup_runs_before_any_sample():
    calls = []
    timed = timing.measure(lambda: calls.append(1), budget=0.001, min_sample=0.0001, min_samples=2, warmup=0.02)
    assert timed["warmup_calls"] > timed["loops"]  # calibration, then warmup loops
    assert len(calls) == timed["warmup_calls"] + timed["loops"] * len(timed["samples"])


@pytest.mark.parametrize("mode", ["eager", "symbolic"])
def test_bench_reply_separates_one_time_costs_and_describes_the_output(mode):
    arrays = [np.ones((64, 32), "float32"), np.ones((32, 16), "float32")]
    request = {
        "cmd": "bench",
        "op": "dot",
        "mode": mode,
        "args": [{"tensor": 0}, {"tensor": 1}],
        "kwargs": {},
        "budget": 0.01,
        "min_sample": 0.001,
        "min_samples": 3,
        "warmup": 0.0,
    }
    reply = timing.bench(reference, request, arrays, [reference])
    assert reply["status"] == protocol.OK
    assert reply["outputs"] == [{"shape": [64, 16], "dtype": "float32"}]
    one_time = reply["one_time"]
    assert set(one_time) == {"build_s", "compile_s", "first_call_s", "total_s"}
    assert (one_time["compile_s"] is None) == (mode == "eager")  # only a graph is compiled
    assert one_time["total_s"] == pytest.approx(
        one_time["build_s"] + (one_time["compile_s"] or 0) + one_time["first_call_s"]
    )
    assert len(reply["samples"]) >= 3 and reply["loops"] >= 1


def test_bench_of_a_missing_op_or_a_raising_call_is_said_not_timed():
    request = {"cmd": "bench", "op": "no_such_op", "mode": "eager", "args": [], "kwargs": {}}
    assert timing.bench(reference, request, [], [reference])["status"] == protocol.UNSUPPORTED
    request = {"cmd": "bench", "op": "dot", "mode": "eager", "args": [{"tensor": 0}, {"tensor": 1}], "kwargs": {}}
    reply = timing.bench(reference, request, [np.ones((2, 3)), np.ones((4, 5))], [reference])
    assert reply["status"] == protocol.RAISED and reply["error"]["type"] == "ValueError"


def test_the_harness_costs_well_under_5_microseconds_per_call_and_is_reported_not_subtracted():
    reply = timing.overhead(reference, {"budget": 0.05, "min_sample": 0.005, "warmup": 0.0})
    assert reply["harness_s"] == pytest.approx(reply["noop_call_s"] - reply["bare_loop_s"])
    assert 0 < reply["noop_call_s"] < 5e-6 and reply["bare_loop_s"] < reply["noop_call_s"]


def test_forced_call_evaluates_every_tensor_of_a_sequence_result():
    evaluated = []

    class Fake:
        @staticmethod
        def eval(t):
            evaluated.append(t)
            return np.zeros(1)

    call = timing.forced_call(Fake, lambda: ("t1", ["t2"], 3), [], {}, invoke.Builder(Fake, [], "eager"))
    call()
    assert evaluated == []  # strings and ints are Python values: nothing to evaluate
    call = timing.forced_call(Fake, lambda: (object(), [object()], 3), [], {}, invoke.Builder(Fake, [], "eager"))
    call()
    assert len(evaluated) == 2


@pytest.mark.parametrize("mode", ["eager", "symbolic"])
def test_an_update_op_is_timed_on_variables_as_keras_applies_it(mode):
    request = {
        "cmd": "bench",
        "op": "update_add",
        "mode": mode,
        "observe": True,
        "args": [{"tensor": 0}, {"tensor": 1}],
        "kwargs": {},
        "budget": 0.005,
        "min_sample": 0.001,
        "min_samples": 3,
        "warmup": 0.0,
    }
    reply = timing.bench(reference, request, [np.zeros((4, 3), "float32"), np.ones((4, 3), "float32")], [reference])
    assert reply["status"] == protocol.OK, reply
    assert (reply["one_time"]["compile_s"] is None) == (mode == "eager")  # symbolic: K.function(updates=[op])


def test_an_op_whose_result_has_no_value_is_timed_as_the_call_alone():
    request = {
        "cmd": "bench",
        "op": "placeholder",
        "mode": "symbolic",
        "then_only": True,
        "args": [],
        "kwargs": {"shape": {"tuple": [2, 3]}},
        "budget": 0.005,
        "min_sample": 0.001,
        "min_samples": 3,
        "warmup": 0.0,
    }
    reply = timing.bench(reference, request, [], [reference])
    assert reply["status"] == protocol.OK and reply["outputs"] == [] and reply["one_time"]["compile_s"] is None


def test_a_call_that_fills_a_sample_by_itself_is_not_calibrated_or_warmed_again():
    calls = []

    def slow():
        calls.append(1)
        busy(0.03)()

    timed = timing.measure(slow, budget=0.0, min_sample=0.01, min_samples=1, max_seconds=0.05, warmup=0.02)
    assert timed["loops"] == 1 and timed["warmup_calls"] == 0 and len(calls) == len(timed["samples"]) <= 2


def test_a_first_call_past_the_limit_is_the_only_sample_and_says_so():
    request = {
        "cmd": "bench",
        "op": "dot",
        "mode": "eager",
        "args": [{"tensor": 0}, {"tensor": 1}],
        "kwargs": {},
        "max_seconds": 1e-9,
    }
    reply = timing.bench(reference, request, [np.ones((8, 8), "float32")] * 2, [reference])
    assert reply["samples"] == [reply["one_time"]["first_call_s"]] and "only sample" in reply["message"]


def test_a_module_kbtool_sync_is_called_on_every_timed_result_inside_the_timed_region():
    """An asynchronous engine's adapter defines kbtool_sync(value) (block until computed): bench calls it on each
    call's result, and the time it takes is part of the samples."""
    synced_backend = types.ModuleType("synced_backend")
    synced_backend.__dict__.update({k: v for k, v in vars(reference).items() if not k.startswith("__")})
    seen = []

    def kbtool_sync(value):
        seen.append(value)
        end = time.perf_counter() + 0.002  # "the device finishes the work": 2 ms per call
        while time.perf_counter() < end:
            pass

    synced_backend.kbtool_sync = kbtool_sync
    request = {
        "cmd": "bench",
        "op": "abs",
        "mode": "eager",
        "args": [{"tensor": 0}],
        "kwargs": {},
        "budget": 0.01,
        "min_sample": 0.001,
        "min_samples": 3,
        "warmup": 0.0,
    }
    reply = timing.bench(synced_backend, request, [np.ones((4, 3), "float32")], [synced_backend])
    assert reply["status"] == protocol.OK and reply["outputs"] == [{"shape": [4, 3], "dtype": "float32"}]
    timed_calls = reply["warmup_calls"] + reply["loops"] * len(reply["samples"])
    assert len(seen) == 1 + timed_calls + 1  # the first call, every timed call, the untimed shape check
    assert all([np.shape(v) for v in value] == [(4, 3)] for value in seen)  # the evaluated result, as timed
    assert min(reply["samples"]) >= 0.0019 and reply["one_time"]["first_call_s"] >= 0.0019
    del synced_backend.kbtool_sync  # without the hook the same op is timed as it returns
    fast = timing.bench(synced_backend, request, [np.ones((4, 3), "float32")], [synced_backend])
    assert min(fast["samples"]) < 0.001
