"""kbtool.models.known (specs/known_models.yaml): the file parsed once into typed entries, an entry explaining the
findings it names (engine, model, status, call, match), the stale rule (judged only by a run that had its engine and
every model it names), and the localiser naming what op level cannot carry (a Keras 3 keras.ops namesake, a lone
undocumented backend function). No backend."""

import numpy as np
import pytest

from kbtool import paths
from kbtool.errors import KbtoolError
from kbtool.models import known, localise
from kbtool.models.records import Localisation, ModelResult, TracedCall
from kbtool.specs import loader

ZOO = ["lstm", "gru", "mlp"]
X = np.linspace(-4, 4, 12, dtype="float32").reshape(3, 4)


def rnn_finding(engine="cntk", model="lstm", why="its last output differs from the definition's loop"):
    where = Localisation(layer="lstm_1", layer_class="LSTM", call="rnn", why_not=why)
    return ModelResult(model, engine, "unexplained", "reference", localisation=where)


ENTRY = {
    "engine": "cntk",
    "model": ["lstm", "gru"],
    "call": "rnn",
    "match": "differs from the definition",
    "reason": "the CNTK recurrence returns its last state as the output",
}


def test_an_entry_explains_the_findings_it_names_and_no_other():
    [entry] = known.parse([ENTRY])
    assert entry.explains(rnn_finding())
    assert not entry.explains(rnn_finding(engine="mxnet"))
    assert not entry.explains(rnn_finding(model="mlp"))
    assert not entry.explains(rnn_finding(why="an unrelated message"))
    passing = ModelResult("lstm", "cntk", "pass", "reference")
    assert not entry.explains(passing)
    other_call = rnn_finding()
    other_call.localisation = Localisation(
        layer="l", layer_class="LSTM", call="dot", why_not="differs from the definition"
    )
    assert not entry.explains(other_call)
    release = rnn_finding(engine="cntk[cntk=2.6]")
    assert entry.explains(release)  # a glob on the base names its releases, as known_differences.yaml's do


def test_an_error_is_explained_by_its_message_without_a_localisation():
    [entry] = known.parse(
        [
            {
                "engine": "cntk",
                "status": "error",
                "call": "conv2d",
                "match": "kernel dim \\d+ <= input",
                "reason": "CNTK refuses a kernel wider than its input under 'same'",
            }
        ]
    )
    raised = ModelResult(
        "vgg16", "cntk", "error", "reference", reason="ValueError: ... requires that kernel dim 3 <= input dim 2"
    )
    assert entry.explains(raised)
    assert not entry.explains(rnn_finding())  # status error only
    [callless] = known.parse(
        [
            {
                "engine": "cntk",
                "status": "error",
                "match": "kernel dim",
                "reason": "CNTK refuses a kernel wider than its input under 'same'",
            }
        ]
    )
    assert not callless.explains(raised)  # nobody names the call: an explained finding always names its call
    raised.localisation = Localisation("block5_conv1", "Conv2D", "conv2d")
    assert callless.explains(raised)  # the localiser named it
    [globbed] = known.parse([dict(ENTRY, call="conv*", status="error", match="kernel dim", model="vgg16")])
    raised.localisation = None
    assert not globbed.explains(raised)  # a glob names no one function
    results = [ModelResult("vgg16", "cntk", "error", "reference", reason="kernel dim 3 <= input dim 2")]
    known.apply(results, [entry], ["cntk"], ZOO)
    assert (results[0].verdict, results[0].known_call) == ("known", "conv2d")


def test_apply_makes_findings_known_and_finds_stale_entries():
    entries = known.parse([ENTRY, dict(ENTRY, engine="mxnet", reason="an entry nothing in this run matches anymore")])
    results = [rnn_finding(), rnn_finding(model="gru"), rnn_finding(engine="theano")]
    applied = known.apply(results, entries, ["cntk", "mxnet", "theano"], ZOO)
    assert [r.verdict for r in results] == ["known", "known", "unexplained"]
    assert results[0].known_model == entries[0].id and "last state" in results[0].known_reason
    assert applied.explained[entries[0].id] == 2
    # the mxnet entry explained nothing in a run that had mxnet and both models it names: stale
    assert [e.engine for e in applied.stale] == ["mxnet"]
    only_lstm = [rnn_finding()]
    assert known.apply(only_lstm, entries, ["cntk", "mxnet"], ZOO).stale == ()  # gru did not run: not judged
    assert known.apply([rnn_finding(), rnn_finding(model="gru")], entries, ["cntk"], ZOO).stale == ()


def test_a_gradient_entry_is_judged_only_where_the_gradients_were_compared():
    from kbtool.models.records import Difference

    [entry] = known.parse([dict(ENTRY, engine="plaidml", model="conv_pools", call="gradients", match="gradients")])
    quiet = ModelResult("conv_pools", "plaidml", "pass", "reference")  # two engines trained: no gradient majority
    assert known.apply([quiet], [entry], ["plaidml", "tensorflow1"], ["conv_pools"]).stale == ()
    compared = ModelResult("conv_pools", "plaidml", "pass", "reference", gradient=Difference(0, 0, 0, 1e-5, False))
    assert known.apply([compared], [entry], ["plaidml", "tensorflow1"], ["conv_pools"]).stale == (entry,)


def test_ids_are_stable_under_rewording_and_differ_by_target():
    one, reworded, other = known.parse(
        [ENTRY, dict(ENTRY, reason="reworded: the recurrence returns n_s[-1]"), dict(ENTRY, engine="mxnet")]
    )
    assert one.id == reworded.id != other.id and one.id.startswith("model-rnn-")


@pytest.mark.parametrize(
    "bad, words",
    [
        ([{"engine": "cntk"}], "'reason' is a required property"),
        ([dict(ENTRY, status="fail")], "status"),
        ([dict(ENTRY, match="(")], "match is no regex"),
        ([dict(ENTRY, colour="red")], "colour"),
        ({"engine": "cntk"}, "is not of type 'array'"),
    ],
)
def test_a_broken_file_is_one_line_naming_the_problem(bad, words):
    with pytest.raises(KbtoolError) as caught:
        known.parse(bad, "known_models.yaml")
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_shipped_file_parses_and_each_entry_cites_a_source():
    entries = known.load(paths.known_models_file())
    assert entries, "the shipped file explains the findings of the published report"
    assert all(e.source for e in entries)
    assert len({e.id for e in entries}) == len(entries)


def test_a_missing_file_has_no_entries(tmp_path):
    assert known.load(str(tmp_path / "absent.yaml")) == []


# ------------------------------------------------------------------------------------------- what the localiser names


@pytest.fixture(scope="module")
def spec():
    return loader.load()


def test_a_keras3_namesake_the_map_disowns_is_named_and_left_to_known_models(spec):
    relu6 = np.clip(X + 3, 0, 6) / 6  # keras.ops.hard_sigmoid
    traced = TracedCall("ops.hard_sigmoid", ({"array": 0},), {}, (X,), relu6.astype("float32"))
    cause, _ = localise.first_cause([traced], spec)
    assert cause is not None and cause.namesake and cause.call.op == "hard_sigmoid"
    assert "which is not K.hard_sigmoid" in cause.message and "slope" in cause.message
    k2 = np.clip(0.2 * X + 0.5, 0, 1).astype("float32")  # what K.hard_sigmoid computes: agrees, nothing named
    assert localise.first_cause([TracedCall("ops.hard_sigmoid", ({"array": 0},), {}, (X,), k2)], spec)[0] is None
    where = Localisation(layer="act", layer_class="Activation")
    result = ModelResult("activations", "keras3-jax", "unexplained", "reference", localisation=where)
    named, emitted = localise.localise(result, [traced], spec, replay=None)
    assert (named.call, named.verdict, emitted) == ("hard_sigmoid", "unexplained", None)
    assert named.call_text.startswith("K.hard_sigmoid(x[3,4]")


def test_a_lone_undocumented_call_is_named_when_nothing_else_differs(spec):
    bn = TracedCall("mxnet_batchnorm", ({"array": 0},), {}, (X,), X)
    shape = TracedCall("int_shape", ({"array": 0},), {}, (X,), None)
    cause, _ = localise.first_cause([shape, bn], spec)
    assert cause is not None and cause.undocumented and cause.traced == "mxnet_batchnorm"
    assert "not a documented K.* function" in cause.message
    two = TracedCall("other_private", ({"array": 0},), {}, (X,), X)
    assert localise.first_cause([bn, two], spec)[0] is None  # two unjudged calls: which one is unknown
    relu = TracedCall("relu", ({"array": 0},), {}, (X,), np.maximum(X, 0) + 1)
    assert localise.first_cause([bn, relu], spec)[0].call.op == "relu"  # a call that differs comes first


# ------------------------------------------------------------------------------------------- the report and its views


def _document(stale=()):
    from kbtool.models import report

    where = Localisation(layer="lstm_1", layer_class="LSTM", call="rnn", call_text="K.rnn(step_function, ...)")
    explained = ModelResult(
        "lstm",
        "cntk",
        "known",
        "reference",
        localisation=where,
        known_model="model-rnn-0123abcd",
        known_reason="the CNTK recurrence returns its last state as the output",
    )
    raised = ModelResult(
        "vgg16",
        "cntk",
        "known",
        "reference",
        reason="ValueError: kernel dim 3 <= input dim 2",
        known_model="model-conv2d-4567cdef",
        known_reason="CNTK refuses a kernel wider than its input",
        known_call="conv2d",
    )
    engines = [{"name": e, "status": "available"} for e in ("numpy", "cntk")]
    run = report.ModelsRun(
        settings={"seed": 0, "train": True, "models": [], "backends": []},
        oracle="numpy",
        engines=engines,
        models=[{"name": "lstm", "family": "rnn", "about": "LSTM"}],
        results=[explained, raised],
        stale_known=list(stale),
    )
    return report.assemble(run)


def test_a_known_model_finding_is_reported_with_its_entry_and_exits_0():
    from kbtool.models import markdown, report

    doc = _document()
    assert report.validate(doc) == [] and report.exit_code(doc) == 0
    assert doc["results"][0]["known"] == {
        "id": "model-rnn-0123abcd",
        "reason": "the CNTK recurrence returns its last state as the output",
    }
    assert "[known: model-rnn-0123abcd]" in report.finding_text(doc["results"][0])
    assert "[known: model-conv2d-4567cdef]" in report.finding_text(doc["results"][1])
    assert "-> K.conv2d (named by the entry)" in report.finding_text(doc["results"][1])
    assert doc["results"][1]["known"]["call"] == "conv2d"
    text = markdown.render(doc)
    assert "model-rnn-0123abcd: the CNTK recurrence returns its last state" in text


def test_a_stale_entry_fails_the_run_in_every_view(capsys):
    from kbtool.models import html, markdown, report, terminal

    [entry] = known.parse([ENTRY])
    doc = _document([dict(known.stale_record(entry))])
    assert report.validate(doc) == []
    assert doc["summary"]["stale"] == 1 and not doc["summary"]["ok"] and report.exit_code(doc) == 1
    assert "1 stale entry in specs/known_models.yaml" in report.reasons(doc)
    assert "Stale known entries (1)" in markdown.render(doc)
    assert entry.id in html.render(doc)
    terminal.render(doc)
    out = capsys.readouterr().out
    assert f"stale: specs/known_models.yaml entry 1 ({entry.id})" in out and "not ok" in out
