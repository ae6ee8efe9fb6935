"""The typed records `kbtool models` hands between its stages: what an engine answered for one model (EngineRun),
how far two outputs are apart (Difference), where an inconsistency comes from (Localisation), and one model on one
engine judged (ModelResult). Arrays stay NumPy arrays here; the report turns them into numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from numpy.typing import NDArray

# what an engine's run of a model came to (the worker's answer, or why there is none)
RUN_STATUSES = ("ok", "unsupported", "error", "crash", "timeout", "could_not_start")
# a model on an engine, judged: like check's statuses, plus `consistent`/`inconsistent` before known differences
VERDICTS = ("pass", "known", "unexplained", "unsupported", "error", "not_compared")
ORACLES = ("reference", "majority")  # what a model's outputs were compared with


@dataclass(frozen=True)
class LayerOutput:
    """One layer's output(s) in the forward pass, in topological order."""

    name: str
    cls: str  # the layer's class name, e.g. "Conv2D"
    inbound: Tuple[str, ...]  # the names of the layers whose outputs it takes
    arrays: Tuple[NDArray[Any], ...]


@dataclass
class EngineRun:
    """What one engine's worker answered for one model (status "ok"), or why it could not run it."""

    engine: str
    model: str
    status: str  # one of RUN_STATUSES
    reason: str = ""  # why not ok (one line)
    layers: List[LayerOutput] = field(default_factory=list)
    outputs: List[NDArray[Any]] = field(default_factory=list)  # the model's outputs
    weights: List[Tuple[str, Tuple[int, ...]]] = field(default_factory=list)  # (name, shape), get_weights() order
    loss: Optional[float] = None  # the training step's loss, before the update
    gradients: List[NDArray[Any]] = field(default_factory=list)  # per trainable weight, in order
    trainable: List[str] = field(default_factory=list)  # each gradient's weight key ("LAYER/J"), in that order
    train_note: str = ""  # why there is no training step on this engine ("" when there is one)
    train_raised: bool = False  # the training step raised (its note says what) where the forward pass ran
    seconds: float = 0.0
    versions: Dict[str, str] = field(default_factory=dict)
    # where a run that raised was (the worker's modelzoo/raised.py): {layer, class, fn, args: {name: shape or value}}
    raised_in: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Difference:
    """How far an engine's arrays are from the oracle's: the largest absolute and relative difference, CRADLE's mean
    absolute deviation, and whether that deviation passes the inconsistency threshold."""

    max_abs: float
    max_rel: float
    mad: float
    threshold: float
    inconsistent: bool


@dataclass(frozen=True)
class TracedCall:
    """One K.* call a layer made, as the engine's worker recorded it: the function's K.* name, its arguments (arrays
    by index into `arrays`, the rest as given) and its output."""

    fn: str
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any]
    arrays: Tuple[NDArray[Any], ...]
    output: Optional[NDArray[Any]]
    outputs: Tuple[NDArray[Any], ...] = ()  # every output, where the call returned several (K.rnn: last, all, states)
    # what the call returns by its definition, computed in the worker where the reference cannot replay it (K.rnn's
    # step function cannot cross the wire: kbtool/worker/modelzoo/definitions.py); () when not computed
    expected: Tuple[NDArray[Any], ...] = ()
    no_expected: str = ""  # why `expected` could not be computed, where the worker tried


@dataclass(frozen=True)
class Localisation:
    """Where an inconsistency comes from: the first layer that diverges while its inputs agree, and within it the
    first K.* call whose output differs from the reference's for the same inputs; then what op level says of it."""

    layer: str
    layer_class: str
    call: Optional[str] = None  # the K.* function, e.g. "conv2d"; None when no call could be named
    call_text: str = ""  # the call as kbtool prints one: K.conv2d(x[2,5,5,3] float32 ..., padding='same')
    verdict: str = "unexplained"  # "known" (an entry explains the op-level replay) or "unexplained"
    known_id: Optional[str] = None  # the entry that explains it
    case_id: Optional[str] = None  # the spec case written for it (--emit-cases)
    why_not: str = ""  # when call is None: why the call could not be named
    rate: Optional[float] = None  # CRADLE's inconsistency introduction rate R_L of the layer (models/metrics.py)
    inputs_agree: bool = True  # False: no layer diverges with agreeing inputs; the layer of the largest rate


@dataclass
class ModelResult:
    """One model on one engine, judged against the oracle."""

    model: str
    engine: str
    verdict: str  # one of VERDICTS
    oracle: str  # one of ORACLES
    oracle_engine: str = ""  # the engine whose run was the oracle ("numpy": the reference; else the majority's)
    # the engine whose training step the gradients were compared with: the majority of the engines that trained
    # (the reference does not train), "" when no majority agrees or fewer than two engines trained
    gradient_oracle: str = ""
    forward: Optional[Difference] = None
    gradient: Optional[Difference] = None
    localisation: Optional[Localisation] = None
    reason: str = ""  # unsupported / error / not_compared: why, one line
    seconds: float = 0.0
    # the specs/known_models.yaml entry that explains the finding (models/known.py), and its reason: for what op
    # level cannot carry (an op-level explanation is the localisation's known_id)
    known_model: Optional[str] = None
    known_reason: str = ""
    known_call: str = ""  # the K.* function the entry names where the localiser named none (checked in the source)
    # the arguments of the K.* call a run raised in, as the worker described them (EngineRun.raised_in's args)
    raised_args: Dict[str, Any] = field(default_factory=dict)
