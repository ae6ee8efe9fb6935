"""TensorFlow backend: tf_keras 2.21 (the Keras 2 API) on TensorFlow 2.21, Python 3.11, numpy 2."""

from kbtool.runners.base import Recipe

RECIPE = Recipe(
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
    env_vars=lambda env_dir: {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "-1"},
    notes="eager mode runs under TF2 eager execution; symbolic mode inside a tf.Graph.",
    cpu_only="the Keras 2 backends run on the CPU only in kbtool (this recipe hides the GPU: CUDA_VISIBLE_DEVICES=-1)",
    release_couples={"tf-keras": ("tensorflow",)},  # tf-keras 2.14 runs on TF 2.14, but only 2.15+ says so
    case_seconds=0.01,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
