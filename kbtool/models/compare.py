"""One model's runs on every engine compared with an oracle: which run is the oracle, each engine's forward and
gradient Difference from it, and the first layer that diverges.

The oracle is the reference's run (engine "numpy": Keras 2.3.1 on kbtool's NumPy reference) when it ran the model;
else CRADLE's vote: the run whose outputs most other engines agree with (within the model's tolerance), when more
than half of the engines that ran agree with it; else there is no oracle and nothing is judged. Each ModelResult
says which (`oracle`, `oracle_engine`).

The first divergent layer: the layers in topological order, matched with the oracle's by name (by order when the
names differ but the classes match), the first whose outputs diverge while every inbound layer's outputs agree. When
the divergence grows over several layers and none diverges with agreeing inputs, the diverging layer with the
largest CRADLE rate R_L (models/metrics.py) is named, with `inputs_agree` False. Engines whose weight shape lists
differ built another architecture: they are not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool.models import metrics
from kbtool.models.records import Difference, EngineRun, LayerOutput, Localisation, ModelResult

REFERENCE = "numpy"  # the engine that is kbtool's reference (part O's Keras backend module)


@dataclass(frozen=True)
class OracleChoice:
    """What a model's runs are compared with: the reference's run, the majority's, or nothing (`engine` None)."""

    kind: str  # "reference" or "majority" (records.ORACLES)
    engine: Optional[str]  # the engine whose run is the oracle
    note: str  # in words: which, and why


@dataclass(frozen=True)
class Divergence:
    """The layer where an engine's forward pass leaves the oracle's."""

    layer: str
    layer_class: str
    rate: float  # CRADLE's R_L
    inputs_agree: bool  # False: chosen by the largest rate, its inputs already differed
    inputs: Tuple[str, ...]  # its inbound layers (whose outputs are its inputs)


def depths(layers: Sequence[LayerOutput]) -> Dict[str, int]:
    """Each layer's depth: 0 for a layer with no inbound layer (an input), else one more than its deepest inbound."""
    out: Dict[str, int] = {}
    for layer in layers:  # topological order: every inbound layer comes first
        out[layer.name] = 1 + max((out.get(name, 0) for name in layer.inbound), default=-1)
    return out


def model_depth(run: EngineRun) -> int:
    """The longest path from an input to an output, in layers (at least 1)."""
    return max([1, *depths(run.layers).values()])


def choose_oracle(runs: Mapping[str, EngineRun], reference: str = REFERENCE) -> OracleChoice:
    """The reference's run when it ran the model, else the majority's (CRADLE's vote), else none."""
    ref = runs.get(reference)
    if ref is not None and ref.status == "ok":
        return OracleChoice("reference", reference, f"the reference ({reference}) ran the model")
    why = "did not run" if ref is None else f"could not run it ({ref.status}: {ref.reason})"
    ok = [name for name, run in runs.items() if run.status == "ok" and name != reference]
    best, votes = None, 0
    for name in ok:
        tol = metrics.depth_tolerance(model_depth(runs[name]))
        count = sum(1 for other in ok if metrics.agree(runs[other].outputs, runs[name].outputs, tol))
        if count > votes:
            best, votes = name, count
    if best is None or votes * 2 <= len(ok):
        note = f"the reference {why}, and no majority of the {len(ok)} engines that ran it agrees"
        return OracleChoice("majority", None, note)
    note = f"the reference {why}: the majority, {votes} of {len(ok)} engines agreeing with {best}"
    return OracleChoice("majority", best, note)


def architecture_problem(run: EngineRun, oracle: EngineRun) -> Optional[str]:
    """Why the two runs built different models (their weights' shapes, in get_weights() order), or None."""
    mine, theirs = [tuple(s) for _, s in run.weights], [tuple(s) for _, s in oracle.weights]
    if mine == theirs:
        return None
    if len(mine) != len(theirs):
        return f"architecture differs: {len(mine)} weights against the oracle's {len(theirs)}"
    first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
    return f"architecture differs: weight {first} ({run.weights[first][0]}) has shape {mine[first]}, the oracle's {theirs[first]}"


def match_layers(run: EngineRun, oracle: EngineRun) -> Tuple[Optional[Dict[str, LayerOutput]], str]:
    """The oracle's layer for each of the run's layers (by name, else by order when the classes match) and a note;
    None with why when they cannot be matched."""
    theirs = {layer.name: layer for layer in oracle.layers}
    if all(layer.name in theirs for layer in run.layers):
        return {layer.name: theirs[layer.name] for layer in run.layers}, ""
    if [layer.cls for layer in run.layers] == [layer.cls for layer in oracle.layers]:
        return {a.name: b for a, b in zip(run.layers, oracle.layers)}, "layer names differ: matched by order"
    return None, "the layers differ from the oracle's (names and classes): no layer can be matched"


def first_divergent_layer(run: EngineRun, oracle: EngineRun) -> Tuple[Optional[Divergence], str]:
    """The layer where the run leaves the oracle (see the module's docstring), or None and why not."""
    matched, note = match_layers(run, oracle)
    if matched is None:
        return None, note
    depth = depths(run.layers)
    delta: Dict[str, float] = {}
    diverged: Dict[str, bool] = {}
    candidates: List[Divergence] = []
    for layer in run.layers:
        other = matched[layer.name]
        tol = metrics.depth_tolerance(depth[layer.name])
        found = metrics.difference(layer.arrays, other.arrays, tol)
        delta[layer.name] = found.mad
        diverged[layer.name] = found.inconsistent
        if not found.inconsistent:
            continue
        rate = metrics.introduction_rate(found.mad, [delta.get(name, 0.0) for name in layer.inbound])
        agreeing = not any(diverged.get(name, False) for name in layer.inbound)
        divergence = Divergence(layer.name, layer.cls, rate, agreeing, layer.inbound)
        if agreeing:
            return divergence, note
        candidates.append(divergence)
    if not candidates:
        return None, "no layer's outputs diverge"
    return max(candidates, key=lambda d: d.rate), note


def raised_in_text(fn: str, args: Mapping[str, Any]) -> str:
    """The raising call as one line: K.conv2d(x[None,2,2,64] float32, kernel[3,3,64,64] float32, padding='same')."""
    parts = []
    for name, value in args.items():
        if isinstance(value, Mapping) and "shape" in value:
            dims = ",".join("None" if d is None else str(d) for d in value["shape"])
            parts.append(f"{name}[{dims}] {value.get('dtype', '')}".rstrip())
        elif isinstance(value, Mapping) and "tuple" in value:
            parts.append(f"{name}={tuple(value['tuple'])!r}")
        elif isinstance(value, Mapping):
            parts.append(f"{name}={value.get('repr', '?')}")
        else:
            parts.append(f"{name}={value!r}")
    return f"K.{fn}({', '.join(parts)})"


def raised_localisation(where: Mapping[str, Any]) -> Optional[Localisation]:
    """Where a run that raised was, as a localisation (the layer, and the backend call that raised when the
    traceback passed through one); None when the worker could not tell."""
    if not where.get("layer"):
        return None
    fn = where.get("fn")
    text = raised_in_text(str(fn), where.get("args") or {}) if fn else ""
    why = "" if fn else "it raised in the layer outside any backend function"
    return Localisation(str(where["layer"]), str(where.get("class", "?")), str(fn) if fn else None, text, why_not=why)


def compare_run(
    run: EngineRun, oracle: EngineRun, choice: OracleChoice, trained: Optional[EngineRun] = None
) -> ModelResult:
    """One engine's run judged against the oracle's: pass, or unexplained with its first divergent layer (the
    localisation stage names the K.* call and may make it known); unsupported/error when it did not run."""
    assert choice.engine is not None
    result = ModelResult(run.model, run.engine, "pass", choice.kind, oracle_engine=choice.engine, seconds=run.seconds)
    if run.status != "ok":
        result.verdict = "unsupported" if run.status == "unsupported" else "error"
        result.reason = run.reason or run.status
        result.localisation = raised_localisation(run.raised_in)
        result.raised_args = dict(run.raised_in.get("args") or {})
        return result
    problem = architecture_problem(run, oracle)
    if problem:
        result.verdict, result.reason = "not_compared", problem + ": not comparable"
        return result
    depth = model_depth(run)
    result.forward = metrics.difference(run.outputs, oracle.outputs, metrics.depth_tolerance(depth))
    grad_oracle = oracle if oracle.gradients else trained
    if grad_oracle is not None:
        result.gradient = _gradient(run, grad_oracle, depth)
        result.gradient_oracle = grad_oracle.engine if result.gradient is not None else ""
    inconsistent = [d for d in (result.forward, result.gradient) if d is not None and d.inconsistent]
    if not inconsistent and run.train_raised and trained is not None:
        # the forward pass agrees, the engines that train agree, and this one's training step raised
        result.verdict, result.reason = "unexplained", f"{run.train_note}: the forward pass agrees; not localised"
        return result
    if not inconsistent:
        return result
    result.verdict = "unexplained"
    divergence, note = first_divergent_layer(run, oracle)
    if divergence is None:
        if not result.forward.inconsistent and grad_oracle is not None:
            result.localisation = gradient_localisation(run, grad_oracle, depth)
        what = "the gradients differ while the forward pass agrees" if not result.forward.inconsistent else note
        result.reason = f"{what}" + ("" if result.localisation else ": no layer to trace")
        return result
    result.localisation = Localisation(
        layer=divergence.layer,
        layer_class=divergence.layer_class,
        why_not=note,
        rate=divergence.rate,
        inputs_agree=divergence.inputs_agree,
    )
    return result


def gradient_localisation(run: EngineRun, oracle: EngineRun, depth: int) -> Optional[Localisation]:
    """Where the training step's gradients diverge while the forward pass agrees: the call is K.gradients, the
    engine's autodiff (the loss it differentiates agrees), and the layer the first one, counted from the output (where
    the backward pass starts), whose weights' gradients differ. None when the weights are not named alike."""
    if not run.trainable or run.trainable != oracle.trainable or len(run.gradients) != len(oracle.gradients):
        return None
    tolerance = metrics.depth_tolerance(2 * depth)
    differing = {
        key.split("/")[0]
        for key, mine, theirs in zip(run.trainable, run.gradients, oracle.gradients)
        if metrics.difference([mine], [theirs], tolerance).inconsistent
    }
    order = [layer for layer in run.layers if layer.name in differing]
    if not order:
        return None
    last = order[-1]
    loss = "" if run.loss is None or oracle.loss is None else f" (loss {run.loss:.6g} vs {oracle.loss:.6g})"
    why = (
        f"the forward pass agrees{loss}, the gradients do not: {len(differing)} of the trainable layers' gradients "
        f"differ from {oracle.engine}'s; {last.name} is the first counted from the output"
    )
    return Localisation(last.name, last.cls, "gradients", f"K.gradients(loss, {last.name}'s weights)", why_not=why)


def _gradient(run: EngineRun, oracle: EngineRun, depth: int) -> Optional[Difference]:
    """The training step's gradients against the oracle's, when both trained (backward through every layer: twice
    the forward depth's tolerance)."""
    if not run.gradients or not oracle.gradients:
        return None
    return metrics.difference(run.gradients, oracle.gradients, metrics.depth_tolerance(2 * depth))


def gradient_majority(runs: Mapping[str, EngineRun]) -> Optional[EngineRun]:
    """The run whose gradients most engines that trained agree with (more than half of them), else None: the
    oracle of the training step where the forward oracle did not train (the reference differentiates placeholders
    only)."""
    trained = [run for run in runs.values() if run.status == "ok" and run.gradients]
    best, votes = None, 0
    for run in trained:
        tol = metrics.depth_tolerance(2 * model_depth(run))
        count = sum(1 for other in trained if metrics.agree(other.gradients, run.gradients, tol))
        if count > votes:
            best, votes = run, count
    return best if best is not None and len(trained) >= 2 and votes * 2 > len(trained) else None


def compare_model(runs: Mapping[str, EngineRun], reference: str = REFERENCE) -> Tuple[OracleChoice, List[ModelResult]]:
    """Every engine's run of one model judged against the oracle chosen for it (the reference's own run is the
    oracle, not judged); without an oracle every run that ran is `not_compared`, saying why."""
    choice = choose_oracle(runs, reference)
    trained = gradient_majority(runs)
    results: List[ModelResult] = []
    for name, run in runs.items():
        if name == reference and choice.kind == "reference":
            continue
        if choice.engine is None:
            verdict = (
                "not_compared" if run.status == "ok" else "unsupported" if run.status == "unsupported" else "error"
            )
            reason = choice.note if run.status == "ok" else (run.reason or run.status)
            results.append(ModelResult(run.model, name, verdict, choice.kind, reason=reason, seconds=run.seconds))
            continue
        results.append(compare_run(run, runs[choice.engine], choice, trained))
    return choice, results
