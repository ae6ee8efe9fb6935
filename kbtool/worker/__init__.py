# py36-compatible
"""Code that runs inside backend environments (Python 3.6+, standard library + numpy + the backend only)."""
