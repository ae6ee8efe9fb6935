"""Binding spec cases to signatures (kbtool/specs/binding.py): fast, no backend environment needed."""

import numpy as np
import pytest

from kbtool.specs import binding, loader
from kbtool.specs.binding import BindingError, bind
from kbtool.specs.cases import expand_case
from kbtool.worker import steps

T = "tensor"
DOT = [{"name": "x", "kind": T}, {"name": "y", "kind": T}, {"name": "axes", "default": None}]
CONCAT = [{"name": "tensors", "kind": "tensors"}, {"name": "axis", "default": -1}]
GATHER = [{"name": "reference", "kind": T}, {"name": "indices", "kind": "array"}]
DENSE = [{"name": "x", "kind": T}, {"name": "kernel", "kind": T, "weight": True}]
FOLD = [
    {"name": "fn", "kind": "step"},
    {"name": "elems", "kind": T},
    {"name": "initializer", "kind": T},
    {"name": "name", "default": None},
]
PHASE = [{"name": "x", "kind": T}, {"name": "alt", "kind": T}, {"name": "training", "kind": "value"}]
RNN = [
    {"name": "step_function", "kind": "step"},
    {"name": "inputs", "kind": T},
    {"name": "initial_states", "kind": "tensors"},
    {"name": "go_backwards", "default": False},
    {"name": "mask", "kind": T, "default": None},
    {"name": "constants", "default": None},
    {"name": "unroll", "default": False},
    {"name": "input_length", "default": None},
]
FUNCTION = [{"name": "inputs"}, {"name": "outputs"}, {"name": "updates", "default": None}, {"name": "**kwargs"}]
POOL = [{"name": "x", "kind": T}, {"name": "pool_size", "tuple": True}]
GRADIENTS = [{"name": "loss", "kind": T}, {"name": "variables"}]

S23, S34, MASK = {"shape": [2, 3]}, {"shape": [3, 4]}, {"value": [[1, 1, 0, 1], [0, 1, 1, 0]]}


def t(i, **extra):
    return dict({"tensor": i}, **extra)


@pytest.mark.parametrize(
    "signature,raw,want_args,want_kwargs",
    [
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
        (
            RNN,
            {
                "inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [S23], "mask": MASK},
                "kwargs": {"step_function": "rnn_sum"},
            },
            [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}],
            {"mask": t(2)},
        ),
        (
            RNN,
            {
                "inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [], "constants": [S23]},
                "kwargs": {"step_function": "rnn_scaled_sum", "unroll": True},
            },
            [{"step": "rnn_scaled_sum"}, t(0), {"list": []}],
            {"constants": {"list": [t(1)]}, "unroll": {"value": True}},
        ),
        # a value param given a tensor by name
        (PHASE, {"inputs": {"x": S23, "alt": S23, "training": {"value": 1, "dtype": "int32"}}}, [t(0), t(1), t(2)], {}),
        # indices follow the mapping's order, not the signature's
        (PHASE, {"inputs": {"alt": S23, "x": S34}, "kwargs": {"training": 0}}, [t(1), t(0), {"value": 0}], {}),
        (
            FUNCTION,
            {"inputs": {"inputs": [], "outputs": [dict(S23, **{"as": "constant"})]}},
            [{"list": []}, {"list": [{"constant": 0}]}],
            {},
        ),
        (
            FUNCTION,
            {"inputs": {"inputs": [], "outputs": []}, "kwargs": {"not_a_session_arg": 1}},
            [{"list": []}, {"list": []}],
            {"not_a_session_arg": {"value": 1}},
        ),
        # step params: bare names, or the {step: name} form
        (FOLD, {"inputs": [S23], "kwargs": {"fn": "add"}}, [{"step": "add"}, t(0)], {}),
        (FOLD, {"inputs": [S23], "kwargs": {"fn": {"step": "multiply"}}}, [{"step": "multiply"}, t(0)], {}),
        (
            PHASE,
            {"kwargs": {"x": {"step": "const_one"}, "alt": {"step": "const_zero"}, "training": 1}},
            [{"step": "const_one"}, {"step": "const_zero"}, {"value": 1}],
            {},
        ),
        # ph_shape from none_dims: the literal value's shape, or the shape
        (
            DOT,
            {"inputs": [{"value": [[1, 2, 3], [4, 5, 6]], "none_dims": [0]}, dict(S34, none_dims=[1])]},
            [t(0, ph_shape=[None, 3]), t(1, ph_shape=[3, None])],
            {},
        ),
        # raw args: taken as they are; kwargs past them still bind
        (
            GRADIENTS,
            {"inputs": [S23], "args": [{"call": "sum", "args": [t(0)]}, {"list": [t(0)]}]},
            [{"call": "sum", "args": [t(0)]}, {"list": [t(0)]}],
            {},
        ),
        (
            RNN,
            {"inputs": [S23, S23], "args": [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}], "kwargs": {"unroll": True}},
            [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}],
            {"unroll": {"value": True}},
        ),
    ],
)
def test_bind(signature, raw, want_args, want_kwargs):
    bound = bind("op", {"signature": signature}, raw)
    assert bound.args == want_args
    assert bound.kwargs == want_kwargs


KNOWN = ", ".join(sorted(steps.STEPS))


@pytest.mark.parametrize(
    "signature,raw,path,message",
    [
        (
            DOT,
            {"inputs": [S23, S34], "kwargs": {"axis": 1}},
            ["kwargs", "axis"],
            "'axis' is not a parameter of op (x, y, axes)",
        ),
        (DOT, {"inputs": {"x": S23, "z": S34}}, ["inputs", "z"], "'z' is not a parameter of op (x, y, axes)"),
        (
            DOT,
            {"inputs": {"x": S23, "y": S34}, "kwargs": {"y": 2}},
            ["kwargs", "y"],
            "'y' is given twice: as inputs.y and as kwargs.y",
        ),
        (
            DOT,
            {"inputs": [S23], "kwargs": {"x": 2}},
            ["kwargs", "x"],
            "'x' is given twice: by inputs[0] and as kwargs.x",
        ),
        (
            PHASE,
            {"inputs": [S23, S23, {"value": 1, "dtype": "int32"}]},
            ["inputs", 2],
            "inputs[2] is left over: op has no tensor parameter left to take it (name its parameter: `inputs: {name: ...}`)",
        ),
        (
            PHASE,
            {"inputs": {"x": S23}, "args": [t(0)]},
            ["args"],
            "raw args take the inputs as a plain list of arrays, not by name; bind the inputs by name without args, "
            "or list them",
        ),
        (
            RNN,
            {"inputs": [S23, S23], "kwargs": {"step_function": "rnn_sum"}, "args": [{"step": "rnn_sum"}, t(0)]},
            ["kwargs", "step_function"],
            "kwargs.step_function is ignored: args already gives parameter 1 (step_function)",
        ),
        (FOLD, {"inputs": [S23], "kwargs": {"fn": "ad"}}, ["kwargs", "fn"], f"unknown step 'ad' (known: {KNOWN})"),
        (
            FOLD,
            {"inputs": [S23], "kwargs": {"fn": {"step": "ad"}}},
            ["kwargs", "fn", "step"],
            f"unknown step 'ad' (known: {KNOWN})",
        ),
        (
            PHASE,
            {"kwargs": {"x": {"step": "one"}, "alt": {"step": "const_zero"}}},
            ["kwargs", "x", "step"],
            f"unknown step 'one' (known: {KNOWN})",
        ),
        (
            RNN,
            {"inputs": [S23], "args": [{"step": "rnn_summ"}, t(0)]},
            ["args", 0, "step"],
            f"unknown step 'rnn_summ' (known: {KNOWN})",
        ),
        (
            GRADIENTS,
            {"inputs": [S23], "args": [{"list": [t(0), t(1)]}]},
            ["args", 0, "list", 1, "tensor"],
            "no input 1: the case has 1 input(s)",
        ),
        (
            DOT,
            {"inputs": [{"shape": [3], "dist": "randint", "low": 3, "high": 3}, S23]},
            ["inputs", 0, "low"],
            "randint needs low < high, got low 3 and high 3",
        ),
        (
            DOT,
            {"inputs": {"x": S23, "y": {"shape": [3], "dtype": "int32", "high": 0}}},
            ["inputs", "y", "high"],
            "randint needs low < high, got low 0 and high 0 (defaults: low 0, high 5)",
        ),
        (
            DOT,
            {"inputs": [S23, {"value": 300, "dtype": "uint8"}]},
            ["inputs", 1, "value"],
            "value 300 is not a uint8 array: out of range (0 to 255)",
        ),
        (
            CONCAT,
            {"inputs": {"tensors": [S23, {"value": "abc"}]}},
            ["inputs", "tensors", 1, "value"],
            "value 'abc' is not a float32 array: could not convert string to float: 'abc'",
        ),
    ],
)
def test_binding_problems(signature, raw, path, message):
    found = binding.problems("op", {"signature": signature}, raw)
    assert [(p.path, p.message) for p in found] == [(path, message)]
    with pytest.raises(BindingError) as info:
        bind("op", {"signature": signature}, raw)
    assert info.value.path == path and str(info.value) == f"{binding.dotted(path)}: {message}"


def test_ragged_value_is_a_problem():
    (problem,) = binding.problems("op", {"signature": DOT}, {"inputs": [{"value": [[1, 2], [3]]}, S23]})
    assert problem.path == ["inputs", 0, "value"]
    assert problem.message.startswith("value [[1, 2], [3]] is not a float32 array: ")


def test_var_keyword_signature_takes_unknown_kwargs_and_inputs():
    bound = bind(
        "op",
        {"signature": FUNCTION},
        {"inputs": {"inputs": [S23], "outputs": [], "feed": S34}, "kwargs": {"name": "f"}},
    )
    assert bound.args == [{"list": [t(0)]}, {"list": []}]
    assert bound.kwargs == {"feed": t(1), "name": {"value": "f"}}


@pytest.mark.parametrize(
    "args,kwargs,want",
    [
        ([t(0), {"list": [t(1), t(2)]}], {"mask": t(3)}, [0, 1, 2, 3]),
        ([], {"b": t(2), "a": t(0)}, [2, 0]),  # kwargs in their order
        ([{"list": [{"list": [t(0), {"array": 1}]}, {"list": [t(2), {"array": 3}]}]}], {}, [0, 2]),
        ([{"call": "sum", "args": [{"call": "dot", "args": [t(1), t(0)]}]}, {"list": [t(0), t(1)]}], {}, [1, 0]),
        ([{"list": [t(0), t(0)]}], {}, [0]),  # the worker builds a tensor named twice once
        ([{"constant": 0}, {"array": 1}, t(2, weight=True), {"step": "add"}, {"value": 3}], {}, [2]),
    ],
)
def test_tensor_indices(args, kwargs, want):
    assert binding.tensor_indices(args, kwargs) == want


def test_case_carries_tensor_indices_in_worker_order():
    raw = {
        "id": "c",
        "inputs": {"inputs": {"shape": [2, 4, 3]}, "initial_states": [S23, S23], "mask": MASK},
        "kwargs": {"step_function": "rnn_two_states"},
    }
    case = expand_case("rnn", {"signature": RNN}, raw, seed=0)
    assert case.tensor_indices == [0, 1, 2, 3]
    assert [a.shape for a in case.arrays] == [(2, 4, 3), (2, 3), (2, 3), (2, 4)]
    assert case.shape_names["initial_states"] == [[2, 3], [2, 3]] and case.shape_names["mask"] == [2, 4]


def test_list_and_mapping_forms_draw_identical_arrays():
    inputs = [{"shape": [2, 3]}, {"shape": [2, 3], "dist": "uniform"}, {"value": 1, "dtype": "int32"}]
    old = expand_case(
        "in_train_phase", {"signature": PHASE}, {"id": "c", "inputs": inputs, "args": [t(0), t(1), t(2)]}, seed=3
    )
    new = expand_case(
        "in_train_phase",
        {"signature": PHASE},
        {"id": "c", "inputs": dict(zip(["x", "alt", "training"], inputs))},
        seed=3,
    )
    assert [(a.dtype, a.shape, a.tobytes()) for a in old.arrays] == [
        (a.dtype, a.shape, a.tobytes()) for a in new.arrays
    ]
    assert old.request("symbolic") == new.request("symbolic")
    assert not np.array_equal(old.arrays[0], old.arrays[1])  # each index draws its own values


def test_shipped_spec_keeps_raw_args_only_where_the_signature_cannot_express_it():
    def named(spec):  # tensor indices, each time one is named
        return ([spec["tensor"]] if "tensor" in spec else []) + [
            i for item in spec.get("list", []) + spec.get("args", []) for i in named(item)
        ]

    def inexpressible(args):
        nested = any("list" in item for spec in args for item in spec.get("list", []))
        calls = any("call" in spec for spec in args)
        indices = [i for spec in args for i in named(spec)]
        return nested or calls or len(indices) != len(set(indices))

    spec = loader.load()
    raw = {(op, c["id"]): c["args"] for op, entry in spec.ops.items() for c in entry.get("cases", []) if "args" in c}
    assert sorted(raw) == [("batch_get_value", "same_variable_twice")] + [
        ("batch_set_value", c) for c in ("float64_value_into_float32", "mixed_dtypes", "one", "two")
    ] + [
        ("function", "identity"),
        ("function", "variable_and_placeholder"),
        ("gradients", "square"),
        ("gradients", "two_inputs"),
    ]
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


@pytest.mark.parametrize(
    "case,where,message",
    [
        (
            "{id: a, inputs: [{shape: [3]}], kwargs: {fn: ad}}",
            "cases[0].kwargs.fn",
            f"unknown step 'ad' (known: {KNOWN})",
        ),
        (
            "{id: a, inputs: [{shape: [3]}], kwargs: {fn: add, axis: 0}}",
            "cases[0].kwargs.axis",
            "'axis' is not a parameter of fold (fn, elems)",
        ),
        (
            "{id: a, inputs: [{shape: [3]}], kwargs: {fn: add}, args: [{step: add}, {tensor: 0}]}",
            "cases[0].kwargs.fn",
            "kwargs.fn is ignored: args already gives parameter 1 (fn)",
        ),
        (
            "{id: a, inputs: [{shape: [3], dtype: int32, low: 4, high: 2}], kwargs: {fn: add}}",
            "cases[0].inputs[0].low",
            "randint needs low < high, got low 4 and high 2",
        ),
        (
            "{id: a, inputs: {elems: {value: [1, -1], dtype: uint8}}, kwargs: {fn: add}}",
            "cases[0].inputs.elems.value",
            "value [1, -1] is not a uint8 array: out of range (0 to 255)",
        ),
    ],
)
def test_loader_reports_binding_problems_at_the_case_line(tmp_path, case, where, message):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "      - " + case + "\n")
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    assert info.value.problems == [f"{path}:{LINE}: ops.fold.{where}: {message}"]


def test_loader_checks_example_cases(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(
        HEADER.replace(
            "    cases:\n",
            """    examples:
      - id: e
        docs: [ko-2.2]
        source: fold
        case:
          inputs: {elems: {shape: [3]}}
          kwargs: {fn: {step: ad}}
""",
        )
    )
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    assert info.value.problems == [
        f"{path}:{LINE + 5}: ops.fold.examples[0].case.kwargs.fn.step: unknown step 'ad' (known: {KNOWN})"
    ]


def test_schema_accepts_mapping_inputs_and_rejects_bad_values(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "      - {id: a, inputs: {elems: [{shape: [3]}, {value: 1}]}, kwargs: {fn: add}}\n")
    assert loader.load(str(path)).ops["fold"]["cases"][0]["inputs"]["elems"][1] == {"value": 1}
    path.write_text(HEADER + "      - {id: a, inputs: {elems: 3}, kwargs: {fn: add}}\n")
    with pytest.raises(loader.SpecError) as info:
        loader.load(str(path))
    (problem,) = info.value.problems
    assert problem.startswith(f"{path}:{LINE}: ops.fold.cases[0].inputs")


# ---- rows pinned by mutation testing (mutmut on kbtool/specs/binding.py): rules the tables above leave open
@pytest.mark.parametrize(
    "path,want",
    [
        ([], ""),
        (["inputs"], "inputs"),
        ([0], "[0]"),
        (["inputs", 0, "value"], "inputs[0].value"),
        (["kwargs", "fn", "step"], "kwargs.fn.step"),
        (["args", 0, 1, "list", 2], "args[0][1].list[2]"),
    ],
)
def test_dotted(path, want):
    assert binding.dotted(path) == want
    assert str(BindingError(path, "m")) == (want + ": m")


@pytest.mark.parametrize(
    "args,kwargs,want",
    [
        ([{"call": "sum"}], {}, []),  # a call without args
        ([{"call": "sum", "args": [t(0)], "kwargs": {"axis": t(1)}}], {}, [0, 1]),  # a call's kwargs are walked
        ([{"call": "sum", "kwargs": {"a": {"list": [t(2)]}, "b": t(1)}}], {}, [2, 1]),
    ],
)
def test_tensor_indices_of_calls(args, kwargs, want):
    assert binding.tensor_indices(args, kwargs) == want


TWO = [{"name": "x", "kind": T}, {"name": "fn", "kind": "step"}]
STAR = [{"name": "x", "kind": T}, {"name": "*args"}]


@pytest.mark.parametrize(
    "signature,raw,want_args,want_kwargs,want_names",
    [
        # by name onto an `array` param (alone and in a list) and onto a weight param
        (
            GATHER,
            {"inputs": {"reference": S23, "indices": {"value": [0, 1], "dtype": "int32"}}},
            [t(0), {"array": 1}],
            {},
            {"reference": [2, 3], "indices": [2]},
        ),
        (
            GATHER,
            {"inputs": {"reference": S23, "indices": [{"value": [0], "dtype": "int32"}, S34]}},
            [t(0), {"list": [{"array": 1}, {"array": 2}]}],
            {},
            {"reference": [2, 3], "indices": [[1], [3, 4]]},
        ),
        (DENSE, {"inputs": {"x": S23, "kernel": S34}}, [t(0), t(1, weight=True)], {}, {"x": [2, 3], "kernel": [3, 4]}),
        (
            DENSE,
            {"inputs": {"x": S23, "kernel": [S34]}},
            [t(0), {"list": [t(1, weight=True)]}],
            {},
            {"x": [2, 3], "kernel": [[3, 4]]},
        ),
        # shape names: a tensors param's shapes, kwargs' values, defaults of params not given; step params are not shapes
        (CONCAT, {"inputs": [S23, S34]}, [{"list": [t(0), t(1)]}], {}, {"tensors": [[2, 3], [3, 4]], "axis": -1}),
        (
            DOT,
            {"inputs": [S23, S34], "kwargs": {"axes": [1, 0]}},
            [t(0), t(1), {"value": [1, 0]}],
            {},
            {"x": [2, 3], "y": [3, 4], "axes": [1, 0]},
        ),  # a list for a param without `tuple` stays a value
        (
            FOLD,
            {"inputs": [S23, S34], "kwargs": {"fn": "add"}},
            [{"step": "add"}, t(0), t(1)],
            {},
            {"elems": [2, 3], "initializer": [3, 4], "name": None},
        ),
        # raw args: shape names are the kwargs, else the defaults
        (
            CONCAT,
            {"inputs": [S23], "args": [{"list": [t(0)]}], "kwargs": {"axis": 0}},
            [{"list": [t(0)]}],
            {"axis": {"value": 0}},
            {"tensors": None, "axis": 0},
        ),
        (CONCAT, {"inputs": [S23], "args": [{"list": [t(0)]}]}, [{"list": [t(0)]}], {}, {"tensors": None, "axis": -1}),
        # raw args: a kwarg just past the args binds; a step param past them takes a step
        (
            RNN,
            {
                "inputs": [S23, S23],
                "args": [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}],
                "kwargs": {"go_backwards": True},
            },
            [{"step": "rnn_sum"}, t(0), {"list": [t(1)]}],
            {"go_backwards": {"value": True}},
            dict({p["name"]: p.get("default") for p in RNN}, go_backwards=True),
        ),
        (
            TWO,
            {"inputs": [S23], "args": [t(0)], "kwargs": {"fn": "add"}},
            [t(0)],
            {"fn": {"step": "add"}},
            {"x": None, "fn": "add"},
        ),
        # `*args` is not a parameter
        (STAR, {"inputs": [S23]}, [t(0)], {}, {"x": [2, 3]}),
    ],
)
def test_bind_shape_names(signature, raw, want_args, want_kwargs, want_names):
    bound = bind("op", {"signature": signature}, raw)
    assert (bound.args, bound.kwargs, bound.shape_names) == (want_args, want_kwargs, want_names)


@pytest.mark.parametrize(
    "signature,raw,found",
    [
        # no signature at all
        (None, {"kwargs": {"a": 1}}, [(["kwargs", "a"], "'a' is not a parameter of op (no parameters)")]),
        (STAR, {"inputs": [S23], "kwargs": {"args": 1}}, [(["kwargs", "args"], "'args' is not a parameter of op (x)")]),
        # every problem is reported, not only the first
        (
            DOT,
            {"inputs": [S23], "kwargs": {"zz": 1, "qq": 2}},
            [
                (["kwargs", "zz"], "'zz' is not a parameter of op (x, y, axes)"),
                (["kwargs", "qq"], "'qq' is not a parameter of op (x, y, axes)"),
            ],
        ),
        (
            DOT,
            {"inputs": {"x": S23}, "kwargs": {"x": 1, "zz": 2}},
            [
                (["kwargs", "x"], "'x' is given twice: as inputs.x and as kwargs.x"),
                (["kwargs", "zz"], "'zz' is not a parameter of op (x, y, axes)"),
            ],
        ),
        # a parameter given twice is reported once: its kwarg is not bound (nor checked) as well
        (
            FOLD,
            {"inputs": {"fn": S23}, "kwargs": {"fn": "zz"}},
            [(["kwargs", "fn"], "'fn' is given twice: as inputs.fn and as kwargs.fn")],
        ),
        # input problems carry their path: inside a tensors param, left over, and with raw args
        (
            CONCAT,
            {"inputs": [S23, {"shape": [2], "dtype": "int32", "low": 9}]},
            [(["inputs", 1, "low"], "randint needs low < high, got low 9 and high 5 (defaults: low 0, high 5)")],
        ),
        (
            DOT,
            {"inputs": [S23, S23, {"value": -1, "dtype": "uint8"}]},
            [
                (["inputs", 2, "value"], "value -1 is not a uint8 array: out of range (0 to 255)"),
                (
                    ["inputs", 2],
                    "inputs[2] is left over: op has no tensor parameter left to take it "
                    "(name its parameter: `inputs: {name: ...}`)",
                ),
            ],
        ),
        (
            GRADIENTS,
            {"inputs": [{"value": 256, "dtype": "uint8"}], "args": [t(0)]},
            [(["inputs", 0, "value"], "value 256 is not a uint8 array: out of range (0 to 255)")],
        ),
        # raw args: by-name lists are flattened into the inputs; unknown kwargs; a step kwarg past the args
        (
            PHASE,
            {"inputs": {"x": [S23, S23]}, "args": [t(1)]},
            [
                (
                    ["args"],
                    "raw args take the inputs as a plain list of arrays, not by name; bind the inputs by name "
                    "without args, or list them",
                )
            ],
        ),
        (
            DOT,
            {"inputs": [S23], "args": [t(0)], "kwargs": {"zz": 1}},
            [(["kwargs", "zz"], "'zz' is not a parameter of op (x, y, axes)")],
        ),
        (
            TWO,
            {"inputs": [S23], "args": [t(0)], "kwargs": {"fn": "ad"}},
            [(["kwargs", "fn"], f"unknown step 'ad' (known: {KNOWN})")],
        ),
        # raw ARG specs: not a mapping, bad array/constant indices, inside call args and kwargs
        (
            GRADIENTS,
            {"inputs": [S23], "args": [3]},
            [(["args", 0], "a raw ARG spec is a mapping such as {tensor: 0}, not 3")],
        ),
        (
            GRADIENTS,
            {"inputs": [S23], "args": [{"array": 1}, {"constant": -1}]},
            [
                (["args", 0, "array"], "no input 1: the case has 1 input(s)"),
                (["args", 1, "constant"], "no input -1: the case has 1 input(s)"),
            ],
        ),
        (
            GRADIENTS,
            {"inputs": [S23], "args": [{"call": "sum", "args": [t(3)], "kwargs": {"axis": t(4), "k": "x"}}]},
            [
                (["args", 0, "args", 0, "tensor"], "no input 3: the case has 1 input(s)"),
                (["args", 0, "kwargs", "axis", "tensor"], "no input 4: the case has 1 input(s)"),
                (["args", 0, "kwargs", "k"], "a raw ARG spec is a mapping such as {tensor: 0}, not 'x'"),
            ],
        ),
    ],
)
def test_binding_problems_all_reported(signature, raw, found):
    entry = {} if signature is None else {"signature": signature}
    assert [(p.path, p.message) for p in binding.problems("op", entry, raw)] == found


@pytest.mark.parametrize(
    "inp",
    [
        {"shape": [2], "fill": 1, "dtype": "int32", "high": 0},  # a fill draws nothing: no randint bounds
        {"shape": [3], "high": 0},  # float32 draws from normal by default: bounds unused
        {"shape": [3], "dist": "normal", "dtype": "int32", "low": 4, "high": 1},  # normal ignores the bounds
        {"shape": [3], "dtype": "int32", "low": 4},  # 4 < the default high 5
        {"value": [0, 255], "dtype": "uint8"},  # the range's ends are in range
        {"value": [-128, 127], "dtype": "int8"},
        {"value": [], "dtype": "uint8"},
        {"value": [0.5, 300.0], "dtype": "float16"},
    ],
)
def test_input_without_problems(inp):
    assert binding.input_problems(inp, ["p"]) == []


@pytest.mark.parametrize(
    "inp,path,message",
    [
        (
            {"shape": [3], "dtype": "int32", "low": 5},
            ["p", "low"],
            "randint needs low < high, got low 5 and high 5 (defaults: low 0, high 5)",
        ),
        (
            {"shape": [3], "dtype": "int32", "low": 2, "high": 2},
            ["p", "low"],
            "randint needs low < high, got low 2 and high 2",
        ),
        (
            {"value": [-1, 0], "dtype": "uint8"},
            ["p", "value"],
            "value [-1, 0] is not a uint8 array: out of range (0 to 255)",
        ),
        ({"value": 128, "dtype": "int8"}, ["p", "value"], "value 128 is not a int8 array: out of range (-128 to 127)"),
    ],
)
def test_input_problems(inp, path, message):
    assert [(p.path, p.message) for p in binding.input_problems(inp, ["p"])] == [(path, message)]


# ---- more rows pinned by mutation testing: raw ARG specs, ph_shape, call names, then-calls, input limits
KINDS = "tensor, constant, array, value, tuple, list, step, call"
INF, NAN = float("inf"), float("nan")


def found_of(raw, signature=GRADIENTS, ops=None):
    return [(p.path, p.message) for p in binding.problems("op", {"signature": signature}, raw, ops)]


@pytest.mark.parametrize(
    "inputs,args,found",
    [
        # one kind per ARG spec
        (
            [S23],
            [{"tensor": 0, "value": 1}],
            [(["args", 0], f"a raw ARG spec has exactly one of {KINDS}; this one has tensor, value")],
        ),
        (
            [S23],
            [{"zz": 1, "aa": 2}],
            [(["args", 0], f"a raw ARG spec has exactly one of {KINDS}; this one has ['aa', 'zz']")],
        ),
        ([S23], [{}], [(["args", 0], f"a raw ARG spec has exactly one of {KINDS}; this one has []")]),
        # each kind with its own keys (the first unknown key, sorted, is the path)
        (
            [S23],
            [t(0, foo=1)],
            [
                (
                    ["args", 0, "foo"],
                    "unknown key foo in a tensor ARG spec (it may also have ph_shape, ph_ndim, weight, sparse)",
                )
            ],
        ),
        (
            [S23],
            [{"value": 1, "zz": 1, "aa": 2}],
            [(["args", 0, "aa"], "unknown key aa, zz in a value ARG spec (it has no other key)")],
        ),
        (
            [S23],
            [{"call": "sum", "ph_shape": [1]}],
            [(["args", 0, "ph_shape"], "unknown key ph_shape in a call ARG spec (it may also have args, kwargs)")],
        ),
        (
            [S23],
            [{"constant": 0, "weight": True}],
            [(["args", 0, "weight"], "unknown key weight in a constant ARG spec (it has no other key)")],
        ),
        ([S23], [t(0, weight=True), t(0, weight=False), {"tuple": [1, "x"]}, {"value": [1]}], []),
        # indices: in range, integers, not booleans
        ([S23], [{"tensor": True}], [(["args", 0, "tensor"], "no input True: the case has 1 input(s)")]),
        ([S23], [{"constant": "0"}], [(["args", 0, "constant"], "no input '0': the case has 1 input(s)")]),
        ([S23], [t(1)], [(["args", 0, "tensor"], "no input 1: the case has 1 input(s)")]),
        ([], [{"array": 0}], [(["args", 0, "array"], "no input 0: the case has 0 input(s)")]),
        ([S23, S23], [t(1), {"constant": 0}, {"array": 1}], []),
        # weight is a boolean
        ([S23], [t(0, weight=1)], [(["args", 0, "weight"], "weight is true or false, not 1")]),
        ([S23], [t(0, weight="yes")], [(["args", 0, "weight"], "weight is true or false, not 'yes'")]),
        # ph_shape: sizes or nulls, as many as the input has dimensions
        ([S23], [t(0, ph_shape=[None, 3]), t(0, ph_shape=[None, None]), t(0, ph_shape=[2, 3])], []),
        ([{"shape": [0, 3]}], [t(0, ph_shape=[0, None])], []),
        (
            [S23],
            [t(0, ph_shape=[None])],
            [(["args", 0, "ph_shape"], "ph_shape has 1 dimensions but the input has 2 (shape [2, 3])")],
        ),
        (
            [S23],
            [t(0, ph_shape=[None, 3, None])],
            [(["args", 0, "ph_shape"], "ph_shape has 3 dimensions but the input has 2 (shape [2, 3])")],
        ),
        (
            [{"value": 1.5}],
            [t(0, ph_shape=[None])],
            [(["args", 0, "ph_shape"], "ph_shape has 1 dimensions but the input has 0 (shape [])")],
        ),
        (
            [S23],
            [t(0, ph_shape=[-1, 3])],
            [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not [-1, 3]")],
        ),
        (
            [S23],
            [t(0, ph_shape=[True, 3])],
            [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not [True, 3]")],
        ),
        (
            [S23],
            [t(0, ph_shape=[2.5, 3])],
            [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not [2.5, 3]")],
        ),
        (
            [S23],
            [t(0, ph_shape=["a", 3])],
            [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not ['a', 3]")],
        ),
        ([S23], [t(0, ph_shape="ab")], [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not 'ab'")]),
        ([S23], [t(0, ph_shape=3)], [(["args", 0, "ph_shape"], "ph_shape is a list of sizes or nulls, not 3")]),
        # an input index out of range is the only problem: its ph_shape is not checked
        ([S23], [t(3, ph_shape=[None])], [(["args", 0, "tensor"], "no input 3: the case has 1 input(s)")]),
        # an input whose shape is unknown (a value NumPy cannot read, a refused shape) has no rank to compare
        (
            [{"value": "abc"}],
            [t(0, ph_shape=[None])],
            [(["inputs", 0, "value"], "value 'abc' is not a float32 array: could not convert string to float: 'abc'")],
        ),
        (
            [{"shape": [-1]}],
            [t(0, ph_shape=[None, None])],
            [(["inputs", 0, "shape"], "a shape is a list of non-negative integers, not [-1]")],
        ),
        # an input with another problem keeps its shape
        (
            [{"shape": [2, 3], "dtype": "int32", "low": 9}],
            [t(0, ph_shape=[None])],
            [
                (["inputs", 0, "low"], "randint needs low < high, got low 9 and high 5 (defaults: low 0, high 5)"),
                (["args", 0, "ph_shape"], "ph_shape has 1 dimensions but the input has 2 (shape [2, 3])"),
            ],
        ),
        # tuples and lists take lists; lists nest
        ([S23], [{"tuple": 3}], [(["args", 0, "tuple"], "tuple takes a list, not 3")]),
        ([S23], [{"list": "ab"}], [(["args", 0, "list"], "list takes a list, not 'ab'")]),
        (
            [S23],
            [{"list": [{"list": [t(0), 5]}]}],
            [(["args", 0, "list", 0, "list", 1], "a raw ARG spec is a mapping such as {tensor: 0}, not 5")],
        ),
        # steps
        ([S23], [{"step": 3}], [(["args", 0, "step"], f"unknown step 3 (known: {KNOWN})")]),
        # calls: a name, a list of args, a mapping of names to kwargs
        ([S23], [{"call": 3}], [(["args", 0, "call"], "call names an op, not 3")]),
        ([S23], [{"call": "sum", "args": 3}], [(["args", 0, "args"], "a list of raw ARG specs, not 3")]),
        ([S23], [{"call": "sum", "args": [t(0)], "kwargs": {"axis": {"value": 0}}}], []),
        (
            [S23],
            [{"call": "sum", "kwargs": [t(0)]}],
            [(["args", 0, "kwargs"], "kwargs is a mapping of name to ARG spec, not [{'tensor': 0}]")],
        ),
        ([S23], [{"call": "sum", "kwargs": {1: t(0)}}], [(["args", 0, "kwargs", 1], "a keyword is a name, not 1")]),
        (
            [S23],
            [{"call": "sum", "kwargs": {1: 5}}],
            [
                (["args", 0, "kwargs", 1], "a keyword is a name, not 1"),
                (["args", 0, "kwargs", 1], "a raw ARG spec is a mapping such as {tensor: 0}, not 5"),
            ],
        ),
        # the args themselves are a list
        ([S23], {"tensor": 0}, [(["args"], "a list of raw ARG specs, not {'tensor': 0}")]),
        ([S23], "ab", [(["args"], "a list of raw ARG specs, not 'ab'")]),
    ],
)
def test_raw_arg_spec_problems(inputs, args, found):
    assert found_of({"inputs": inputs, "args": args}) == found


@pytest.mark.parametrize(
    "ops,name,found",
    [
        (
            ["cumsum", "mean", "sum", "sum_all"],
            "sums",
            [(["args", 0, "call"], "'sums' is not an op of the spec; did you mean sum, cumsum?")],
        ),
        (
            ["sum1", "sum2", "sum3", "sum4"],
            "sum",
            [(["args", 0, "call"], "'sum' is not an op of the spec; did you mean sum4, sum3, sum2?")],
        ),
        (["sum"], "zzz", [(["args", 0, "call"], "'zzz' is not an op of the spec")]),
        (["sum"], "sum", []),
        (None, "zzz", []),  # without the spec's op names, names are not checked
        (None, 3, [(["args", 0, "call"], "call names an op, not 3")]),
        (["sum"], None, [(["args", 0, "call"], "call names an op, not None")]),
    ],
)
def test_raw_call_names(ops, name, found):
    assert found_of({"inputs": [S23], "args": [{"call": name, "args": [t(0)]}]}, ops=ops) == found


OPS = ["op", "sum"]
X1 = [{"name": "x", "kind": T}]


@pytest.mark.parametrize(
    "then,found",
    [
        ([{"op": "sum"}], []),  # a then-call without args
        ([{"op": "sum", "args": [{"result": 0}, 2, {"result": 0, "x": 1}]}, {"op": "op", "args": [{"result": 1}]}], []),
        ([{"op": "zzz"}], [(["then", 0, "op"], "'zzz' is not an op of the spec")]),
        ([{"op": "sums"}], [(["then", 0, "op"], "'sums' is not an op of the spec; did you mean sum?")]),
        (["x", {"op": "zzz"}], [(["then", 1, "op"], "'zzz' is not an op of the spec")]),  # a non-mapping is skipped
        ([{"op": 3}], [(["then", 0, "op"], "call names an op, not 3")]),
        (
            [{"op": "sum", "args": [{"result": 1}]}],
            [(["then", 0, "args", 0, "result"], "no result 1 before then[0]: results 0 to 0 (0 is the op's own)")],
        ),
        (
            [{"op": "sum"}, {"op": "sum", "args": [{"result": 2}, {"result": True}, {"result": -1}, {"result": 1}]}],
            [
                (["then", 1, "args", 0, "result"], "no result 2 before then[1]: results 0 to 1 (0 is the op's own)"),
                (["then", 1, "args", 1, "result"], "no result True before then[1]: results 0 to 1 (0 is the op's own)"),
                (["then", 1, "args", 2, "result"], "no result -1 before then[1]: results 0 to 1 (0 is the op's own)"),
            ],
        ),
        ([{"op": "sum", "args": "ab"}, {"op": "sum", "args": {"result": 9}}], []),  # the schema says what is wrong
        ([{"op": "sum", "args": 3}, {"op": "sum", "args": None}], []),
        ("ab", []),
    ],
)
def test_then_problems(then, found):
    raw = {"inputs": [S23], "then": then}
    assert found_of(raw, signature=X1, ops=OPS) == found
    assert found_of(raw, signature=X1) == []  # without op names, then-calls are not checked


def test_bind_checks_then_calls_given_op_names():
    raw = {"inputs": [S23], "then": [{"op": "zzz"}]}
    assert bind("op", {"signature": X1}, raw).args == [t(0)]
    with pytest.raises(BindingError) as info:
        bind("op", {"signature": X1}, raw, ops=OPS)
    assert (info.value.path, info.value.message) == (["then", 0, "op"], "'zzz' is not an op of the spec")


def test_raw_args_with_var_keyword_signature():
    raw = {"inputs": [S23], "args": [{"list": [t(0)]}, {"list": []}], "kwargs": {"feed": 1}}
    bound = bind("op", {"signature": FUNCTION}, raw)
    assert (bound.args, bound.kwargs) == ([{"list": [t(0)]}, {"list": []}], {"feed": {"value": 1}})
    assert found_of(dict(raw, kwargs={1: 2}), signature=FUNCTION) == [
        (["kwargs", 1], "1 is not a parameter of op (inputs, outputs, updates)")
    ]


SHAPE_WORDS = "a shape is a list of non-negative integers, not "
TOO_MANY = "; one input may have at most 10,000,000 (and no larger dimension)"


@pytest.mark.parametrize(
    "inp,found",
    [
        # shapes: non-negative integers, at most 32 dimensions, 10**7 elements, no larger dimension
        ({"shape": [-1]}, [(["p", "shape"], SHAPE_WORDS + "[-1]")]),
        ({"shape": [2, True]}, [(["p", "shape"], SHAPE_WORDS + "[2, True]")]),
        ({"shape": [2.0]}, [(["p", "shape"], SHAPE_WORDS + "[2.0]")]),
        ({"shape": [1] * 33}, [(["p", "shape"], "33 dimensions; kbtool allows at most 32")]),
        ({"shape": [10**7 + 1]}, [(["p", "shape"], "shape [10000001] has 10,000,001 elements" + TOO_MANY)]),
        ({"shape": [4000, 2501]}, [(["p", "shape"], "shape [4000, 2501] has 10,004,000 elements" + TOO_MANY)]),
        ({"shape": [0, 10**7 + 1]}, [(["p", "shape"], "shape [0, 10000001] has 0 elements" + TOO_MANY)]),
        (
            {"shape": [10**15, 10**15 - 1]},
            [
                (
                    ["p", "shape"],
                    "shape [1000000000000000, 999999999999999] has "
                    "999,999,999,999,999,000,000,000,000,000 elements" + TOO_MANY,
                )
            ],
        ),
        (
            {"shape": [10**10] * 3},
            [(["p", "shape"], "shape [10000000000, 10000000000, 10000000000] has about 10**30 elements" + TOO_MANY)],
        ),
        (
            {"shape": [10**11] * 3},
            [(["p", "shape"], "shape [100000000000, 100000000000, 100000000000] has about 10**33 elements" + TOO_MANY)],
        ),
        # a refused shape is the only problem reported
        ({"shape": [-1], "fill": "x", "low": INF}, [(["p", "shape"], SHAPE_WORDS + "[-1]")]),
        # fills fit the dtype
        (
            {"shape": [2], "fill": 300, "dtype": "uint8"},
            [(["p", "fill"], "fill 300 is not a uint8 value: out of range (0 to 255)")],
        ),
        (
            {"shape": [2], "fill": "x"},
            [(["p", "fill"], "fill 'x' is not a float32 value: could not convert string to float: 'x'")],
        ),
        # bounds are finite numbers for randint, uniform and positive
        ({"shape": [2], "dist": "uniform", "high": INF}, [(["p", "high"], "high inf is not a finite number")]),
        ({"shape": [2], "dist": "uniform", "low": NAN}, [(["p", "low"], "low nan is not a finite number")]),
        ({"shape": [2], "dist": "uniform", "low": "a"}, [(["p", "low"], "low 'a' is not a finite number")]),
        (
            {"shape": [2], "dist": "positive", "low": NAN, "high": -INF},
            [(["p", "low"], "low nan is not a finite number"), (["p", "high"], "high -inf is not a finite number")],
        ),
        ({"shape": [2], "dist": "positive", "high": INF}, [(["p", "high"], "high inf is not a finite number")]),
        ({"shape": [2], "dtype": "int32", "high": INF}, [(["p", "high"], "high inf is not a finite number")]),
        (
            {"shape": [2], "dist": "uniform", "high": 10**400},
            [(["p", "high"], "high " + "1" + "0" * 99 + "... (401 characters) is not a finite number")],
        ),
        # randint bounds within int64 (high is exclusive: 2**63 is the largest)
        (
            {"shape": [2], "dtype": "int64", "low": -(2**63) - 1},
            [(["p", "low"], "randint bound -9223372036854775809 is outside int64")],
        ),
        (
            {"shape": [2], "dtype": "int64", "low": 0, "high": 2**63 + 1},
            [(["p", "high"], "randint bound 9223372036854775809 is outside int64")],
        ),
        # uniform and positive: low <= high, defaults -1.0 to 1.0 and 0.1 to 2.0
        (
            {"shape": [2], "dist": "uniform", "high": -2},
            [(["p", "high"], "uniform needs low <= high, got low -1.0 and high -2 (defaults: low -1.0, high 1.0)")],
        ),
        (
            {"shape": [2], "dist": "uniform", "low": 2},
            [(["p", "low"], "uniform needs low <= high, got low 2 and high 1.0 (defaults: low -1.0, high 1.0)")],
        ),
        (
            {"shape": [2], "dist": "uniform", "low": 3, "high": 2},
            [(["p", "low"], "uniform needs low <= high, got low 3 and high 2")],
        ),
        (
            {"shape": [2], "dist": "positive", "high": 0.05},
            [(["p", "high"], "positive needs low <= high, got low 0.1 and high 0.05 (defaults: low 0.1, high 2.0)")],
        ),
        (
            {"shape": [2], "dist": "positive", "low": 2.5},
            [(["p", "low"], "positive needs low <= high, got low 2.5 and high 2.0 (defaults: low 0.1, high 2.0)")],
        ),
        (
            {"shape": [2], "dist": "positive", "low": 3, "high": 2},
            [(["p", "low"], "positive needs low <= high, got low 3 and high 2")],
        ),
        (
            {"shape": [2], "dist": "uniform", "low": -1e308, "high": 1e308},
            [(["p", "high"], "uniform range -1e+308 to 1e+308 is too wide to draw from")],
        ),
    ],
)
def test_input_problems_exact(inp, found):
    assert [(p.path, p.message) for p in binding.input_problems(inp, ["p"])] == found


@pytest.mark.parametrize(
    "inp",
    [
        {"shape": [1] * 32},
        {"shape": [10**7]},
        {"shape": [2, 5 * 10**6]},
        {"shape": [0, 10**7]},
        {"shape": []},
        {"shape": [3], "dtype": "int64", "low": -(2**63), "high": 0},
        {"shape": [3], "dtype": "int64", "low": 0, "high": 2**63},
        {"shape": [3], "dist": "uniform", "low": 1, "high": 1},
        {"shape": [3], "dist": "uniform", "high": -1.0},
        {"shape": [3], "dist": "uniform", "low": 1.0},
        {"shape": [3], "dist": "positive", "low": 2, "high": 2},
        {"shape": [3], "dist": "positive", "low": 1.5},
        {"shape": [3], "dist": "positive", "high": 0.1},
        {"shape": [3], "dist": "normal", "low": NAN, "high": INF},  # normal, ties and arange ignore the bounds
        {"shape": [3], "high": INF},
        {"shape": [3], "dist": "ties", "low": INF},
    ],
)
def test_input_without_problems_at_the_limits(inp):
    assert binding.input_problems(inp, ["p"]) == []


class Unreadable:
    def __array__(self, dtype=None, copy=None):
        raise ValueError("unreadable")


@pytest.mark.parametrize(
    "inp,want",
    [
        ({"value": [[1, 2], [3, 4]]}, 4),
        ({"value": 2.5}, 1),
        ({"value": []}, 0),
        ({"value": [[1, 2], [3]]}, 2),  # ragged: two objects
        ({"value": "abc"}, 1),
        ({"value": [1, 2], "shape": [5]}, 2),  # a value wins over a shape
        ({"value": Unreadable()}, 0),
        ({"shape": [2, 3]}, 6),
        ({"shape": []}, 1),
        ({"shape": [0, 4]}, 0),
        ({}, 0),
        ({"shape": None}, 0),
        ({"shape": [2, "x"]}, 0),
        ({"shape": "23"}, 0),
    ],
)
def test_elements(inp, want):
    assert binding.elements(inp) == want


MAX_CASE = "the inputs have {:,} elements together; a case may have at most 20,000,000"


@pytest.mark.parametrize(
    "shapes,found",
    [
        ([[10**7], [10**7]], []),
        ([[10**7], [10**7], [1]], [(["inputs"], MAX_CASE.format(20000001))]),
        ([[10**7], [10**7], [2, 3]], [(["inputs"], MAX_CASE.format(20000006))]),
        # an input over its own limit says so; the case's total is not reported as well
        (
            [[10**7 + 1], [10**7]],
            [(["inputs", "tensors", 0, "shape"], "shape [10000001] has 10,000,001 elements" + TOO_MANY)],
        ),
    ],
)
def test_case_element_limit(shapes, found):
    assert found_of({"inputs": {"tensors": [{"shape": s} for s in shapes]}}, signature=CONCAT) == found


def test_a_literal_value_has_the_same_dimension_limit_as_a_shape():
    from kbtool.specs.binding import MAX_DIMS, input_problems

    deep = 1
    for _ in range(MAX_DIMS + 1):
        deep = [deep]
    (problem,) = input_problems({"value": deep}, ["inputs", 0])
    assert problem.path == ["inputs", 0, "value"]
    assert "33 dimensions; kbtool allows at most 32" in str(problem)
    ok = 1
    for _ in range(MAX_DIMS):
        ok = [ok]
    assert input_problems({"value": ok}, ["inputs", 0]) == []
