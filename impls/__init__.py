"""Interchangeable implementations, one sub-package per interface (see DESIGN section 2)."""
