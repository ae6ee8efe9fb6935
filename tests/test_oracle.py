"""The oracle's K.backend() answer: the caller (the session) gives the Keras name of a built-in backend, so the
reference never imports the runners."""

from types import SimpleNamespace

from kbtool.reference.oracle import Oracle, own_name
from kbtool.runners.registry import keras_name_of


def _value(reply):
    header, arrays = reply
    assert header["status"] == "ok" and arrays == []
    return header["outputs"][0]["value"]


def test_a_built_in_backend_answers_what_keras_calls_it():
    assert _value(own_name("tensorflow1", {}, lambda name: {"tensorflow1": "tensorflow"}.get(name, name))) == (
        "tensorflow"
    )
    assert _value(own_name("tensorflow1", {}, keras_name_of)) == "tensorflow"  # keras 2.3.1 on TF1 calls it so
    assert _value(own_name("numpy", {}, keras_name_of)) == "numpy"


def test_module_at_env_answers_the_env_and_a_module_what_its_worker_said():
    assert _value(own_name("my.backend@theano", {}, keras_name_of)) == "theano"
    assert _value(own_name("my.backend", {"backend": "mine"}, keras_name_of)) == "mine"
    assert _value(own_name("my.backend", {}, keras_name_of)) == "my.backend"
    assert keras_name_of("my.backend") is None and keras_name_of("my.backend@tensorflow1") == "tensorflow"


def test_the_oracle_hands_the_callers_lookup_on():
    case = SimpleNamespace(expect_backend_name=True)
    assert _value(Oracle().expected(case, None, "numpy", lambda name: name + "!")) == "numpy!"
    assert _value(Oracle().expected(case, None, "numpy")) == "numpy"  # without a lookup: kbtool's name
