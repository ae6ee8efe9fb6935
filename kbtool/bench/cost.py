"""What one call of a benchmark case costs: floating-point operations (from the family's `flops` model) and the
bytes it must move at least (the family's `bytes` model, or its inputs' and outputs' bytes), and what that makes
of a measured time: GFLOP/s, GB/s and the fraction of this machine's peak."""

from typing import Any, Callable, Dict, List, Optional, Union, cast

import numpy as np

from kbtool.specs import shapes


def cost_names(case: Any, outputs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """What a cost expression sees: the shape-rule names of the case (input shapes by parameter name, the
    kwargs, data_format), `out` (the first output's shape) and `itemsize` (bytes per element of the first input)."""
    names = dict(case.shape_names)
    names["out"] = list(outputs[0]["shape"]) if outputs else []
    names["itemsize"] = int(case.arrays[0].dtype.itemsize) if case.arrays else 4
    return names


def flops(family: Any, case: Any, outputs: List[Dict[str, Any]]) -> Optional[float]:
    """Floating-point operations of one call, or None where the family has no model."""
    if not family.flops:
        return None
    return float(_evaluate(family.flops, cost_names(case, outputs)))


def bytes_moved(family: Any, case: Any, outputs: List[Dict[str, Any]]) -> float:
    """Bytes one call reads and writes at least."""
    if family.bytes:
        return float(_evaluate(family.bytes, cost_names(case, outputs)))
    read = sum(int(np.asarray(a).nbytes) for a in case.arrays)
    written = sum(
        int(np.prod(o["shape"], dtype=np.int64)) * np.dtype(o["dtype"]).itemsize
        for o in outputs
        if o.get("dtype") and _numeric(o["dtype"])
    )
    return float(read + written)


def _evaluate(expression: Any, names: Dict[str, Any]) -> Union[int, float]:
    """specs/shapes.py's evaluate, typed for the cost models (shapes.py is not annotated), looked up at each call."""
    evaluate = cast(Callable[[Any, Dict[str, Any]], Union[int, float]], shapes.evaluate)
    return evaluate(expression, names)


def _numeric(dtype: Any) -> bool:
    try:
        return bool(np.dtype(dtype).kind in "biufc")
    except TypeError:
        return False


def rates(
    flop_count: Optional[float], byte_count: Optional[float], seconds: Optional[float], peak: Dict[str, Any]
) -> Dict[str, Any]:
    """GFLOP/s, GB/s, the fraction of the peak that bounds the op and which peak that is ("matmul" for an op with
    a flop model, else "copy")."""
    if not seconds or seconds <= 0:
        return dict(gflops=None, gbs=None, peak_fraction=None, peak_kind=None)
    gflops = flop_count / seconds / 1e9 if flop_count else None
    gbs = byte_count / seconds / 1e9 if byte_count else None
    if gflops is not None and peak.get("matmul_gflops"):
        return dict(gflops=gflops, gbs=gbs, peak_fraction=gflops / peak["matmul_gflops"], peak_kind="matmul")
    if gbs is not None and peak.get("copy_gbs"):
        return dict(gflops=gflops, gbs=gbs, peak_fraction=gbs / peak["copy_gbs"], peak_kind="copy")
    return dict(gflops=gflops, gbs=gbs, peak_fraction=None, peak_kind=None)
