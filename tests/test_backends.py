"""Integration: the whole spec on every built-in backend, really executed in their own environments.

Requires `kbtool env install --all` (the README's setup and .ci/run do it). A backend that is not
installed fails these tests with kbtool's own reason: they never skip.
"""

import pytest

from kbtool.check.run import run_check
from kbtool.plan import Selection, make_plan
from kbtool.runners.base import Unavailable
from kbtool.runners.registry import BUILTIN, launch_for
from kbtool.runners.session import probe
from kbtool.settings import RunSettings

pytestmark = pytest.mark.backends

SPINE_OPS = [
    "batch_dot",
    "dot",
    "transpose",
    "sum",
    "mean",
    "softmax",
    "concatenate",
    "reshape",
    "conv2d",
    "pool2d",
    "one_hot",
    "clip",
]
# what each backend's worker reports: (python, {module: version prefix})
EXPECTED = {
    "numpy": ("3.11", {"numpy": "2."}),
    "tensorflow": ("3.11", {"tensorflow": "2.21", "tf_keras": "2.21"}),
    "tensorflow1": ("3.7", {"tensorflow": "1.15.5", "keras": "2.3.1"}),
    "theano": ("3.11", {"theano": "1.0.5", "keras": "2.3.1"}),
    "cntk": ("3.6", {"cntk": "2.7", "keras": "2.3.1"}),
    "mxnet": ("3.7", {"mxnet": "1.9.1", "keras": "2.2.4.3"}),
    "plaidml": ("3.7", {"plaidml": "0.7.0", "keras": "2.2.4"}),
    "keras3": ("3.11", {"keras": "3.15", "tensorflow": "2.21"}),
    "keras-numpy": ("3.7", {"keras": "2.3.1", "numpy": "1.18", "scipy": "1.7"}),
    "keras3-jax": ("3.11", {"keras": "3.15.1", "jax": "0.10.2", "jaxlib": "0.10.2"}),
    "keras3-torch": ("3.11", {"keras": "3.15.1", "torch": "2.13.0+cpu"}),
    "keras3-tensorflow": ("3.11", {"keras": "3.15.1", "tensorflow": "2.21"}),
    "keras3-numpy": ("3.11", {"keras": "3.15.1", "numpy": "2."}),
    "keras3-openvino": ("3.11", {"keras": "3.15.1", "openvino": "2026.4.1"}),
}
# eager-only backends: no placeholders, so the symbolic mode is said once, not failed per case
EAGER_ONLY = ("keras3", "keras-numpy")


def test_every_builtin_backend_is_listed_available_by_the_cli():
    import json

    from click.testing import CliRunner

    from kbtool.cli import main

    result = CliRunner().invoke(main, ["backends", "--json"])
    infos = {i["name"]: i for i in json.loads(result.stdout)}
    assert result.exit_code == 0 and sorted(infos) == sorted(EXPECTED) == sorted(BUILTIN)
    assert {name: i["status"] for name, i in infos.items()} == dict.fromkeys(EXPECTED, "available")


@pytest.mark.parametrize("backend", BUILTIN)
def test_backend_is_available_with_versions(backend):
    info = probe(backend)
    assert info["status"] == "available", info.get("reason")
    python, versions = EXPECTED[backend]
    assert info["python"].startswith(python + "."), info["python"]
    for module, prefix in versions.items():
        assert info["versions"][module].startswith(prefix), (module, info["versions"])


@pytest.mark.parametrize("backend", [name for name in BUILTIN if name != "numpy"])
def test_each_env_is_exactly_its_lock(backend):
    """What `kbtool env install` built is what the recipe's lock pins, every transitive package."""
    import subprocess

    from kbtool.runners import envs
    from kbtool.runners.registry import RECIPES

    recipe = RECIPES[backend]
    frozen = (
        subprocess.run(
            [recipe.env_python(), "-m", "pip", "freeze"],
            cwd=recipe.env_dir(),
            check=True,
            stdout=subprocess.PIPE,
            env=envs.pip_environ(),
        )
        .stdout.decode()
        .splitlines()
    )
    assert len(envs.read_lock(recipe)) >= 8
    assert envs.lock_drift(recipe, [line for line in frozen if "==" in line]) == []


@pytest.mark.parametrize("backend", BUILTIN)
def test_whole_spec_on_backend(spec, backend):
    """Every documented function on the real backend: each result passes or is a recorded known difference."""
    try:
        launch_for(backend)
    except Unavailable as exc:
        pytest.fail(f"{backend}: {exc}")
    ops = sorted(spec.ops)
    plan = make_plan(spec, Selection(ops=ops, backends=[backend]), settings=RunSettings(seed=0))
    report = run_check(plan)
    assert len(ops) == 154
    (info,) = report["backends"]
    assert info["status"] == "available", info.get("reason")
    modes = {r["mode"] for r in report["results"]}
    if backend in EAGER_ONLY:
        assert modes == {"eager"} and "no placeholder or function" in info["unsupported_modes"]["symbolic"]
    else:
        assert modes == {"eager", "symbolic"} and "unsupported_modes" not in info
    # every op with a case in a mode the backend runs (keras3: K.placeholder, K.function, ... have symbolic cases only)
    runnable = {case.op for _, case in plan.work_for(backend)}
    assert {r["op"] for r in report["results"]} == runnable and len(runnable) >= 145
    unexplained = [
        "{op} {case} ({mode}): {status}: {message}".format(**r)
        for r in report["results"]
        if r["status"] != "pass" and not r.get("known")
    ]
    assert not unexplained, "\n".join(unexplained)
    assert not report["stale_known_differences"], report["stale_known_differences"]
    # the spine ops, written first, must really work on every backend: at least one case passes
    # (keras-numpy's conv2d is numpy_backend.py's conv(x, w, padding, data_format): no case's call fits it, a known
    # difference)
    for op in [op for op in SPINE_OPS if not (backend == "keras-numpy" and op == "conv2d")]:
        assert any(r["status"] == "pass" for r in report["results"] if r["op"] == op), op


def test_custom_backend_inside_a_managed_environment(spec, custom_backend):
    # a user's module that re-exports keras.backend, run inside the theano env (`module@theano`)
    module = custom_backend("userkb", "wrapped", "from keras.backend import *\nfrom keras.backend import batch_dot\n")
    name = module + "@theano"
    report = run_check(
        make_plan(spec, Selection(ops=["batch_dot"], backends=[name], case_patterns=["rank2_default_axes"])),
        known_entries=[],
    )
    (info,) = report["backends"]
    assert info["status"] == "available" and info["versions"]["theano"] == "1.0.5"
    assert [r["status"] for r in report["results"]] == ["pass", "pass"]


def test_keras_numpy_is_keras_2_3_1s_own_numpy_backend_without_tensorflow(spec):
    """keras-numpy really runs keras/backend/numpy_backend.py of the keras 2.3.1 package, TensorFlow not imported
    (the worker would have taken a few seconds to import it), and agrees with the reference where its code does."""
    info = probe("keras-numpy")
    assert info["status"] == "available", info.get("reason")
    assert info["module"] == "keras.backend.numpy_backend"
    assert info["module_file"].endswith("/site-packages/keras/backend/numpy_backend.py")
    assert "/envs/tensorflow1/" in info["module_file"] and info["versions"]["keras"] == "2.3.1"
    assert "tensorflow" not in info["versions"] and info["import_seconds"] < 3
    plan = make_plan(
        spec,
        Selection(ops=["batch_dot", "softmax", "constant", "zeros_like"], backends=["keras-numpy"]),
        settings=RunSettings(seed=0),
    )
    report = run_check(plan)
    results = {(r["op"], r["case"]): r for r in report["results"]}
    assert {r["mode"] for r in report["results"]} == {"eager"}
    assert all(r["status"] == "pass" for (op, _), r in results.items() if op in ("batch_dot", "softmax"))
    assert len([k for k in results if k[0] in ("batch_dot", "softmax")]) >= 10
    # numpy_backend.py's constant drops its own astype(dtype): float64, explained by its known entry
    scalar = results[("constant", "scalar")]
    assert scalar["status"] == "fail" and scalar["message"].startswith("dtype float64 != reference float32")
    assert "np_value.astype(dtype)" in scalar["known"]
    # zeros_like's dtype None: a reference decision recorded in the spec, which keras-numpy's entry points to
    assert "reference_decisions" in results[("zeros_like", "int32_input")]["known"]
    assert any("keras-numpy" in d["differs"] for d in spec.ops["zeros_like"]["reference_decisions"])
