"""The Keras 2 backends, as data: each engine behind the Keras 2 backend API (`keras.backend` and its kin) with the
packages its env pins. The code some of them run on the machine (system libraries, settings files) is system.py's;
Theano's kernel-flipped variants are variants.py's."""

from kbtool.runners.recipes import system, variants
from kbtool.runners.recipes.recipe import Recipe

# the Keras 2 backends hide the GPU: kbtool runs them on the CPU only
HIDE_GPU = {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "-1"}


def _tensorflow_env(env_dir: str) -> dict[str, str]:
    return dict(HIDE_GPU)


def _mxnet_env(env_dir: str) -> dict[str, str]:
    return {"MXNET_STORAGE_FALLBACK_LOG_VERBOSE": "0", "OMP_NUM_THREADS": "1"}


# tf_keras 2.21 (the Keras 2 API) on TensorFlow 2.21, Python 3.11, numpy 2.
TENSORFLOW = Recipe(
    name="tensorflow",
    python_version="3.11",
    # tf-keras pins the matching tensorflow wheel itself.
    packages=["tensorflow==2.21.*", "tf-keras==2.21.*"],
    module="tf_keras.backend",
    # tf_keras.backend hides a few documented functions (logsumexp, identity, ...) that its
    # implementation module still has; they are checked there and the result says so.
    fallback_modules=["tf_keras.src.backend"],
    version_of=["tensorflow", "tf_keras", "numpy"],
    graph="tensorflow",  # symbolic mode builds a tf.Graph, as Keras 2 code did
    env_vars=_tensorflow_env,
    notes="eager mode runs under TF2 eager execution; symbolic mode inside a tf.Graph.",
    cpu_only="the Keras 2 backends run on the CPU only in kbtool (this recipe hides the GPU: CUDA_VISIBLE_DEVICES=-1)",
    release_couples={"tf-keras": ("tensorflow",)},  # tf-keras 2.14 runs on TF 2.14, but only 2.15+ says so
    case_seconds=0.01,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)

# keras 2.3.1's own `keras/backend/tensorflow_backend.py` on TensorFlow 1.15.5, Python 3.7: the TensorFlow backend
# the Keras 2.x docs describe (graph mode, a session per process), where `tensorflow` is tf_keras 2.21, a rewrite on
# TF2's eager execution.
TENSORFLOW1 = Recipe(
    name="tensorflow1",
    python_version="3.7",
    # the last TF1 release (cp37 wheels); h5py 3 and protobuf 4 postdate it and break its imports
    packages=["tensorflow==1.15.5", "keras==2.3.1", "h5py<3", "protobuf<3.21"],
    module="keras.backend",
    keras_backend="tensorflow",
    version_of=["tensorflow", "keras", "numpy"],
    # K.eval and K.function both run in keras's own session on the default graph, which kbtool clears before each
    # case (K.clear_session): the graph would otherwise hold every earlier case's ops
    clear_session=True,
    env_vars=_tensorflow_env,
    notes="graph mode: eager mode is K.eval in Keras's session, as Keras 2.3.1 code ran it.",
    case_seconds=0.02,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)

# keras 2.3.1 + theano 1.0.5 on Python 3.11 with numpy 1.23 and OpenBLAS.
THEANO = Recipe(
    name="theano",
    python_version="3.11",
    packages=["numpy==1.23.5", "scipy==1.10.1", "theano==1.0.5", "keras==2.3.1"],
    module="keras.backend",
    keras_backend="theano",
    shims=["collections_abc", "theano_no_c_scan", "fractions_gcd"],
    version_of=["theano", "keras", "numpy"],
    apt_packages=["libopenblas-dev"],
    env_vars=system.theano_flags,
    system_check=system.openblas_check,
    variants=variants.kernel_flipped_variants,
    variant_suffixes={variants.KERNEL_FLIPPED: variants.FLIPPED_KERNEL_OPS},
    # Theano builds and optimises a graph for every call (K.eval too), so its cases take most of a check's time (about
    # 0.08 s each, measured alone): the pool starts it first, and a second worker joins it from the back of its queue
    # once the other backends are done (kbtool/runners/pool.py)
    case_seconds=0.08,
    per_worker_env=system.theano_flags,
    # compiling a scan graph (ctc_batch_cost, rnn) cold takes minutes on 2 cores while the other worker compiles
    # too; a warm cache answers in seconds. A hang still ends, and --timeout still wins.
    case_timeout=600.0,
)

# keras 2.3.1 + cntk 2.7.post2, whose wheels stop at CPython 3.6.
CNTK = Recipe(
    name="cntk",
    python_version="3.6",
    bootstrap_packages=["pip<22"],  # the venv's pip 18 cannot read today's wheel metadata
    # Newest releases with cp36 wheels; later ones would try to build from source.
    packages=["cntk==2.7.post2", "keras==2.3.1", "numpy==1.19.5", "scipy==1.5.4", "pyyaml==5.4.1", "h5py==3.1.0"],
    module="keras.backend",
    keras_backend="cntk",
    version_of=["cntk", "keras", "numpy"],
    apt_packages=["libopenmpi3"],
    env_vars=system.mpi_env,
    system_check=system.mpi_check,
    prepare=system.mpi_links,
    # the cntk 2.7.post2 wheel's metadata calls itself 2.7 (a different wheel on PyPI): the lock pins the release
    freeze_aliases={"cntk==2.7": "cntk==2.7.post2"},
    case_seconds=0.006,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)

# AWS's keras-mxnet 2.2.4.3 (a fork of Keras 2.2.4 that installs as `keras`) on mxnet 1.9.1, Python 3.7.
MXNET = Recipe(
    name="mxnet",
    python_version="3.7",
    # keras-mxnet asks for mxnet>=1.3 without a cap; 1.9.1 is the last release (MKLDNN CPU build)
    packages=["keras-mxnet==2.2.4.3", "mxnet==1.9.1"],
    module="keras.backend",
    keras_backend="mxnet",
    version_of=["mxnet", "keras", "numpy"],
    env_vars=_mxnet_env,
    notes="keras-mxnet warns at import that its repository is archived; MXNet runs on the CPU.",
    case_seconds=0.025,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)

# plaidml-keras 0.7.0 (keras 2.2.4 with PlaidML's backend) on PlaidML's LLVM CPU device, Python 3.7. kbtool
# configures the device itself (system.plaidml_settings), and `plaidml.keras.install_backend()` (a shim) runs before
# keras is imported.
PLAIDML = Recipe(
    name="plaidml",
    python_version="3.7",
    packages=["plaidml-keras==0.7.0"],
    module="keras.backend",
    keras_backend="plaidml.keras.backend",
    shims=["plaidml_install_backend"],
    version_of=["plaidml", "keras", "numpy"],
    env_vars=system.plaidml_env,
    prepare=system.plaidml_settings,
    notes=f"runs on PlaidML's LLVM CPU device ({system.PLAIDML_DEVICE}), configured by kbtool.",
    case_seconds=0.09,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)

# `keras.src.legacy.backend` of keras 3.15.1, the Keras 2 functions as Keras 3 keeps them, on TF 2.21. It lives in
# the tensorflow backend's environment (TensorFlow 2.21 depends on keras 3), so it has no env of its own. It has
# `variable` and `eval` but no `placeholder` or `function`: only the eager mode can run.
KERAS3 = Recipe(
    name="keras3",
    python_version=TENSORFLOW.python_version,
    packages=TENSORFLOW.packages,
    env_name=TENSORFLOW.name,
    module="keras.src.legacy.backend",
    keras_backend="tensorflow",  # keras 3 picks its engine from KERAS_BACKEND too
    version_of=["keras", "tensorflow", "numpy"],
    env_vars=TENSORFLOW.env_vars,
    cpu_only=TENSORFLOW.cpu_only,
    modes=("eager",),
    unsupported_modes={
        "symbolic": "keras.src.legacy.backend has no placeholder or function (Keras 3 dropped "
        "symbolic tensors outside its Functional API), so no case can run symbolically"
    },
    notes="eager mode only; shares the tensorflow environment.",
    case_seconds=0.03,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
