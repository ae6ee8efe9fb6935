"""The one grammar of backend names (kbtool/runners/names.py): plain names, releases, custom modules in an env."""

import os

import pytest

from kbtool.errors import KbtoolError
from kbtool.runners import names
from kbtool.runners.names import Release


@pytest.mark.parametrize(
    "package, normal",
    [("tf_keras", "tf-keras"), ("TF-Keras", "tf-keras"), ("Keras", "keras"), ("a.b__c", "a-b-c"), (" numpy ", "numpy")],
)
def test_packages_are_compared_as_pep_503_writes_them(package, normal):
    assert names.normalise(package) == normal


@pytest.mark.parametrize(
    "requirement, name",
    [
        ("tf-keras==2.21.*", "tf-keras"),
        ("jax[cpu]==0.10.2", "jax"),
        ("h5py<3", "h5py"),
        ("Keras_Applications>=1", "keras-applications"),
    ],
)
def test_a_requirement_names_its_package(requirement, name):
    assert names.requirement_name(requirement) == name


def test_a_release_has_one_canonical_spelling():
    release = names.parse_release(" tensorflow1[numpy=1.16.6, Keras=2.2.4] ")
    assert release == Release("tensorflow1", (("keras", "2.2.4"), ("numpy", "1.16.6")))
    assert release.name == "tensorflow1[keras=2.2.4,numpy=1.16.6]"
    assert release.folder == os.path.join("releases", "tensorflow1", "keras-2.2.4+numpy-1.16.6")
    assert release.version_of("KERAS") == "2.2.4" and release.version_of("theano") is None
    assert release.describe_pins() == "keras 2.2.4, numpy 1.16.6"
    assert names.canonical("tensorflow[TF_Keras=2.16.0]") == "tensorflow[tf-keras=2.16.0]"


@pytest.mark.parametrize(
    "name, said",
    [
        ("tensorflow1", "'tensorflow1': a release is written BACKEND[PACKAGE=VERSION], e.g. tensorflow1[keras=2.2.4]"),
        ("tensorflow1[keras]", "'tensorflow1[keras]': 'keras' is not PACKAGE=VERSION (e.g. keras=2.2.4)"),
        (
            "tensorflow1[keras==2.2.4]",
            "'tensorflow1[keras==2.2.4]': 'keras==2.2.4' is not PACKAGE=VERSION (e.g. keras=2.2.4)",
        ),
        (
            "tensorflow1[]",
            "'tensorflow1[]': name at least one PACKAGE=VERSION in the brackets, e.g. tensorflow1[keras=2.2.4]",
        ),
        ("tensorflow1[keras=2.2.4,Keras=2.2.5]", "'tensorflow1[keras=2.2.4,Keras=2.2.5]': keras is pinned twice"),
        (
            "a b[keras=1]",
            "'a b[keras=1]': a release is written BACKEND[PACKAGE=VERSION], e.g. tensorflow1[keras=2.2.4]",
        ),
    ],
)
def test_a_malformed_release_says_what_is_wrong_in_one_line(name, said):
    with pytest.raises(KbtoolError) as caught:
        names.parse_release(name)
    assert str(caught.value) == said
    assert names.read_release(name) is None and names.canonical(name) == name


def test_a_release_of_an_unknown_base_is_refused_before_its_pins_are_read():
    with pytest.raises(KbtoolError) as caught:
        names.parse_release("nope[keras]", bases=["tensorflow", "theano"])
    assert str(caught.value) == (
        "'nope[keras]': nope is not a built-in backend with an env of its own; releases of tensorflow, theano can be asked"
    )
    assert names.parse_release("theano[theano=1.0.2]", bases=["theano"]).base == "theano"


@pytest.mark.parametrize(
    "name, release, base, pins",
    [
        ("tensorflow1[keras=2.2.4]", True, "tensorflow1", "[keras=2.2.4]"),
        ("tensorflow1", False, "tensorflow1", ""),
        ("my.mod@tensorflow", False, "my.mod@tensorflow", ""),
        ("tensorflow1[keras", False, "tensorflow1[keras", ""),
    ],
)
def test_the_base_of_a_release_is_read_from_its_name(name, release, base, pins):
    assert names.is_release(name) is release
    assert names.base_of(name) == base and names.pins_text(name) == pins


@pytest.mark.parametrize(
    "name, module, env, custom, env_name",
    [
        ("my_backend", "my_backend", "", True, "my_backend"),
        ("my_pkg.my_mod@tensorflow", "my_pkg.my_mod", "tensorflow", True, "tensorflow"),
        ("tensorflow", "tensorflow", "", True, "tensorflow"),
        ("keras3-jax", "keras3-jax", "", False, "keras3-jax"),
        ("1bad.mod@tensorflow", "1bad.mod", "tensorflow", False, "tensorflow"),
    ],
)
def test_a_custom_name_is_a_module_and_its_env(name, module, env, custom, env_name):
    assert names.split_custom(name) == (module, env)
    assert names.is_custom(name) is custom
    assert names.env_name(name) == env_name


def test_a_range_is_a_package_and_two_versions():
    assert names.parse_range(" Keras=2.2.4..2.3.1 ") == ("keras", "2.2.4", "2.3.1")
    with pytest.raises(KbtoolError) as caught:
        names.parse_range("keras=2.2.4")
    assert str(caught.value) == "--versions 'keras=2.2.4': write PACKAGE=LOW..HIGH, e.g. keras=2.2.4..2.3.1"
