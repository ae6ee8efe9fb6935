"""kbtool.models.emit and `kbtool check --cases`: a finding written as a spec case (exact float32 values, a safe
id), read back into the spec's ops for one run, and every bad case file refused in one line."""

import numpy as np
import pytest

from kbtool.errors import KbtoolError
from kbtool.models import emit
from kbtool.specs import cases, extra_cases, loader
from tests.helpers import invoke_cli

VALUES = np.array([[-1.5, 0.1, np.nan], [1 / 3, -0.0, 2e-40], [np.inf, -np.inf, 3.4e38]], dtype="float32")


@pytest.fixture(scope="module")
def spec():
    return loader.load()


def write(tmp_path, spec, ident="model.mini.tensorflow.dense_1", op="relu", params=None):
    raw = emit.raw_case(spec.ops[op], params or {"x": VALUES, "alpha": 0.1}, ident, "about the finding")
    path = str(tmp_path / "cases.yaml")
    emit.write_cases(path, [emit.EmittedCase(op, raw)])
    return path


def test_ids_are_sanitised():
    assert emit.case_id("text cnn", "keras3-torch", "conv1d/1:0") == "model.text_cnn.keras3-torch.conv1d_1_0"


def test_float32_values_round_trip_exactly_and_the_case_joins_its_op(tmp_path, spec):
    path = write(tmp_path, spec)
    extended = extra_cases.extend(spec, [path])
    [case] = [c for c in cases.cases_for(extended, "relu") if c.id == "model.mini.tensorflow.dense_1"]
    assert case.arrays[0].dtype == np.float32
    assert np.array_equal(case.arrays[0], VALUES, equal_nan=True)
    assert np.signbit(case.arrays[0][1, 1])  # -0.0 stays negative
    assert case.about == "about the finding"
    assert len(extended.ops["relu"]["cases"]) == len(spec.ops["relu"]["cases"]) + 1
    assert extra_cases.extend(spec, []) is spec


def test_tuples_and_lists_of_arrays(spec):
    parts = [np.ones((2, 2), "float32"), np.zeros((2, 1), "float32")]
    raw = emit.raw_case(spec.ops["concatenate"], {"tensors": parts, "axis": -1}, "model.a.b.c")
    assert [i["value"] for i in raw["inputs"]["tensors"]] == [[[1.0, 1.0], [1.0, 1.0]], [[0.0], [0.0]]]
    pooled = emit.raw_case(spec.ops["pool2d"], {"x": np.ones((1, 2, 2, 1), "float32"), "pool_size": (2, 2)}, "p")
    assert pooled["kwargs"] == {"pool_size": [2, 2]}


@pytest.mark.parametrize(
    "text, words",
    [
        ("cases: {no_such_op: [{id: a}]}", "the spec has no op 'no_such_op'"),
        ("cases: {relu: [{id: basic, inputs: [{shape: [2]}]}]}", "duplicate case id 'basic'"),
        ("cases: {relu: [{id: a, inputs: [{shape: [2]}]}, {id: a, inputs: [{shape: [2]}]}]}", "duplicate case id 'a'"),
        ("cases: {relu: [{id: a, inputs: [{shape: [2]}], kwargs: {nope: 1}}]}", "nope"),
        ("cases: {relu: [{id: 'a b'}]}", "does not match"),
        ("cases: [1, 2]", "is not of type 'object'"),
        ("nothing: 1", "cases"),
        ("cases: {relu: [", "invalid YAML"),
        ("", "empty"),
    ],
)
def test_a_bad_case_file_is_one_line(tmp_path, spec, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(KbtoolError) as caught:
        extra_cases.extend(spec, [str(path)])
    message = str(caught.value)
    assert words in message and "\n" not in message and str(path) in message


def test_check_refuses_a_missing_or_bad_case_file_in_one_line(tmp_path):
    result = invoke_cli("check", "--cases", str(tmp_path / "missing.yaml"), "--op", "relu", "--backend", "numpy")
    assert result.exit_code == 2 and "--cases" in result.stderr and "no such file" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: {no_such_op: [{id: a}]}")
    result = invoke_cli("check", "--cases", str(bad), "--op", "relu", "--backend", "numpy")
    assert result.exit_code == 2 and "no op 'no_such_op'" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.backends
def test_an_emitted_case_replays_with_check_cases_on_tensorflow(tmp_path, spec):
    """A relu finding written by emit, replayed by `kbtool check --cases`: tensorflow computes relu right, so the
    replayed case passes on both modes (the case ran: 2 results, no failure)."""
    import json

    path = write(tmp_path, spec)
    report = str(tmp_path / "r.json")
    ident = "model.mini.tensorflow.dense_1"
    result = invoke_cli(
        "check", "--cases", path, "--op", "relu", "--case", ident, "--backend", "tensorflow", "-o", report
    )
    assert result.exit_code == 0, result.stderr
    ran = [(r["case"], r["status"]) for r in json.load(open(report))["results"]]
    assert ran == [(ident, "pass"), (ident, "pass")]
