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


def test_keras3_jax_answers_the_peak_request_with_its_devices_peak_at_both_precisions():
    """Through the real protocol, on the CPU (no GPU here): the same request `bench --device gpu` sends. Its matmul
    is jax's, timed at both precisions (they agree on a CPU), its rates those of its best samples, and of the order
    of NumPy's peak on this machine (both are this machine's cores)."""
    from kbtool.bench import peak
    from kbtool.runners.base import on_device
    from kbtool.runners.messages import Request
    from kbtool.runners.session import BackendSession

    with BackendSession("keras3-jax", on_device(launch_for("keras3-jax"), "cpu")) as session:
        assert session.worker().ready
        reply = session.request(Request("peak", peak.device_request("default")))
    assert reply.header["status"] == "ok", reply.header
    record = peak.from_reply(reply.header, "cpu")
    assert record["device_name"].startswith("cpu") and record["precision"] == "default"
    assert sorted(record["matmul_precisions"]) == ["default", "highest"]
    # sized to the CPU: no more than a call of min_call needs (far below the GPU's 8192² and 512 MB)
    assert 1024 <= record["matmul_n"] < peak.DEVICE_MATMUL_N and 64 <= record["copy_mb"] < peak.DEVICE_COPY_MB
    assert len(record["matmul_samples_s"]) == peak.REPEATS and len(record["copy_samples_s"]) == 2 * peak.REPEATS
    numpy_peak = peak.measure()
    for precision in ("default", "highest"):
        assert 0.1 < record["matmul_precisions"][precision]["gflops"] / numpy_peak["matmul_gflops"] < 10
    assert 0.02 < record["copy_gbs"] / numpy_peak["copy_gbs"] < 10
    print(
        "keras3-jax CPU device peak: {:.1f} GFLOP/s at {}² (default), {:.1f} (highest), {:.2f} GB/s copy of {:.0f} MB; "
        "NumPy's: {:.1f} GFLOP/s, {:.2f} GB/s".format(
            record["matmul_gflops"],
            record["matmul_n"],
            record["matmul_precisions"]["highest"]["gflops"],
            record["copy_gbs"],
            record["copy_mb"],
            numpy_peak["matmul_gflops"],
            numpy_peak["copy_gbs"],
        )
    )


def test_a_bench_on_a_device_rates_its_rows_against_the_device_peak_its_worker_measured(tmp_path, monkeypatch):
    """`kbtool bench` end to end with keras3-jax's launch said to be on a GPU (its worker still computes on the CPU:
    this machine has no GPU): the peak request goes to its worker before and after its rows, its rows are rated
    against that peak, numpy's against this machine's, and every view says which."""
    import dataclasses

    from kbtool.bench import measure

    planned = measure.planned_backends

    def on_a_gpu(names, device="cpu", precision="default"):
        return [
            dataclasses.replace(p, launch=dataclasses.replace(p.launch, device="gpu"))
            if p.launch is not None and p.launch.device
            else p
            for p in planned(names, device, precision)
        ]

    monkeypatch.setattr(measure, "planned_backends", on_a_gpu)
    out, md = tmp_path / "b.json", tmp_path / "b.md"
    args = ["bench", "--backend", "keras3-jax", "--backend", "numpy", "--op", "dot", "--size", "small"]
    result = CliRunner().invoke(main, args + ["--mode", "eager", "-o", str(out), "-o", str(md)])
    assert result.exit_code == 0, result.stdout
    data = json.loads(out.read_text())
    jax_info = next(b for b in data["backends"] if b["name"] == "keras3-jax")
    record = jax_info["peak"]
    assert record["device"] == "gpu" and len(record["matmul_samples_s"]) == 2 * 5  # before and after its rows
    rows = {r["backend"]: r for r in data["results"]}
    assert rows["keras3-jax"]["device"] == "gpu" and rows["keras3-jax"]["peak_source"] == "device"
    assert rows["keras3-jax"]["peak_fraction"] == pytest.approx(rows["keras3-jax"]["gflops"] / record["matmul_gflops"])
    assert "device" not in rows["numpy"] and rows["numpy"]["peak_source"] == "machine"
    assert rows["numpy"]["peak_fraction"] == pytest.approx(rows["numpy"]["gflops"] / data["peak"]["matmul_gflops"])
    assert "peak (keras3-jax on cpu" in result.stdout and "% peak: the rows of keras3-jax (on gpu)" in result.stdout
    assert "- Peak (keras3-jax on cpu" in md.read_text()
