"""Integration: the whole spec on every built-in backend, really executed in their own environments.

Requires `kbtool env install --all` (the README's setup and .ci/run do it). A backend that is not
installed fails these tests with kbtool's own reason: they never skip.
"""
import pytest

from kbtool.check import run_check
from kbtool.plan import make_plan
from kbtool.runners.base import Unavailable
from kbtool.runners.registry import BUILTIN, launch_for, probe
from kbtool.specs import loader

pytestmark = pytest.mark.backends

SPINE_OPS = ["batch_dot", "dot", "transpose", "sum", "mean", "softmax", "concatenate", "reshape", "conv2d",
             "pool2d", "one_hot", "clip"]
EXPECTED_VERSIONS = {"numpy": {"numpy"}, "tensorflow": {"tensorflow", "tf_keras"}, "theano": {"theano", "keras"},
                     "cntk": {"cntk", "keras"}}


@pytest.fixture(scope="module")
def spec():
    return loader.load()


@pytest.mark.parametrize("backend", BUILTIN)
def test_backend_is_available_with_versions(backend):
    info = probe(backend)
    assert info["status"] == "available", info.get("reason")
    assert EXPECTED_VERSIONS[backend] <= set(info["versions"])
    if backend == "cntk":
        assert info["python"].startswith("3.6") and info["versions"]["cntk"].startswith("2.7")
    if backend == "theano":
        assert info["versions"]["theano"] == "1.0.5" and info["versions"]["keras"] == "2.3.1"


@pytest.mark.parametrize("backend", BUILTIN)
def test_whole_spec_on_backend(spec, backend):
    """Every documented function on the real backend: each result passes or is a recorded known difference."""
    try:
        launch_for(backend)
    except Unavailable as exc:
        pytest.fail("{}: {}".format(backend, exc))
    ops = sorted(spec.ops)
    report = run_check(make_plan(spec, ops=ops, backends=[backend], seed=0))
    assert len(ops) == 154
    (info,) = report["backends"]
    assert info["status"] == "available", info.get("reason")
    assert {r["op"] for r in report["results"]} == set(ops)
    unexplained = ["{op} {case} ({mode}): {status}: {message}".format(**r)
                   for r in report["results"] if r["status"] != "pass" and not r.get("known")]
    assert not unexplained, "\n".join(unexplained)
    assert not report["stale_known_differences"], report["stale_known_differences"]
    # the spine ops, written first, must really work on every backend: at least one case passes
    for op in SPINE_OPS:
        assert any(r["status"] == "pass" for r in report["results"] if r["op"] == op), op


def test_custom_backend_inside_a_managed_environment(spec, custom_backend):
    # a user's module that re-exports keras.backend, run inside the theano env (`module@theano`)
    module = custom_backend("userkb", "wrapped", "from keras.backend import *\nfrom keras.backend import batch_dot\n")
    name = module + "@theano"
    report = run_check(make_plan(spec, ops=["batch_dot"], backends=[name], case_patterns=["rank2_default_axes"]),
                       known_entries=[])
    (info,) = report["backends"]
    assert info["status"] == "available" and info["versions"]["theano"] == "1.0.5"
    assert [r["status"] for r in report["results"]] == ["pass", "pass"]
