"""Fault audit of issue #33, second pass: `check --show-inputs` prints the inputs as they are. The call of
`abs special_values` says `x[6] float32 [nan, inf, -inf, -0, 1e-40, -1e-40]`, but the array under it read
`[ nan,  inf, -inf,  -0.,   0.,  -0.]`: fixed notation at 4 decimals turned the subnormals (where backends differ:
flush to zero) into zeros that are not in the input. Fast: no backend runs."""

import numpy as np

from kbtool.specs.call import show_array


def test_a_tiny_value_is_never_shown_as_zero():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40, -1e-40], np.float32)
    (line,) = show_array("x", x)
    assert "1.e-40" in line and "-1.e-40" in line
    assert line.replace(" ", "").count("0.,") == 0  # no 0. in place of the subnormals


def test_ordinary_values_keep_fixed_notation():
    x = np.array([[0.1298, 0.5744, -0.1507], [1.551, 0.0, -2.0]], np.float32)
    text = "\n".join(show_array("x", x))
    assert "e+" not in text and "e-" not in text
    assert "0.1298" in text and "-2." in text
    assert show_array("n", np.array([-2147483648, 1], np.int32)) == ["      n = [-2147483648,           1]"]
