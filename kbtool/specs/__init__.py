"""The spec: specs/ops.yaml parsed once and checked, the cases it makes, its documented domains, shape rules and coverage."""
