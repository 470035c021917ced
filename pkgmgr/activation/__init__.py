"""Bundle activations: stable ids, digests, projection into a scope, lifecycle, conflicts."""
