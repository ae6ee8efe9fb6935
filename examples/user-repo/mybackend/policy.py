"""Which ops mybackend computes in half precision: the one deliberate difference from tf_keras.

softsign runs on float16 for float32 inputs (twice the throughput on our accelerators, accuracy ~1e-3 relative);
float64 inputs, and every other op, keep their dtype.
"""

HALF_PRECISION_OPS = frozenset({"softsign"})


def compute_dtype(op, dtype):
    """The dtype mybackend computes `op` in, for an input of `dtype` (a name such as "float32")."""
    if op in HALF_PRECISION_OPS and dtype == "float32":
        return "float16"
    return dtype
