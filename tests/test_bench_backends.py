"""`kbtool bench` on the real backends: every backend timed on dot and conv2d, and the dot figure against an
independent measurement taken the plain way (timeit-style, in the same environment, outside kbtool)."""

import json
import statistics
import subprocess

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.runners.registry import BUILTIN, ORACLES, launch_for

ENGINES = [name for name in BUILTIN if name not in ORACLES]  # what bench times

pytestmark = pytest.mark.backends


@pytest.fixture(scope="module")
def dot_conv2d(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "b.json"
    result = CliRunner().invoke(main, ["bench", "--op", "dot", "--op", "conv2d", "-o", str(out)])
    return result, json.loads(out.read_text())


def test_every_backend_is_timed_on_dot_and_conv2d_with_the_figures_the_table_shows(dot_conv2d):
    result, data = dot_conv2d
    assert result.exit_code == 0, result.stdout
    assert {b["name"]: b["status"] for b in data["backends"]} == dict.fromkeys(ENGINES, "available")
    for backend in data["backends"]:
        assert 0 < backend["overhead"]["harness_s"] < 5e-6, backend
        modes = launch_for(backend["name"]).modes
        for op in ("dot", "conv2d"):
            mine = {r["mode"]: r for r in data["results"] if r["op"] == op and r["backend"] == backend["name"]}
            assert sorted(mine) == sorted(modes), (op, backend["name"])
            for r in mine.values():  # measured, or said why not (the backend's own error)
                assert r["status"] == "ok" or (r["status"] == "raised" and r["message"]), r
        for r in (r for r in data["results"] if r["op"] == "dot" and r["backend"] == backend["name"]):
            assert r["status"] == "ok", r
            assert r["min_s"] <= r["median_s"] and r["iqr_s"] >= 0 and r["n_samples"] >= 5
            assert r["one_time"]["total_s"] > 0 and r["gflops"] > 0 and r["peak_fraction"] > 0
            assert r["ratio_to_fastest"] >= 1.0
    lines = result.stdout.splitlines()
    for name in ENGINES:
        assert any(line.startswith(name + ": harness") for line in lines)
        assert any(line.split()[:2] == ["dot", name] for line in lines)  # op, backend (one size: said under it)


INDEPENDENT = {
    "numpy": """
import numpy as np, time
a = np.random.default_rng(0).standard_normal((N, N)).astype("float32"); b = a.copy()
call = lambda: np.dot(a, b)
""",
    "tensorflow": """
import numpy as np, time
import tf_keras.backend as K
a = K.variable(np.random.default_rng(0).standard_normal((N, N)).astype("float32")); b = K.variable(K.eval(a))
call = lambda: K.eval(K.dot(a, b))
""",
}
TIMEIT = """
for _ in range(3): call()
times = []
for _ in range(15):
    t = time.perf_counter(); call(); times.append(time.perf_counter() - t)
print(sorted(times)[len(times) // 2])
"""


def independent_median(backend, n):
    launch = launch_for(backend)
    source = INDEPENDENT[backend].replace("N, N", f"{n}, {n}") + TIMEIT
    out = subprocess.run(
        [launch.argv()[0], "-c", source],
        env=launch.environ(None),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["numpy", "tensorflow"])
def test_the_large_dot_figure_agrees_with_an_independent_measurement(backend, tmp_path):
    before = independent_median(backend, 2048)
    out = tmp_path / "b.json"
    result = CliRunner().invoke(
        main, ["bench", "--op", "dot", "--backend", backend, "--size", "large", "--mode", "eager", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stdout
    after = independent_median(backend, 2048)
    data = json.loads(out.read_text())
    (r,) = data["results"]
    assert r["inputs"][0]["shape"] == [2048, 2048]
    plain = statistics.mean([before, after])
    # the same work timed the plain way, before and after: within 25 % of what bench says (a shared machine)
    assert 0.75 * min(before, after) <= r["median_s"] <= 1.25 * max(before, after), (r["median_s"], before, after)
    assert r["gflops"] == pytest.approx(2.0 * 2048**3 / r["median_s"] / 1e9)
    print(
        "{}: bench {:.2f} ms, plain {:.2f} ms, {:.0%} of the measured peak".format(
            backend, r["median_s"] * 1e3, plain * 1e3, r["peak_fraction"]
        )
    )
