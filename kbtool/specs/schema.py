"""JSON Schema of specs/ops.yaml (validated with the `jsonschema` library)."""

from typing import Any, Dict

from kbtool.specs.bench_cases import SIZES
from kbtool.vocabulary import CASE_KEYS, DATA_FORMATS, FLOATX, MODES

_NAME = {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$"}
_DOC_IDS = {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True}
_EXPR = {"type": "string", "minLength": 1}
_TOL = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"rtol": {"type": "number", "minimum": 0}, "atol": {"type": "number", "minimum": 0}},
}
_TOLERANCES = {
    "type": "object",
    "propertyNames": {"enum": ["float16", "float32", "float64", "int", "signed_zeros"]},
    # signed_zeros: true: a float zero differs from the zero of the other sign (-0.0 against 0.0; tolerances.py)
    "properties": {"signed_zeros": {"type": "boolean"}},
    "additionalProperties": _TOL,
}
_DTYPE = {"enum": ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]}

KERAS_CONFIG = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "image_data_format": {"enum": list(DATA_FORMATS)},
        "floatx": {"enum": list(FLOATX)},
        "epsilon": {"type": "number", "exclusiveMinimum": 0},
    },
}
_DOMAIN = {"anyOf": [_NAME, {"type": "array", "minItems": 1}]}  # a name in the spec's `domains:`, or the values

INPUT: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "dtype": _DTYPE,
        "value": {},  # a literal (nested lists or a scalar)
        "fill": {"type": "number"},
        "dist": {"enum": ["normal", "uniform", "randint", "positive", "ties", "arange"]},
        "low": {"type": "number"},
        "high": {"type": "number"},
        "as": {"enum": ["tensor", "constant", "array"]},
        "none_dims": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        # in symbolic mode a placeholder made with K.placeholder(ndim=...) only: every dim None, the rank known
        "ndim_only": {"type": "boolean"},
        "sparse": {"type": "boolean"},  # a 2-D input as a sparse matrix (K.variable / K.placeholder(sparse=True))
    },
    "oneOf": [{"required": ["shape"]}, {"required": ["value"]}],
}

STATS = {
    "type": "object",
    "additionalProperties": False,
    "properties": dict(
        {
            k: {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
            for k in ("mean", "std", "min", "max")
        },
        # drawn twice with the same seed: both draws must be identical on the backend
        reproducible={"type": "boolean"},
    ),
}

CASE: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id"],
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
        "about": {"type": "string"},
        # a list bound in signature order to the tensor/tensors/array params, or a mapping by parameter name
        # (a list of inputs there is a Python list of tensors); see kbtool/specs/binding.py
        "inputs": {
            "anyOf": [
                {"type": "array", "items": INPUT},
                {
                    "type": "object",
                    "propertyNames": {"pattern": "^[a-z_][a-z0-9_]*$"},
                    "additionalProperties": {"anyOf": [INPUT, {"type": "array", "items": INPUT}]},
                },
            ]
        },
        "kwargs": {"type": "object"},
        "raises": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "match": {"type": "string"},
        "modes": {"type": "array", "items": {"enum": list(MODES)}, "minItems": 1, "uniqueItems": True},
        "tolerance": _TOLERANCES,
        "stats": STATS,
        "grad": {"type": "boolean"},
        # compare the variables' values after the call (update ops); "eval": in eager mode K.eval the call first
        "observe": {"enum": [True, False, "eval"]},
        "then_only": {"type": "boolean"},  # compare only the then-calls' results (a placeholder has no value)
        "expect_backend_name": {"type": "boolean"},  # K.backend(): each backend answers its own name
        # raw worker ARG specs, only for what a signature cannot express (nested lists, a tensor named twice,
        # {call: ...}); the inputs are then a plain list of arrays
        "args": {"type": "array", "items": {"type": "object"}},
        # keras.json settings this case runs under (its worker's keras.json; the reference follows them)
        "keras_config": KERAS_CONFIG,
        "then": {
            "type": "array",
            "items": {  # further calls whose results are compared too
                "type": "object",
                "additionalProperties": False,
                "required": ["op"],
                "properties": {"op": _NAME, "args": {"type": "array"}},
            },
        },
    },
}

PARAM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$|^\\*\\*?[a-z_]+$"},
        "kind": {"enum": ["tensor", "tensors", "value", "step", "array"]},
        "default": {},
        "tuple": {"type": "boolean"},  # the docs say "tuple of ints": YAML lists are passed as tuples
        # a layer's weight (kernel, bias, BN statistics): a variable even in symbolic mode, as Keras layers
        # pass it; only data flows through placeholders (CNTK makes dim 0 of every placeholder the batch axis)
        "weight": {"type": "boolean"},
        "docs": _DOC_IDS,  # doc versions that list this parameter (all when absent)
        "domain": _DOMAIN,  # the documented values (kbtool/specs/domains.py generates cases and coverage from them)
        # no enumerable documented values (a shape, a name, a seed, any float): the docs' type, in words
        "free": {"type": "string", "minLength": 1},
    },
}

_GRID_INPUT = dict(INPUT, properties=dict(INPUT["properties"], layout={"enum": ["channels"]}))
_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["when", "why"],
    "properties": {"when": _EXPR, "why": {"type": "string"}},
}
GRID = {
    "type": "object",
    "additionalProperties": False,
    "required": ["inputs"],
    "properties": {
        "params": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
        "inputs": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z_][a-z0-9_]*$"},
            "additionalProperties": _GRID_INPUT,
        },
        "kwargs": {"type": "object"},
        "exclude": {"type": "array", "items": _RULE},  # rows never generated, each with why
        "raises": {
            "type": "array",
            "items": {  # rows that must raise
                "type": "object",
                "additionalProperties": False,
                "required": ["when", "type"],
                "properties": {"when": _EXPR, "type": {"type": "string"}},
            },
        },
        "modes": {"type": "array", "items": {"enum": list(MODES)}, "minItems": 1, "uniqueItems": True},
        "tolerance": _TOLERANCES,
        "stats": STATS,  # random ops: every row is checked by its statistics
        "then": CASE["properties"]["then"],  # further calls on each row's result (e.g. dtype of a placeholder)
        "then_only": {"type": "boolean"},
    },
}

SHOWN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["docs"],
    "properties": {"docs": _DOC_IDS, "value": {}, "shape": {"type": "array"}, "text": {"type": "string"}},
    "anyOf": [{"required": ["value"]}, {"required": ["shape"]}, {"required": ["text"]}],
}

EXAMPLE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "docs", "source"],
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
        "docs": _DOC_IDS,
        "source": {"type": "string"},
        "case": {k: v for k, v in CASE.items() if k != "required"},
        "shown": {"type": "array", "items": SHOWN},
        "not_executable": {"type": "string"},  # why this example cannot run as a case
    },
}

SHAPE_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["shape"],
    "properties": {
        "when": _EXPR,
        "let": {"type": "object", "additionalProperties": _EXPR},
        "shape": _EXPR,
        "source": {"type": "string"},  # the doc passage it encodes
    },
}

RAISES = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "when"],
    # exactly one of: `docs`, the doc versions whose Raises section documents it; `source`, where the library
    # raises it when no doc version documents it (e.g. "keras 2.3.1 backend/*_backend.py: batch_dot")
    "properties": {
        "type": {"type": "string"},
        "when": {"type": "string"},
        "docs": _DOC_IDS,
        "source": {"type": "string", "minLength": 1},
    },
    "oneOf": [{"required": ["docs"]}, {"required": ["source"]}],
}

# a claim a doc version makes that no backend bears out; the reference follows the backends' common behaviour
DOC_ERROR = {
    "type": "object",
    "additionalProperties": False,
    "required": ["docs", "claim", "actual", "evidence"],
    "properties": {
        "docs": _DOC_IDS,
        "claim": {"type": "string", "minLength": 1},  # what the doc says, quoted or paraphrased
        "actual": {"type": "string", "minLength": 1},  # what every backend does instead
        "evidence": {"type": "string", "minLength": 1},  # the source lines, case or example that shows it
    },
}

# the backends a reference decision may name: kbtool's built-in recipes (kbtool/runners/registry.py; the specs layer
# sits below the runners, tests/test_spec_fidelity.py holds the two equal) and Keras 2.3.1's own NumPy oracle
DECISION_BACKENDS = (
    "tensorflow",
    "tensorflow1",
    "theano",
    "cntk",
    "mxnet",
    "plaidml",
    "keras3",
    "keras-numpy",
    "keras3-jax",
    "keras3-torch",
    "keras3-tensorflow",
    "keras3-numpy",
    "keras3-openvino",
)

# where the docs leave a behaviour open (or backends disagree) and the reference picks one: what it does, the
# evidence for that choice, and the backends that do otherwise (each keeps a known difference saying how)
REFERENCE_DECISION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["decision", "evidence", "differs"],
    "properties": {
        "decision": {"type": "string", "minLength": 1},  # what kbtool's reference does, in one sentence
        "evidence": {"type": "string", "minLength": 1},  # the docs/source checked (file, function)
        "differs": {"type": "array", "items": {"enum": list(DECISION_BACKENDS)}, "uniqueItems": True},
        # the calls on which every backend in `differs` differs: {parameter: [documented values]} (a call holding one
        # of the values of each); a blind spot they name is `decided` (kbtool/specs/coverage.py: Claim)
        "values": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "array", "minItems": 1},
        },
    },
}

# a benchmark shape family (kbtool/bench/families.py): a case whose dims (and `{eval: ...}` kwargs) are
# expressions of n, n per size, and a cost model over the input shapes (by parameter name), the kwargs and `out`
# (the first output's shape)
_BENCH_INPUT = dict(
    INPUT,
    properties=dict(
        INPUT["properties"], shape={"type": "array", "items": {"anyOf": [{"type": "integer", "minimum": 0}, _EXPR]}}
    ),
)
BENCH = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sizes", "case"],
    "properties": {
        "about": {"type": "string"},
        "sizes": {
            "type": "object",
            "additionalProperties": False,
            "required": list(SIZES),
            "properties": {k: {"type": "integer", "minimum": 1} for k in SIZES},
        },
        "case": dict(
            CASE,
            required=[],
            properties=dict(
                CASE["properties"],
                inputs={
                    "anyOf": [
                        {"type": "array", "items": _BENCH_INPUT},
                        {
                            "type": "object",
                            "additionalProperties": {"anyOf": [_BENCH_INPUT, {"type": "array", "items": _BENCH_INPUT}]},
                        },
                    ]
                },
            ),
        ),
        "flops": _EXPR,  # floating-point operations of one call
        "bytes": _EXPR,  # bytes one call must move at least (default: its inputs' and outputs' bytes)
    },
}

OP = {
    "type": "object",
    "additionalProperties": False,
    "required": ["category", "summary", "documented_in", "signature"],
    "properties": {
        "category": {
            "enum": [
                "config",
                "variables",
                "math",
                "compare",
                "reduce",
                "shape",
                "linalg",
                "nn",
                "loss",
                "norm",
                "conv",
                "pool",
                "random",
                "control",
                "graph",
                "ctc",
                "update",
            ]
        },
        "summary": {"type": "string"},
        "documented_in": _DOC_IDS,
        "alias_of": _NAME,
        "signature": {"type": "array", "items": PARAM},
        "signature_changes": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["docs", "note"],
                # signature: that doc version's signature line, verbatim (tests/test_spec_fidelity.py checks it)
                "properties": {"docs": _DOC_IDS, "note": {"type": "string"}, "signature": {"type": "string"}},
            },
        },
        "returns": {"type": "string"},
        "shape_rules": {"type": "array", "items": SHAPE_RULE},
        "raises": {"type": "array", "items": RAISES},
        "doc_errors": {"type": "array", "items": DOC_ERROR},
        "reference_decisions": {"type": "array", "items": REFERENCE_DECISION},
        "examples": {"type": "array", "items": EXAMPLE},
        "cases": {"type": "array", "items": CASE},
        "tolerance": _TOLERANCES,
        "not_checkable": {"type": "string"},  # why no case can run it (e.g. clear_session side effects)
        "reads_config": {
            "type": "array",
            "items": {"enum": list(CASE_KEYS)},
            "uniqueItems": True,
        },  # the keras.json settings the op reads
        "grid": GRID,  # cases generated from the parameters' domains
        "bench": BENCH,  # how `kbtool bench` grows its inputs (default: a case scaled along dim 0)
    },
}

SPEC = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "docs", "ops"],
    "properties": {
        "schema_version": {"const": 1},
        "domains": {"type": "object", "propertyNames": _NAME, "additionalProperties": {"type": "array", "minItems": 1}},
        "docs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["file", "lang"],
                "properties": {
                    "file": {"type": "string"},
                    "lang": {"type": "string"},
                    "keras": {"type": "string"},
                    "note": {"type": "string"},
                },
            },
        },
        "ops": {"type": "object", "propertyNames": _NAME, "additionalProperties": OP},
    },
}
