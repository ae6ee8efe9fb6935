"""This machine's peak: a large float32 matmul (NumPy's BLAS) for GFLOP/s and a large copy (read + write) for GB/s,
measured before any backend runs and again after the last one. The best sample stands for the peak (the machine's
capability, not its typical speed; a shared machine's clock moves during a long bench); all samples are kept."""

import time
from typing import Any, Callable, Dict, List

import numpy as np

MATMUL_N = 2048
COPY_MB = 64


def measure(matmul_n: int = MATMUL_N, copy_mb: int = COPY_MB, repeats: int = 5) -> Dict[str, Any]:
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
        "matmul_gflops": 2.0 * matmul_n**3 / min(matmul) / 1e9,
        "matmul_n": matmul_n,
        "matmul_samples_s": matmul,
        "copy_gbs": 2.0 * source.nbytes / min(copy) / 1e9,
        "copy_mb": float(copy_mb),
        "copy_samples_s": copy,
    }


def _samples(call: Callable[[], Any], repeats: int) -> List[float]:
    out: List[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def combine(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """The peak of two measurements (before and after the backends): the best of each, every sample kept."""
    out = dict(before)
    for key in ("matmul_samples_s", "copy_samples_s"):
        out[key] = list(before[key]) + list(after[key])
    out["matmul_gflops"] = max(before["matmul_gflops"], after["matmul_gflops"])
    out["copy_gbs"] = max(before["copy_gbs"], after["copy_gbs"])
    return out
