"""What one call of a benchmark case costs: floating-point operations (from the family's `flops` model) and the
bytes it must move at least (the family's `bytes` model, or its inputs' and outputs' bytes), and what that makes
of a measured time: GFLOP/s, GB/s and the fraction of this machine's peak."""

import numpy as np

from kbtool.specs import shapes


def cost_names(case, outputs):
    """What a cost expression sees: the shape-rule names of the case (input shapes by parameter name, the
    kwargs, data_format), `out` (the first output's shape) and `itemsize` (bytes per element of the first input)."""
    names = dict(case.shape_names)
    names["out"] = list(outputs[0]["shape"]) if outputs else []
    names["itemsize"] = int(case.arrays[0].dtype.itemsize) if case.arrays else 4
    return names


def flops(family, case, outputs):
    """Floating-point operations of one call, or None where the family has no model."""
    if not family.flops:
        return None
    return float(shapes.evaluate(family.flops, cost_names(case, outputs)))


def bytes_moved(family, case, outputs):
    """Bytes one call reads and writes at least."""
    if family.bytes:
        return float(shapes.evaluate(family.bytes, cost_names(case, outputs)))
    read = sum(int(np.asarray(a).nbytes) for a in case.arrays)
    written = sum(
        int(np.prod(o["shape"], dtype=np.int64)) * np.dtype(o["dtype"]).itemsize
        for o in outputs
        if o.get("dtype") and _numeric(o["dtype"])
    )
    return float(read + written)


def _numeric(dtype):
    try:
        return np.dtype(dtype).kind in "biufc"
    except TypeError:
        return False


def rates(flop_count, byte_count, seconds, peak):
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
