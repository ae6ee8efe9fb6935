"""The fingerprint of a non-passing result (kbtool/known/fingerprint.py): every part that says what failed counts, and
nothing that varies between runs of the same behaviour does."""

import pytest

from kbtool.known import fingerprint

VALUES = {
    "expected_shape": [3, 4],
    "actual_shape": [3, 4],
    "expected_dtype": "float32",
    "actual_dtype": "float32",
    "max_abs_diff": 0.023,
    "mismatched": 12,
    "size": 12,
    "first_index": [0, 0],
    "mask": "477bba51",
}
MESSAGE = "12 of 12 values differ (max abs diff 0.023, rtol 1e-05, atol 1e-06); first at (0, 0): 0.26 vs reference 0.13"


def test_a_value_difference_is_its_counts_mask_magnitude_first_index_shapes_and_dtypes():
    assert fingerprint.of("fail", MESSAGE, VALUES) == (
        "fail | values differ | shape (3,4) | dtype float32 | values: 12/12 differ mask 477bba51 1e-2 @ (0,0)"
    )
    assert fingerprint.of("fail", "output 1: " + MESSAGE, VALUES).startswith("fail | output 1: values differ |")


@pytest.mark.parametrize(
    "change",
    [
        {"max_abs_diff": 2.3},  # another power of ten
        {"mismatched": 11},
        {"mask": "00000000"},
        {"first_index": [0, 1]},
        {"actual_dtype": "float64"},
        {"actual_shape": [4, 3]},
    ],
)
def test_each_measured_part_counts(change):
    assert fingerprint.of("fail", MESSAGE, dict(VALUES, **change)) != fingerprint.of("fail", MESSAGE, VALUES)


def test_the_same_power_of_ten_is_the_same_fingerprint():
    assert fingerprint.of("fail", MESSAGE, dict(VALUES, max_abs_diff=0.011)) == fingerprint.of("fail", MESSAGE, VALUES)
    assert fingerprint.magnitude(0.0) == "0" and fingerprint.magnitude(float("nan")) == "non-finite"
    assert fingerprint.magnitude(9.99) == "1e0" and fingerprint.magnitude(10.0) == "1e1"


@pytest.mark.parametrize(
    "one, other",
    [
        ("Reshape: input Parameter8096 of Node 'Reshape8097'", "Reshape: input Parameter12 of Node 'Reshape13'"),
        ("Output('Splice8928_Output_0', [], [2 x 3])", "Output('Splice4_Output_0', [], [2 x 3])"),
        (
            "Error in operator linalg_gemm211: [18:09:16] la_op.h:206",
            "Error in operator linalg_gemm0: [07:00:01] la_op.h:206",
        ),
        ("Arguments: /placeholder45: (7, 3)", "Arguments: /placeholder3: (7, 3)"),
        ("for 'Placeholder_12' with input shapes", "for 'Placeholder_1' with input shapes"),
        (  # a sweep found these differ between two runs of one keras release (a loop counted once more)
            "TensorArray output_ta_99: Could not read index 0 twice",
            "TensorArray output_ta_100: Could not read index 0 twice",
        ),
        ("dtype not in list', ['int64', 'uint16'])", "dtype not in list', ['uint16', 'int64'])"),
        (
            "ValueError: bad [CALL STACK] [0x7fe486a76509] + 0x676509",
            "ValueError: bad [CALL STACK] [0x7fb7d7a76509] + 0x9",
        ),
        ("tf_keras.backend has no attribute 'slice'", "mymod has no attribute 'slice'"),
        (
            "Labels length is zero [[node CTCLoss (defined at tmp/ci-home/envs/tensorflow1/lib/ops.py:1748) ]]  "
            "Original stack trace for 'CTCLoss': File \"work/main/kbtool/worker/main.py\", line 172",
            "Labels length is zero [[node CTCLoss (defined at root/.cache/kbtool/envs/tensorflow1/lib/ops.py:1748) ]]  "
            "Original stack trace for 'CTCLoss': File \"tmp/clone/kbtool/worker/main.py\", line 180",
        ),
        (
            "Detected at node 'AvgPool3D' defined at (most recent call last): File \"/a/main.py\", line 1",
            "Detected at node 'AvgPool3D' defined at (most recent call last): File \"/b/x.py\"",
        ),
        (
            "worker killed by signal SIGABRT: INFO:plaidml:Opening device | ERROR:plaidml:syntax error",
            "worker killed by signal SIGSEGV: ERROR:plaidml:syntax error",
        ),
        (
            'with these attrs: [T=DT_DOUBLE, ksize=[1, 2, 2, 2, 1], padding="VALID"] Registered devices: [CPU]',
            'with these attrs: [padding="VALID", T=DT_DOUBLE, ksize=[1, 2, 2, 2, 1]] Registered devices: [CPU]',
        ),
        ("at 0x7f0f064d1a80 in /tmp/tmpab12/x.py", "at 0x7f0f0aaaaaaa in /tmp/tmpzz99/x.py"),
    ],
)
def test_what_a_backend_numbers_as_it_goes_is_blanked(one, other):
    assert fingerprint.normalised_message(one) == fingerprint.normalised_message(other)


@pytest.mark.parametrize(
    "one, other",
    [
        ("cannot reshape array of size 24 into shape (2,3)", "cannot reshape array of size 25 into shape (2,3)"),
        ("dtype float32 != reference int32", "dtype float64 != reference int32"),
        ("Conv2D requires rank 4", "Conv3D requires rank 4"),
        ("TypeError: x", "ValueError: x"),
    ],
)
def test_what_says_what_failed_is_kept(one, other):
    assert fingerprint.normalised_message(one) != fingerprint.normalised_message(other)


def test_a_verdict_on_random_draws_keeps_its_words_not_its_numbers():
    one = fingerprint.of("fail", "mean -0.02587 outside [4.9, 5.1]", {"draws": True})
    assert (
        one
        == fingerprint.of("fail", "mean 0.01644 outside [4.9, 5.1]", {"draws": True})
        == "fail | mean # outside [#, #]"
    )
    assert one != fingerprint.of("fail", "std 0.01644 outside [4.9, 5.1]", {"draws": True})
    dtype = fingerprint.of("fail", "dtype float64 != reference float32", {"draws": True})
    assert dtype == "fail | dtype float64 != reference float32"  # a word's digits are no number
    drawn = {"draws": True, "mismatched": 3232, "size": 10000}
    assert fingerprint.of("fail", "not reproducible (3232 of 10000 differ)", drawn) == fingerprint.of(
        "fail", "not reproducible (3169 of 10000 differ)", dict(drawn, mismatched=3169)
    )


def test_a_long_message_is_clipped():
    text = fingerprint.normalised_message("E" * 500)
    assert len(text) == fingerprint.MAX_MESSAGE and text.endswith("…")


def test_a_changed_result_is_fingerprinted_by_its_verdicts_own_status():
    record = {"status": "changed", "message": "m", "changed": {"status": "error"}}
    assert fingerprint.of_result(record) == "error | m"
