"""The device's own peak (`kbtool bench --device gpu`): measured in the backend's worker through its engine (the
worker's timing.device_peak, here in-process on the NumPy reference and through the real protocol on the reference's
worker, its launch said to be on a GPU), rated against by the rows that ran on that device, and shown by every
view; a CPU bench asks for none; a report from before device peaks (a real H100 run) still loads and renders."""

import copy
import dataclasses
import gzip
import io
import json
import os
import time
import types

import numpy as np
import pytest
from rich.console import Console

from kbtool import reference
from kbtool.bench import html_view, markdown_view, measure, peak, terminal, units
from kbtool.bench import report as bench_report
from kbtool.plan import PlannedBackend
from kbtool.runners.registry import launch_for
from kbtool.runners.session import BackendSession
from kbtool.specs import loader
from kbtool.worker import protocol, timing
from tests.helpers import bench
from tests.test_bench_views import synthetic

H100 = os.path.join(os.path.dirname(__file__), "fixtures", "bench-h100-gpu.json.gz")  # /work/shared's, 2026-11-28
SMALL = {"matmul_n": 256, "copy_mb": 4, "repeats": 3, "min_call": 0.0}


def module_like_reference(name, **hooks):
    """The NumPy reference as a backend module of its own, with `hooks` (kbtool_sync, kbtool_set_precision, ...)."""
    module = types.ModuleType(name)
    module.__dict__.update({k: v for k, v in vars(reference).items() if not k.startswith("__")})
    module.__dict__.update(hooks)
    return module


# ---- the worker's side: timing.device_peak on any module


def test_the_device_peak_times_a_matmul_and_a_copy_each_call_synced_inside_its_sample(monkeypatch):
    """Every timed call (and the untimed first one) is synced; the samples are one call each, and the time the
    sync takes is inside them."""
    synced = []

    def kbtool_sync(value):  # an asynchronous engine's: 2 ms until the value is there
        synced.append(np.shape(value))
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass

    module = module_like_reference("synced_peak", kbtool_sync=kbtool_sync)
    reply = timing.device_peak(module, SMALL)
    assert reply["status"] == protocol.OK, reply
    assert reply["matmul_n"] == 256 and reply["copy_mb"] == 4 and reply["precision"] == "default"
    assert len(reply["matmul_samples_s"]) == 3 and len(reply["copy_samples_s"]) == 6
    assert all(s >= 0.002 for s in reply["matmul_samples_s"] + reply["copy_samples_s"])
    # one size each (the largest is below the first doubling): one untimed call, then the samples; the matmul's
    # results n x n, the copy's flat
    assert synced.count((256, 256)) == 1 + 3 and synced.count((4 * 2**20 // 4,)) == 1 + 6
    assert "matmul_precisions" not in reply and reply["device_name"] is None  # no switch, no name: the reference


def test_the_sizes_double_until_a_call_lasts_min_call_and_stop_at_the_largest(monkeypatch):
    made = []

    def make(size):  # a call that lasts size ms (the clock below)
        made.append(size)
        return lambda: clock.__setitem__(0, clock[0] + size * 1e-3)

    clock = [0.0]
    monkeypatch.setattr(timing, "timer", lambda: clock[0])
    assert timing.doublings(1024, 8192) == [1024, 2048, 4096, 8192]
    assert timing.doublings(64, 100) == [64, 100] and timing.doublings(1024, 256) == [256]
    size, _ = timing._sized(make, [1, 2, 4, 8, 16], min_call=0.004)
    assert size == 4 and made == [1, 2, 4]  # the first whose call lasts 4 ms
    made.clear()
    assert timing._sized(make, [1, 2, 4], min_call=1.0)[0] == 4 and made == [1, 2, 4]  # never long enough: the largest


def test_an_engine_with_a_precision_switch_has_its_matmul_timed_at_each_the_runs_first_and_set_back():
    switched = []

    def kbtool_set_precision(name):
        switched.append(name)

    module = module_like_reference(
        "switched_peak", kbtool_precisions=lambda: ["default", "highest"], kbtool_set_precision=kbtool_set_precision
    )
    reply = timing.device_peak(module, dict(SMALL, precision="highest"))
    assert reply["status"] == protocol.OK and reply["precision"] == "highest"
    assert switched == ["highest", "default", "highest"]  # the run's first, the other, the run's again
    assert set(reply["matmul_precisions"]) == {"default", "highest"}
    assert reply["matmul_precisions"]["highest"] == reply["matmul_samples_s"]


def test_an_engine_error_is_the_answer_and_the_precision_is_set_back_all_the_same():
    switched = []

    def dot(x, y):
        if switched[-1] == "highest":
            raise MemoryError("out of device memory")
        return reference.dot(x, y)

    module = module_like_reference(
        "failing_peak", dot=dot, kbtool_precisions=lambda: ["default", "highest"], kbtool_set_precision=switched.append
    )
    reply = timing.device_peak(module, SMALL)
    assert reply["status"] == protocol.RAISED and reply["error"]["type"] == "MemoryError"
    assert switched[-1] == "default"


# ---- the controller's side: the record, two measurements combined, the rates of each row


def reply_of(n=1000, copy_mb=100.0, matmul=(0.5, 0.2, 0.4), copies=(0.1, 0.05), precisions=None):
    header = {
        "status": "ok",
        "device_name": "cuda:0 Some GPU",
        "precision": "default",
        "matmul_n": n,
        "matmul_samples_s": list(matmul),
        "copy_mb": copy_mb,
        "copy_samples_s": list(copies),
    }
    if precisions:
        header["matmul_precisions"] = precisions
    return header


def test_a_device_peak_is_the_best_sample_of_each_and_two_measurements_keep_the_best_and_every_sample():
    first = peak.from_reply(reply_of(precisions={"default": [0.5, 0.2], "highest": [1.0, 0.8]}), "gpu")
    assert first["matmul_gflops"] == pytest.approx(2.0 * 1000**3 / 0.2 / 1e9)
    assert first["copy_gbs"] == pytest.approx(2.0 * 100 * 2**20 / 0.05 / 1e9)
    assert first["matmul_precisions"]["highest"]["gflops"] == pytest.approx(2.0 * 1000**3 / 0.8 / 1e9)
    second = peak.from_reply(
        reply_of(matmul=(0.1,), copies=(0.2,), precisions={"default": [0.1], "highest": [2.0]}), "gpu"
    )
    both = peak.combine(first, second)
    assert both["matmul_gflops"] == second["matmul_gflops"] and both["copy_gbs"] == first["copy_gbs"]
    assert both["matmul_samples_s"] == [0.5, 0.2, 0.4, 0.1] and len(both["copy_samples_s"]) == 3
    assert both["matmul_precisions"]["highest"] == {
        "gflops": first["matmul_precisions"]["highest"]["gflops"],
        "samples_s": [1.0, 0.8, 2.0],
    }
    assert both["device"] == "gpu" and both["device_name"] == "cuda:0 Some GPU"


def test_a_device_peak_measured_again_takes_the_sizes_the_first_took():
    first = peak.device_request("highest")
    assert (first["matmul_n"], first["copy_mb"]) == (peak.DEVICE_MATMUL_N, peak.DEVICE_COPY_MB)
    again = peak.device_request("highest", peak.from_reply(reply_of(n=2048, copy_mb=128.0), "gpu"))
    assert (again["matmul_n"], again["copy_mb"], again["precision"]) == (2048, 128, "highest")
    assert (again["matmul_n_from"], again["copy_mb_from"]) == (2048, 128)  # one size each, no sizing again
    assert (first["matmul_n_from"], first["copy_mb_from"]) == (1024, 64)


def test_only_a_device_other_than_the_cpu_has_a_peak_of_its_own():
    assert not peak.wants_device_peak(None) and not peak.wants_device_peak("cpu")
    assert peak.wants_device_peak("gpu")


def test_each_row_is_rated_against_the_peak_of_the_device_it_ran_on():
    spec = loader.load()
    items, _, _ = measure.plan_items(spec, ["dot"], ["small"])
    family, case = items[0].family, items[0].case
    flops = 2.0 * 64**3

    def row(backend, device=None):
        r = {"op": "dot", "size": "small", "backend": backend, "mode": "eager", "status": "ok", "n": 64.0}
        r.update(outputs=[{"shape": [64, 64], "dtype": "float32"}], samples_s=[1e-4] * 5)
        return dict(r, **({"device": device} if device else {}))

    rows = [row("numpy"), row("keras3-jax", "cpu"), row("keras3-jax-gpu", "gpu"), row("keras3-torch", "gpu")]
    machine = {"matmul_gflops": 100.0, "copy_gbs": 10.0}
    device = {"matmul_gflops": 4000.0, "copy_gbs": 2000.0}
    measure.finish(rows, {("dot", "small"): (family, case)}, machine, device_peaks={"keras3-jax-gpu": device})
    rate = flops / 1e-4 / 1e9
    numpy_row, cpu_row, gpu_row, unmeasured = rows
    assert numpy_row["peak_fraction"] == pytest.approx(rate / 100.0) and numpy_row["peak_source"] == "machine"
    assert cpu_row["peak_fraction"] == pytest.approx(rate / 100.0) and cpu_row["peak_source"] == "machine"
    assert gpu_row["peak_fraction"] == pytest.approx(rate / 4000.0) and gpu_row["peak_source"] == "device"
    # a device whose peak could not be measured: no % peak, never the CPU's in its place
    assert unmeasured["peak_fraction"] is None and "peak_source" not in unmeasured and unmeasured["gflops"] > 0


# ---- through the real protocol: the NumPy reference's worker (kbtool's own Python), its launch said on a GPU


def reference_backend(device):
    return PlannedBackend("numpy", launch=dataclasses.replace(launch_for("numpy"), device=device))


@pytest.fixture
def small_device_peak(monkeypatch):
    monkeypatch.setattr(peak, "DEVICE_MATMUL_N", 256)
    monkeypatch.setattr(peak, "DEVICE_COPY_MB", 4)
    sent = []
    request = BackendSession.request

    def spy(self, req, *args, **kwargs):
        sent.append(req.cmd)
        return request(self, req, *args, **kwargs)

    monkeypatch.setattr(BackendSession, "request", spy)
    return sent


def abs_items():
    items, _, _ = measure.plan_items(loader.load(), ["abs"], ["small"])
    return items, {(i.family.op, i.size): (i.family, i.case) for i in items}


def quick():
    return measure.Settings(sizes=["small"], modes=["eager"], budget=0.005, min_sample=0.001, min_samples=3)


def test_a_backend_on_a_gpu_has_its_device_peak_measured_in_its_worker_before_and_after_its_rows(small_device_peak):
    items, lookup = abs_items()
    infos, results = [], []
    measure.measure_backend(reference_backend("gpu"), items, quick(), infos, results)
    assert small_device_peak == ["overhead", "peak", "bench", "peak"]
    (info,) = infos
    record = info["peak"]
    assert record["device"] == "gpu" and record["matmul_n"] == 256 and record["copy_mb"] == 4.0
    assert len(record["matmul_samples_s"]) == 2 * peak.REPEATS and len(record["copy_samples_s"]) == 4 * peak.REPEATS
    assert record["matmul_gflops"] == pytest.approx(peak.matmul_gflops(256, record["matmul_samples_s"]))
    measure.finish(results, lookup, {"matmul_gflops": 1.0, "copy_gbs": 1e-9}, device_peaks={"numpy": record})
    (r,) = results
    assert r["device"] == "gpu" and r["peak_source"] == "device" and r["peak_kind"] == "copy"
    assert r["peak_fraction"] == pytest.approx(r["gbs"] / record["copy_gbs"])
    assert bench_report.validate(report_with(infos, results)) == []


def test_a_cpu_bench_asks_no_worker_for_a_peak(small_device_peak):
    items, lookup = abs_items()
    for device in (None, "cpu"):
        infos, results = [], []
        small_device_peak.clear()
        measure.measure_backend(reference_backend(device), items, quick(), infos, results)
        assert small_device_peak == ["overhead", "bench"] and "peak" not in infos[0]
        measure.finish(results, lookup, {"matmul_gflops": 10.0, "copy_gbs": 10.0})
        assert results[0]["peak_source"] == "machine" and results[0].get("device") == device


def report_with(infos, results):
    data = copy.deepcopy(synthetic())
    data["backends"], data["results"], data["scaling"] = infos, results, []
    return data


# ---- the views: a device's peak, and a report from before device peaks


def with_device_peak():
    """The synthetic report, its tensorflow rows on a GPU rated against that GPU's peak (the dot rows above it)."""
    data = copy.deepcopy(synthetic())
    gpu = peak.from_reply(
        reply_of(
            n=8192,
            copy_mb=512.0,
            matmul=(0.0028,),
            copies=(0.00037,),
            precisions={"default": [0.0028], "highest": [0.0215]},
        ),
        "gpu",
    )
    gpu["device_name"] = "cuda:0 NVIDIA H100 80GB HBM3"
    for b in data["backends"]:
        if b["name"] == "tensorflow":
            b.update(device="gpu", peak=gpu)
    for r in data["results"]:
        if r["backend"] == "tensorflow" and r["status"] == "ok":
            r.update(device="gpu", peak_source="device")
            r["peak_fraction"] = 1.5 if r["op"] == "dot" else 0.25
        elif r["status"] == "ok":
            r["peak_source"] = "machine"
    return data, gpu


def test_every_view_shows_the_device_peak_at_each_precision_and_which_rows_it_rates():
    data, gpu = with_device_peak()
    assert bench_report.validate(data) == []
    line = units.device_peak_lines(data)[0]
    assert line.startswith("peak (tensorflow on cuda:0 NVIDIA H100 80GB HBM3, in its worker): ")
    assert (
        "{} GFLOP/s float32 matmul at 8192² at default precision (this run's), {} at highest".format(
            units.fmt_rate(gpu["matmul_gflops"]), units.fmt_rate(gpu["matmul_precisions"]["highest"]["gflops"])
        )
        in line
    )
    assert "{} GB/s copy of 512 MB".format(units.fmt_rate(gpu["copy_gbs"])) in line
    out = io.StringIO()
    terminal.render(data, console=Console(file=out, width=250))
    text = out.getvalue()
    assert line in text and "% peak: the rows of tensorflow (on gpu) against their device's peak" in text
    assert "peak (measured now, all cores): 100.0 GFLOP/s" in text  # the CPU's, as before
    gpu_dot = [t for t in text.splitlines() if t.startswith("dot") and "tensorflow" in t]
    assert gpu_dot and all("> 100 %" in t and units.DEVICE_PEAK_FLAG["matmul"] in t for t in gpu_dot)
    numpy_dot = [t for t in text.splitlines() if t.startswith("dot") and "numpy" in t]
    assert numpy_dot and not any("> 100 %" in t for t in numpy_dot)
    md = markdown_view.render(data)
    assert (
        "- Peak (tensorflow on cuda:0 NVIDIA H100 80GB HBM3, in its worker): " in md
        and "in its backend's worker through its engine" in md
    )
    page = html_view.render(data)
    assert "<li>Peak (tensorflow on cuda:0 NVIDIA H100 80GB HBM3, in its worker): " in page
    assert "above its device&#39;s matmul peak (measured at another moment, or a faster kernel)" in page


def test_a_device_whose_peak_could_not_be_measured_says_why_and_a_cpu_bench_says_nothing_new():
    data, _ = with_device_peak()
    for b in data["backends"]:
        if b.get("peak"):
            del b["peak"]
            b["peak_error"] = "raised (MemoryError: out of device memory)"
    assert units.device_peak_lines(data) == [
        "peak (tensorflow on gpu): not measured (raised (MemoryError: out of device memory)): its rows have no % peak"
    ]
    assert units.device_peak_lines(synthetic()) == []
    out = io.StringIO()
    terminal.render(synthetic(), console=Console(file=out, width=200))
    assert "in its worker" not in out.getvalue() and "% peak:" not in out.getvalue()


def test_a_report_from_before_device_peaks_loads_and_renders_its_gpu_rows_against_the_cpu_peak_as_measured():
    """A real H100 run (kbtool bench --device gpu, 2026-11-28): no device peak, no peak_source; its GPU rows were
    rated against the CPU's NumPy peak, and the views say so (and keep their "> 100 %")."""
    data = bench_report.load(H100)
    with gzip.open(H100, "rt") as fh:
        assert data == json.load(fh)
    assert {b["name"]: b["device"] for b in data["backends"]} == {"keras3-jax": "gpu", "keras3-torch": "gpu"}
    assert not any("peak" in b for b in data["backends"]) and not any("peak_source" in r for r in data["results"])
    lines = units.device_peak_lines(data)
    assert lines == [
        f"peak ({name} on gpu): none in this report (written before kbtool measured a device's peak): its rows' % peak is "
        "against this machine's CPU peak"
        for name in ("keras3-jax", "keras3-torch")
    ]
    out = io.StringIO()
    terminal.render(data, console=Console(file=out, width=250))
    text = out.getvalue()
    assert all(line in text for line in lines) and "peak (measured now, all cores): 990.5 GFLOP/s" in text
    dots = [t for t in text.splitlines() if t.startswith("dot ")]
    assert len(dots) == 4 and all("> 100 %" in t and units.PEAK_FLAG["matmul"] in t for t in dots)
    assert "Peak (keras3-torch on gpu): none in this report" in markdown_view.render(data)
    assert "Peak (keras3-jax on gpu): none in this report" in html_view.render(data)


def test_a_gzipped_bench_renders_with_from_and_a_broken_one_is_one_line(tmp_path):
    code, stdout, _ = bench("--from", H100, "-q")
    assert code == 0 and stdout.strip().startswith("bench: 12 measured, 2 unstable")
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00not gzip at all")
    code, _, stderr = bench("--from", str(broken))
    assert code == 2 and "not a readable gzip file" in stderr and len(stderr.strip().splitlines()) == 1
