# py36-compatible
"""Whole Keras models inside a backend's worker (`kbtool models`): the zoo, seeded weights and inputs, the forward
pass layer by layer, one training step, and the trace of one layer's K.* calls. Imports nothing of kbtool's."""
