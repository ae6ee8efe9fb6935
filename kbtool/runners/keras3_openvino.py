"""keras3-openvino: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=openvino, openvino 2026.4.1 (CPU
plugin; Keras 3's OpenVINO engine is inference-only)."""

from kbtool.runners.keras3_engines import KERAS, engine_recipe

# keras's openvino engine imports scipy (keras/src/backend/openvino/math.py), which keras does not declare
RECIPE = engine_recipe("openvino", packages=[KERAS, "openvino==2026.4.1", "scipy==1.17.1"], version_of=["openvino"])
