"""Binding spec cases to signatures (kbtool/specs/binding.py): fast, no backend environment needed."""
import numpy as np
import pytest

from kbtool.runners.worker import steps
from kbtool.specs import binding, loader
from kbtool.specs.binding import BindingError, bind
from kbtool.specs.cases import expand_case

T = "tensor"
DOT = [{"name": "x", "kind": T}, {"name": "y", "kind": T}, {"name": "axes", "default": None}]
CONCAT = [{"name": "tensors", "kind": "tensors"}, {"name": "axis", "default": -1}]
GATHER = [{"name": "reference", "kind": T}, {"name": "indices", "kind": "array"}]
DENSE = [{"name": "x", "kind": T}, {"name": "kernel", "kind": T, "weight": True}]
FOLD = [{"name": "fn", "kind": "step"}, {"name": "elems", "kind": T}, {"name": "initializer", "kind": T},
        {"name": "name", "default": None}]
PHASE = [{"name": "x", "kind": T}, {"name": "alt", "kind": T}, {"name": "training", "kind": "value"}]
RNN = [{"name": "step_function", "kind": "step"}, {"name": "inputs", "kind": T},
       {"name": "initial_states", "kind": "tensors"}, {"name": "go_backwards", "default": False},
       {"name": "mask", "kind": T, "default": None}, {"name": "constants", "default": None},
       {"name": "unroll", "default": False}, {"name": "input_length", "default": None}]
FUNCTION = [{"name": "inputs"}, {"name": "outputs"}, {"name": "updates", "default": None}, {"name": "**kwargs"}]
POOL = [{"name": "x", "kind": T}, {"name": "pool_size", "tuple": True}]
GRADIENTS = [{"name": "loss", "kind": T}, {"name": "variables"}]

S23, S34, MASK = {"shape": [2, 3]}, {"shape": [3, 4]}, {"value": [[1, 1, 0, 1], [0, 1, 1, 0]]}


def t(i, **extra):
    return dict({"tensor": i}, **extra)


@pytest.mark.parametrize("signature,raw,want_args,want_kwargs", [
    # list form: signature order onto tensor params, kwargs onto the rest
    (DOT, {"inputs": [S23, S34], "kwargs": {"axes": 1}}, [t(0), t(1), {"value": 1}], {}),
    # a tensors param takes all the remaining inputs
    (CONCAT, {"inputs": [S23, S23, S34], "kwargs": {"axis": 0}}, [{"list": [t(0), t(1), t(2)]}, {"value": 0}], {}),
    (GATHER, {"inputs": [S23, {"value": [0, 1], "dtype": "int32"}]}, [t(0), {"array": 1}], {}),
    (DOT, {"inputs": [dict(S23, **{"as": "constant"}), S34]}, [{"constant": 0}, t(1)], {}),
    (DENSE, {"inputs": [S23, S34]}, [t(0), t(1, weight=True)], {}),
    # positional up to the first param not given, then keywords
    (DOT, {"inputs": [S23], "kwargs": {"axes": 1}}, [t(0)], {"axes": {"value": 1}}),
    (POOL, {"inputs": [S23], "kwargs": {"pool_size": [2, 2]}}, [t(0), {"tuple": [2, 2]}], {}),
    # mapping form: rnn's mask after go_backwards goes as a keyword, no positional go_backwards needed
    (RNN, {"inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [S23], "mask": MASK},
           "kwargs": {"step_function": "rnn_sum"}},
     [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}], {"mask": t(2)}),
    (RNN, {"inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [], "constants": [S23]},
           "kwargs": {"step_function": "rnn_scaled_sum", "unroll": True}},
     [{"step": "rnn_scaled_sum"}, t(0), {"list": []}], {"constants": {"list": [t(1)]}, "unroll": {"value": True}}),
    # a value param given a tensor by name
    (PHASE, {"inputs": {"x": S23, "alt": S23, "training": {"value": 1, "dtype": "int32"}}}, [t(0), t(1), t(2)], {}),
    # indices follow the mapping's order, not the signature's
    (PHASE, {"inputs": {"alt": S23, "x": S34}, "kwargs": {"training": 0}}, [t(1), t(0), {"value": 0}], {}),
    (FUNCTION, {"inputs": {"inputs": [], "outputs": [dict(S23, **{"as": "constant"})]}},
     [{"list": []}, {"list": [{"constant": 0}]}], {}),
    (FUNCTION, {"inputs": {"inputs": [], "outputs": []}, "kwargs": {"not_a_session_arg": 1}},
     [{"list": []}, {"list": []}], {"not_a_session_arg": {"value": 1}}),
    # step params: bare names, or the {step: name} form
    (FOLD, {"inputs": [S23], "kwargs": {"fn": "add"}}, [{"step": "add"}, t(0)], {}),
    (FOLD, {"inputs": [S23], "kwargs": {"fn": {"step": "multiply"}}}, [{"step": "multiply"}, t(0)], {}),
    (PHASE, {"kwargs": {"x": {"step": "const_one"}, "alt": {"step": "const_zero"}, "training": 1}},
     [{"step": "const_one"}, {"step": "const_zero"}, {"value": 1}], {}),
    # ph_shape from none_dims: the literal value's shape, or the shape
    (DOT, {"inputs": [{"value": [[1, 2, 3], [4, 5, 6]], "none_dims": [0]}, dict(S34, none_dims=[1])]},
     [t(0, ph_shape=[None, 3]), t(1, ph_shape=[3, None])], {}),
    # raw args: taken as they are; kwargs past them still bind
    (GRADIENTS, {"inputs": [S23], "args": [{"call": "sum", "args": [t(0)]}, {"list": [t(0)]}]},
     [{"call": "sum", "args": [t(0)]}, {"list": [t(0)]}], {}),
    (RNN, {"inputs": [S23, S23], "args": [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}], "kwargs": {"unroll": True}},
     [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}], {"unroll": {"value": True}}),
])
def test_bind(signature, raw, want_args, want_kwargs):
    bound = bind("op", {"signature": signature}, raw)
    assert bound.args == want_args
    assert bound.kwargs == want_kwargs


KNOWN = ", ".join(sorted(steps.STEPS))


@pytest.mark.parametrize("signature,raw,path,message", [
    (DOT, {"inputs": [S23, S34], "kwargs": {"axis": 1}}, ["kwargs", "axis"],
     "'axis' is not a parameter of op (x, y, axes)"),
    (DOT, {"inputs": {"x": S23, "z": S34}}, ["inputs", "z"], "'z' is not a parameter of op (x, y, axes)"),
    (DOT, {"inputs": {"x": S23, "y": S34}, "kwargs": {"y": 2}}, ["kwargs", "y"],
     "'y' is given twice: as inputs.y and as kwargs.y"),
    (DOT, {"inputs": [S23], "kwargs": {"x": 2}}, ["kwargs", "x"], "'x' is given twice: by inputs[0] and as kwargs.x"),
    (PHASE, {"inputs": [S23, S23, {"value": 1, "dtype": "int32"}]}, ["inputs", 2],
     "inputs[2] is left over: op has no tensor parameter left to take it (name its parameter: `inputs: {name: ...}`)"),
    (PHASE, {"inputs": {"x": S23}, "args": [t(0)]}, ["args"],
     "raw args take the inputs as a plain list of arrays, not by name; bind the inputs by name without args, "
     "or list them"),
    (RNN, {"inputs": [S23, S23], "kwargs": {"step_function": "rnn_sum"}, "args": [{"step": "rnn_sum"}, t(0)]},
     ["kwargs", "step_function"], "kwargs.step_function is ignored: args already gives parameter 1 (step_function)"),
    (FOLD, {"inputs": [S23], "kwargs": {"fn": "ad"}}, ["kwargs", "fn"], "unknown step 'ad' (known: {})".format(KNOWN)),
    (FOLD, {"inputs": [S23], "kwargs": {"fn": {"step": "ad"}}}, ["kwargs", "fn", "step"],
     "unknown step 'ad' (known: {})".format(KNOWN)),
    (PHASE, {"kwargs": {"x": {"step": "one"}, "alt": {"step": "const_zero"}}}, ["kwargs", "x", "step"],
     "unknown step 'one' (known: {})".format(KNOWN)),
    (RNN, {"inputs": [S23], "args": [{"step": "rnn_summ"}, t(0)]}, ["args", 0, "step"],
     "unknown step 'rnn_summ' (known: {})".format(KNOWN)),
    (GRADIENTS, {"inputs": [S23], "args": [{"list": [t(0), t(1)]}]}, ["args", 0, "list", 1, "tensor"],
     "no input 1: the case has 1 input(s)"),
    (DOT, {"inputs": [{"shape": [3], "dist": "randint", "low": 3, "high": 3}, S23]}, ["inputs", 0, "low"],
     "randint needs low < high, got low 3 and high 3"),
    (DOT, {"inputs": {"x": S23, "y": {"shape": [3], "dtype": "int32", "high": 0}}}, ["inputs", "y", "high"],
     "randint needs low < high, got low 0 and high 0 (defaults: low 0, high 5)"),
    (DOT, {"inputs": [S23, {"value": 300, "dtype": "uint8"}]}, ["inputs", 1, "value"],
     "value 300 is not a uint8 array: out of range (0 to 255)"),
    (CONCAT, {"inputs": {"tensors": [S23, {"value": "abc"}]}}, ["inputs", "tensors", 1, "value"],
     "value 'abc' is not a float32 array: could not convert string to float: 'abc'"),
])
def test_binding_problems(signature, raw, path, message):
    found = binding.problems("op", {"signature": signature}, raw)
    assert [(p.path, p.message) for p in found] == [(path, message)]
    with pytest.raises(BindingError) as info:
        bind("op", {"signature": signature}, raw)
    assert info.value.path == path and str(info.value) == "{}: {}".format(binding.dotted(path), message)


def test_ragged_value_is_a_problem():
    (problem,) = binding.problems("op", {"signature": DOT}, {"inputs": [{"value": [[1, 2], [3]]}, S23]})
    assert problem.path == ["inputs", 0, "value"]
    assert problem.message.startswith("value [[1, 2], [3]] is not a float32 array: ")


def test_var_keyword_signature_takes_unknown_kwargs_and_inputs():
    bound = bind("op", {"signature": FUNCTION}, {"inputs": {"inputs": [S23], "outputs": [], "feed": S34},
                                                 "kwargs": {"name": "f"}})
    assert bound.args == [{"list": [t(0)]}, {"list": []}]
    assert bound.kwargs == {"feed": t(1), "name": {"value": "f"}}


@pytest.mark.parametrize("args,kwargs,want", [
    ([t(0), {"list": [t(1), t(2)]}], {"mask": t(3)}, [0, 1, 2, 3]),
    ([], {"b": t(2), "a": t(0)}, [2, 0]),  # kwargs in their order
    ([{"list": [{"list": [t(0), {"array": 1}]}, {"list": [t(2), {"array": 3}]}]}], {}, [0, 2]),
    ([{"call": "sum", "args": [{"call": "dot", "args": [t(1), t(0)]}]}, {"list": [t(0), t(1)]}], {}, [1, 0]),
    ([{"list": [t(0), t(0)]}], {}, [0]),  # the worker builds a tensor named twice once
    ([{"constant": 0}, {"array": 1}, t(2, weight=True), {"step": "add"}, {"value": 3}], {}, [2]),
])
def test_tensor_indices(args, kwargs, want):
    assert binding.tensor_indices(args, kwargs) == want


def test_case_carries_tensor_indices_in_worker_order():
    raw = {"id": "c", "inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [S23, S23], "mask": MASK},
           "kwargs": {"step_function": "rnn_two_states"}}
    case = expand_case("rnn", {"signature": RNN}, raw, seed=0)
    assert case.tensor_indices == [0, 1, 2, 3]
    assert [a.shape for a in case.arrays] == [(2, 4, 3), (2, 3), (2, 3), (2, 4)]
    assert case.shape_names["initial_states"] == [[2, 3], [2, 3]] and case.shape_names["mask"] == [2, 4]


def test_list_and_mapping_forms_draw_identical_arrays():
    inputs = [{"shape": [2, 3]}, {"shape": [2, 3], "dist": "uniform"}, {"value": 1, "dtype": "int32"}]
    old = expand_case("in_train_phase", {"signature": PHASE},
                      {"id": "c", "inputs": inputs, "args": [t(0), t(1), t(2)]}, seed=3)
    new = expand_case("in_train_phase", {"signature": PHASE},
                      {"id": "c", "inputs": dict(zip(["x", "alt", "training"], inputs))}, seed=3)
    assert [(a.dtype, a.shape, a.tobytes()) for a in old.arrays] == [(a.dtype, a.shape, a.tobytes()) for a in new.arrays]
    assert old.request("symbolic") == new.request("symbolic")
    assert not np.array_equal(old.arrays[0], old.arrays[1])  # each index draws its own values


def test_shipped_spec_keeps_raw_args_only_where_the_signature_cannot_express_it():
    def named(spec):  # tensor indices, each time one is named
        return ([spec["tensor"]] if "tensor" in spec else []) + [
            i for item in spec.get("list", []) + spec.get("args", []) for i in named(item)]

    def inexpressible(args):
        nested = any("list" in item for spec in args for item in spec.get("list", []))
        calls = any("call" in spec for spec in args)
        indices = [i for spec in args for i in named(spec)]
        return nested or calls or len(indices) != len(set(indices))

    spec = loader.load()
    raw = {(op, c["id"]): c["args"] for op, entry in spec.ops.items() for c in entry.get("cases", []) if "args" in c}
    assert sorted(raw) == [("batch_get_value", "same_variable_twice")] + [
        ("batch_set_value", c) for c in ("float64_value_into_float32", "mixed_dtypes", "one", "two")] + [
        ("function", "identity"), ("gradients", "square"), ("gradients", "two_inputs")]
    assert [key for key, args in raw.items() if not inexpressible(args)] == []


HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
  fold:
    category: control
    summary: x
    documented_in: [ko-2.2]
    signature:
      - {name: fn, kind: step}
      - {name: elems, kind: tensor}
    cases:
"""
LINE = HEADER.count("\n") + 1  # the first case's line


@pytest.mark.parametrize("case,where,message", [
    ("{id: a, inputs: [{shape: [3]}], kwargs: {fn: ad}}", "cases[0].kwargs.fn",
     "unknown step 'ad' (known: {})".format(KNOWN)),
    ("{id: a, inputs: [{shape: [3]}], kwargs: {fn: add, axis: 0}}", "cases[0].kwargs.axis",
     "'axis' is not a parameter of fold (fn, elems)"),
    ("{id: a, inputs: [{shape: [3]}], kwargs: {fn: add}, args: [{step: add}, {tensor: 0}]}", "cases[0].kwargs.fn",
     "kwargs.fn is ignored: args already gives parameter 1 (fn)"),
    ("{id: a, inputs: [{shape: [3], dtype: int32, low: 4, high: 2}], kwargs: {fn: add}}", "cases[0].inputs[0].low",
     "randint needs low < high, got low 4 and high 2"),
    ("{id: a, inputs: {elems: {value: [1, -1], dtype: uint8}}, kwargs: {fn: add}}", "cases[0].inputs.elems.value",
     "value [1, -1] is not a uint8 array: out of range (0 to 255)"),
])
def test_loader_reports_binding_problems_at_the_case_line(tmp_path, case, where, message):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "      - " + case + "\n")
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    assert info.value.problems == ["{}:{}: ops.fold.{}: {}".format(path, LINE, where, message)]


def test_loader_checks_example_cases(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER.replace("    cases:\n", """    examples:
      - id: e
        docs: [ko-2.2]
        source: fold
        case:
          inputs: {elems: {shape: [3]}}
          kwargs: {fn: {step: ad}}
"""))
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    assert info.value.problems == ["{}:{}: ops.fold.examples[0].case.kwargs.fn.step: unknown step 'ad' (known: {})"
                                   .format(path, LINE + 5, KNOWN)]


def test_schema_accepts_mapping_inputs_and_rejects_bad_values(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "      - {id: a, inputs: {elems: [{shape: [3]}, {value: 1}]}, kwargs: {fn: add}}\n")
    assert loader.load(str(path)).ops["fold"]["cases"][0]["inputs"]["elems"][1] == {"value": 1}
    path.write_text(HEADER + "      - {id: a, inputs: {elems: 3}, kwargs: {fn: add}}\n")
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    (problem,) = info.value.problems
    assert problem.startswith("{}:{}: ops.fold.cases[0].inputs".format(path, LINE))
