"""mybackend's precision policy: which ops it computes in half precision (no TensorFlow needed)."""

from mybackend import policy


def test_softsign_of_float32_is_computed_in_float16():
    assert policy.compute_dtype("softsign", "float32") == "float16"


def test_float64_keeps_its_precision():
    assert policy.compute_dtype("softsign", "float64") == "float64"


def test_other_ops_keep_their_dtype():
    assert all(policy.compute_dtype(op, "float32") == "float32" for op in ("relu", "dot", "slice"))
