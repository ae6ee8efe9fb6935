"""Benchmark size families (kbtool/bench/families.py and the spec's `bench:` entries): each size is a case the
NumPy reference runs, inputs grow with the size, layer weights never grow, and each flop model agrees with a
count made independently from the reference's own output."""

import numpy as np
import pytest

from kbtool import reference
from kbtool.bench import cost, families
from kbtool.specs import bench_cases, loader
from kbtool.worker import invoke, protocol


def declared(spec):
    return sorted(op for op, entry in spec.ops.items() if entry.get("bench"))


def run_reference(case):
    header, arrays = invoke.evaluate(reference, case.request(case.modes[0]), case.arrays)
    assert header["status"] == protocol.OK, header
    return header, arrays


def test_the_heavy_ops_all_declare_a_family_with_a_flop_model(spec):
    heavy = {
        "dot",
        "batch_dot",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv2d_transpose",
        "separable_conv1d",
        "separable_conv2d",
        "depthwise_conv2d",
        "pool2d",
        "pool3d",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "std",
        "var",
        "logsumexp",
        "rnn",
    }
    assert {op for op in heavy if spec.ops[op].get("bench", {}).get("flops")} == heavy


def test_every_declared_size_runs_on_the_reference_and_grows(spec):
    for op in declared(spec):
        family = families.family_for(spec, op)
        assert family.kind == "spec"
        sizes = [families.bench_case(spec, family, size) for size in families.SIZES]
        run_reference(sizes[0][0])
        elements = [sum(a.size for a in case.arrays) for case, _ in sizes]
        ns = [n for _, n in sizes]
        assert ns == sorted(set(ns)), op
        if elements[0]:  # a creation op's inputs are its kwargs: its output grows instead
            assert elements == sorted(set(elements)), (op, elements)
        for case, _ in sizes:
            assert max(a.size for a in case.arrays or [np.zeros(0)]) <= 10**7


def independent_flops(op, case, out):
    """Counts written from the op's meaning, the input arrays and the reference's actual output."""
    x = case.arrays[0]
    if op == "dot":
        return 2.0 * x.shape[0] * x.shape[1] * case.arrays[1].shape[1]
    if op == "batch_dot":
        return 2.0 * out.size * x.shape[2]
    if op in ("conv1d", "conv2d", "conv3d"):
        kernel = case.arrays[1]
        return 2.0 * out.size * int(np.prod(kernel.shape[:-1]))
    if op == "conv2d_transpose":
        kernel = case.arrays[1]
        return 2.0 * x.size * kernel.shape[0] * kernel.shape[1] * kernel.shape[2]
    if op in ("separable_conv1d", "separable_conv2d"):
        depthwise, pointwise = case.arrays[1], case.arrays[2]
        positions = out.size // out.shape[-1]
        channels = depthwise.shape[-2] * depthwise.shape[-1]
        return 2.0 * positions * channels * (int(np.prod(depthwise.shape[:-2])) + pointwise.shape[-1])
    if op == "depthwise_conv2d":
        return 2.0 * out.size * case.arrays[1].shape[0] * case.arrays[1].shape[1]
    if op in ("pool2d", "pool3d"):
        window = case.args[1]["tuple"]  # pool_size, bound positionally after x
        return 1.0 * out.size * int(np.prod(window))
    return 1.0 * x.size  # reductions and rnn: one operation per input element


def test_each_flop_model_agrees_with_an_independent_count(spec):
    for op in declared(spec):
        family = families.family_for(spec, op)
        if not family.flops:
            continue
        case, _ = families.bench_case(spec, family, "small")
        header, arrays = run_reference(case)
        outputs = [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in arrays]
        assert cost.flops(family, case, outputs) == independent_flops(op, case, arrays[0]), op


def test_every_benchable_op_has_a_family_and_a_scaled_one_never_grows_a_weight(spec):
    kinds = {}
    for op in families.benchable_ops(spec):
        family = families.family_for(spec, op)
        kinds[family.kind] = kinds.get(family.kind, 0) + 1
        if family.kind != "scaled":
            continue
        small, _ = families.bench_case(spec, family, "small")
        large, _ = families.bench_case(spec, family, "large")
        weights = [arg["tensor"] for arg in small.args if isinstance(arg, dict) and arg.get("weight")]
        for index in weights:
            assert small.arrays[index].shape == large.arrays[index].shape, op
        assert sum(a.size for a in large.arrays) > sum(a.size for a in small.arrays), op
    assert kinds["spec"] >= 39 and kinds["scaled"] >= 60


def test_an_alias_is_not_benched_and_an_op_without_a_plain_case_says_why(spec):
    assert not [op for op in families.benchable_ops(spec) if spec.ops[op].get("alias_of")]
    entry = {
        "signature": [{"name": "x", "kind": "tensor"}],
        "cases": [{"id": "r", "inputs": [{"shape": [2]}], "raises": "ValueError"}],
    }

    class OneOp:
        ops = {"odd": entry}

    with pytest.raises(families.FamilyError, match="odd has no case that runs as a plain call"):
        families.family_for(OneOp, "odd")


def test_a_bench_case_that_does_not_bind_is_a_spec_problem(tmp_path):
    text = open(loader.paths.spec_file()).read()
    bad = text.replace(
        "case: {inputs: [{shape: [n, n]}, {shape: [n, n]}]}",
        "case: {inputs: [{shape: [n, n]}, {shape: [n, n]}], kwargs: {no_such_param: 1}}",
        1,
    )
    assert bad != text
    path = tmp_path / "ops.yaml"
    path.write_text(bad)
    with pytest.raises(loader.SpecError) as caught:
        loader.load(str(path))
    assert "dot" in str(caught.value) and "bench" in str(caught.value) and "no_such_param" in str(caught.value)


def test_the_loader_checks_the_very_cases_bench_times(spec):
    # the spec layer owns what a `bench:` section means (specs/bench_cases.py); bench times the same cases
    ops = declared(spec)
    assert ops and families.SIZES == bench_cases.SIZES
    for op in ops:
        family = families.family_for(spec, op)
        for size in families.SIZES:
            raw = bench_cases.declared_case(spec.ops[op], size)
            assert family.raw_case(size) == raw and raw["id"] == "bench." + size
