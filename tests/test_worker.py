"""The worker protocol and worker lifecycle, on real worker processes (the numpy backend and custom modules)."""

import ast
import io
import os
import subprocess

import numpy as np
import pytest

from kbtool.check.run import run_check
from kbtool.errors import KbtoolError
from kbtool.plan import Selection, make_plan
from kbtool.runners.client import WorkerClient
from kbtool.runners.envs.interpreters import find_path as find_interpreter
from kbtool.runners.messages import Request
from kbtool.runners.registry import launch_for
from kbtool.settings import RunSettings
from kbtool.specs import loader
from kbtool.worker import protocol

from .conftest import ROOT


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype="float32").reshape(2, 3),
        np.array(3.5, dtype="float64"),
        np.zeros((0, 4), dtype="int64"),
        np.array([True, False]),
    ],
)
def test_protocol_roundtrip(array):
    stream = io.BytesIO()
    protocol.write_message(stream, {"cmd": "run", "op": "x"}, [array, array])
    stream.seek(0)
    header, arrays = protocol.read_message(stream)
    assert header["op"] == "x" and header["arrays"] == [len(protocol.array_to_bytes(array))] * 2
    for got in arrays:
        assert got.dtype == array.dtype and got.shape == array.shape and np.array_equal(got, array)


def test_protocol_refuses_object_arrays():
    with pytest.raises(ValueError):
        protocol.array_to_bytes(np.array([object()]))


def test_worker_files_parse_under_python36():
    python36 = find_interpreter("3.6")
    marked = []
    for folder, _, files in os.walk(os.path.join(ROOT, "kbtool", "worker")):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and "py36-compatible" in open(path).read():
                marked.append(path)
    assert len(marked) >= 5
    code = "import ast,sys\nfor p in sys.argv[1:]: ast.parse(open(p).read(), p)"
    subprocess.run([python36, "-c", code] + marked, check=True)


def test_worker_files_import_nothing_outside_stdlib_numpy_and_siblings():
    allowed = {
        "argparse",
        "contextlib",
        "importlib",
        "io",
        "json",
        "os",
        "struct",
        "sys",
        "time",
        "traceback",
        "types",
        "numpy",
        "protocol",
        "shims",
        "steps",
        "inherit",
        "invoke",
        "watchdog",
        "timing",
        "gc",
        "collections",
        "tensorflow",
        "re",
        "tempfile",
        "signal",  # watchdog: the worker dies with its controller
        "scipy",  # scipy: only for sparse inputs, where the env has it (invoke.sparse_matrix)
        "fractions",  # shims.fractions_gcd: old theano releases import fractions.gcd
        "math",
        "plaidml",
        "modelzoo",  # the worker's own package of kbtool models (kbtool/worker/modelzoo/), a sibling
    }  # only in the plaidml env's start-up shim, which plugs its backend into keras
    folder = os.path.join(ROOT, "kbtool", "worker")
    for name in os.listdir(folder):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(folder, name)).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, (name, roots - allowed)


def test_numpy_worker_answers_requests():
    client = WorkerClient(launch_for("numpy"))
    hello = client.start()
    try:
        assert hello["status"] == "ready" and hello["backend"] == "numpy"
        x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
        header, arrays = client.request(
            Request.from_header(
                {
                    "cmd": "run",
                    "op": "batch_dot",
                    "mode": "symbolic",
                    "args": [{"tensor": 0}, {"tensor": 1}],
                    "kwargs": {"axes": {"value": 1}},
                },
                [x, x],
            )
        )
        assert header["status"] == "ok" and arrays[0].tolist() == [[5.0], [25.0]]
        header, _ = client.request(Request("run", {"op": "no_such_op", "args": []}))
        assert header["status"] == "unsupported"
        header, _ = client.request(
            Request(
                "run",
                {"op": "batch_dot", "args": [{"tensor": 0}, {"tensor": 0}], "kwargs": {"axes": {"value": 0}}},
                [x],
            )
        )
        assert header["status"] == "raised" and header["error"]["type"] == "ValueError"
    finally:
        client.stop()


CRASHY = """
import os, time
from kbtool.reference import *  # placeholder, variable, function, eval and the ops
from kbtool.reference import transpose as _transpose

def transpose(x):
    rows = x.shape[0]
    if rows == 3:
        os.abort()          # SIGABRT: the worker dies mid-case
    if rows == 4:
        time.sleep(600)     # hangs: the controller must time out and kill it
    if rows == 6:
        os._exit(7)         # a plain exit
    return _transpose(x)
"""

SPEC = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
  transpose:
    category: shape
    summary: t
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: a_ok, inputs: [{shape: [2, 2]}], modes: [eager]}
      - {id: b_abort, inputs: [{shape: [3, 2]}], modes: [eager]}
      - {id: c_hang, inputs: [{shape: [4, 2]}], modes: [eager]}
      - {id: d_ok_after_restart, inputs: [{shape: [5, 2]}], modes: [eager]}
      - {id: e_exit, inputs: [{shape: [6, 2]}], modes: [eager]}
      - {id: f_ok, inputs: [{shape: [7, 2]}], modes: [eager]}
"""


def test_crashing_and_hanging_custom_backend_costs_only_the_case(tmp_path, custom_backend):
    module = custom_backend("crashy", "kb", CRASHY)
    spec_path = tmp_path / "ops.yaml"
    spec_path.write_text(SPEC)
    spec = loader.load(str(spec_path))
    report = run_check(
        make_plan(spec, Selection(ops=["transpose"], backends=[module]), RunSettings(case_timeout=3, jobs=1)),
        known_entries=[],
    )  # one worker: its restarts are counted in order
    statuses = {r["case"]: r["status"] for r in report["results"]}
    assert statuses == {
        "a_ok": "pass",
        "b_abort": "crash",
        "c_hang": "timeout",
        "d_ok_after_restart": "pass",
        "e_exit": "crash",
        "f_ok": "pass",
    }
    messages = {r["case"]: r["message"] for r in report["results"]}
    assert "SIGABRT" in messages["b_abort"] and "exited with code 7" in messages["e_exit"]
    assert "no answer within 3 s" in messages["c_hang"]
    assert report["backends"][0]["restarts"] == 3
    assert report["summary"]["ok"] is False


def test_custom_backend_that_fails_to_import_is_reported_broken(custom_backend):
    module = custom_backend("brokenkb", "kb", "raise ImportError('no engine here')\n")
    client = WorkerClient(launch_for(module))
    hello = client.start()
    assert hello["status"] == "broken" and "ImportError: no engine here" in hello["error"]


def test_unknown_backend_and_env_are_clear_errors():
    with pytest.raises(KbtoolError, match="unknown backend 'jax'"):
        launch_for("jax")
    with pytest.raises(KbtoolError, match="unknown environment 'pytorch'"):
        launch_for("my.module@pytorch")


def test_call_and_result_arguments_build_losses_and_inspect_results():
    from kbtool import reference
    from kbtool.worker import invoke

    x = np.arange(6, dtype="float64").reshape(2, 3)
    loss = {"call": "sum", "args": [{"call": "square", "args": [{"tensor": 0}]}]}
    header, arrays = invoke.evaluate(
        reference, {"op": "gradients", "mode": "symbolic", "args": [loss, {"list": [{"tensor": 0}]}]}, [x]
    )
    assert header["status"] == "ok" and np.allclose(arrays[0], 2 * x, atol=1e-5)
    request = {
        "op": "placeholder",
        "mode": "symbolic",
        "kwargs": {"shape": {"tuple": [None, 3]}},
        "then": [{"op": "int_shape", "args": [{"result": 0}]}],
        "then_only": True,
    }
    header, _ = invoke.evaluate(reference, request, [])
    assert header["status"] == "ok" and header["outputs"][0]["value"] == [[None, 3]]  # the then-results
