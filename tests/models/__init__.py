"""Tests of impls.models: native layers against dense references, native vs PyG, training."""
