"""Interchangeable implementations, one sub-package per interface (docs/architecture.md#implementations)."""
