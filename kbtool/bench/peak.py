"""This machine's peak: a large float32 matmul (NumPy's BLAS) for GFLOP/s and a large copy (read + write) for GB/s,
measured before any backend runs and again after the last one. The best sample stands for the peak (the machine's
capability, not its typical speed; a shared machine's clock moves during a long bench); all samples are kept.

A backend that runs on a device other than the CPU (`--device gpu`) has that device's peak measured the same way
in its worker, through its engine (kbtool/worker/timing.py's "peak" request), when its worker starts and again
before it stops: its rows are rated against it. A CPU bench measures no device peak."""

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

MATMUL_N = 2048
COPY_MB = 64
# a device's, at most: large enough to keep a GPU's cores busy and to copy through its memory, not its cache (an
# H100's L2 holds 50 MB), in about 2 GB of its memory; the worker takes smaller ones where a call lasts DEVICE_MIN_CALL
# seconds already (a slow device)
DEVICE_MATMUL_N = 8192
DEVICE_COPY_MB = 512
DEVICE_MIN_CALL = 0.01
REPEATS = 5  # matmul samples per measurement; the copy's are twice as many (it is quicker and noisier)


def measure(matmul_n: int = MATMUL_N, copy_mb: int = COPY_MB, repeats: int = REPEATS) -> Dict[str, Any]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((matmul_n, matmul_n), dtype=np.float32)
    b = rng.standard_normal((matmul_n, matmul_n), dtype=np.float32)
    np.dot(a, b)  # warm: threads started, pages touched
    matmul = _samples(lambda: np.dot(a, b), repeats)
    source = np.ones(copy_mb * 2**20 // 4, dtype=np.float32)
    target = np.empty_like(source)
    np.copyto(target, source)
    copy = _samples(lambda: np.copyto(target, source), repeats * 2)
    return {
        "matmul_gflops": matmul_gflops(matmul_n, matmul),
        "matmul_n": matmul_n,
        "matmul_samples_s": matmul,
        "copy_gbs": copy_gbs(float(copy_mb), copy),
        "copy_mb": float(copy_mb),
        "copy_samples_s": copy,
    }


def matmul_gflops(n: int, samples: Sequence[float]) -> float:
    """GFLOP/s of the best of n x n matmuls (2 n³ flops each)."""
    return 2.0 * n**3 / min(samples) / 1e9


def copy_gbs(copy_mb: float, samples: Sequence[float]) -> float:
    """GB/s of the best of copies of copy_mb MB (each byte read once and written once)."""
    return 2.0 * copy_mb * 2**20 / min(samples) / 1e9


def _samples(call: Callable[[], Any], repeats: int) -> List[float]:
    out: List[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def combine(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """The peak of two measurements (before and after the backends; a device's: when its worker started and before
    it stopped): the best of each, every sample kept."""
    out = dict(before)
    for key in ("matmul_samples_s", "copy_samples_s"):
        out[key] = list(before[key]) + list(after[key])
    out["matmul_gflops"] = max(before["matmul_gflops"], after["matmul_gflops"])
    out["copy_gbs"] = max(before["copy_gbs"], after["copy_gbs"])
    if "matmul_precisions" in before and "matmul_precisions" in after:
        out["matmul_precisions"] = {
            name: {
                "gflops": max(was["gflops"], after["matmul_precisions"][name]["gflops"]),
                "samples_s": list(was["samples_s"]) + list(after["matmul_precisions"][name]["samples_s"]),
            }
            for name, was in before["matmul_precisions"].items()
            if name in after["matmul_precisions"]
        }
    return out


# ---- a device's peak, measured in its backend's worker


def wants_device_peak(device: Optional[str]) -> bool:
    """Whether a backend on `device` (its launch's; None: a backend without devices) is rated against a device
    peak of its own: on any device but the CPU, whose peak is this machine's."""
    return device not in (None, "cpu")


def device_request(precision: str, before: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The "peak" request's fields (the worker's timing.device_peak): sizes from 1024² and 64 MB up to the largest;
    measured again (`before`: the first measurement's record), exactly the sizes the first took, so that its
    samples and the new ones time the same work."""
    matmul_n = int(before["matmul_n"]) if before else DEVICE_MATMUL_N
    copy_mb = int(before["copy_mb"]) if before else DEVICE_COPY_MB
    return {
        "matmul_n": matmul_n,
        "matmul_n_from": matmul_n if before else 1024,
        "copy_mb": copy_mb,
        "copy_mb_from": copy_mb if before else 64,
        "repeats": REPEATS,
        "min_call": DEVICE_MIN_CALL,
        "precision": precision,
    }


def from_reply(header: Mapping[str, Any], device: str) -> Dict[str, Any]:
    """A device's peak (as this machine's, plus the device, the run's precision and, where the engine has a
    precision switch, the matmul at each precision) from the worker's reply to a "peak" request."""
    n, copy_mb = int(header["matmul_n"]), float(header["copy_mb"])
    record: Dict[str, Any] = {
        "device": device,
        "device_name": header.get("device_name"),
        "precision": header["precision"],
        "matmul_gflops": matmul_gflops(n, header["matmul_samples_s"]),
        "matmul_n": n,
        "matmul_samples_s": list(header["matmul_samples_s"]),
        "copy_gbs": copy_gbs(copy_mb, header["copy_samples_s"]),
        "copy_mb": copy_mb,
        "copy_samples_s": list(header["copy_samples_s"]),
    }
    if header.get("matmul_precisions"):
        record["matmul_precisions"] = {
            name: {"gflops": matmul_gflops(n, samples), "samples_s": list(samples)}
            for name, samples in header["matmul_precisions"].items()
        }
    return record
