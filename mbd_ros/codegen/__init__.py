"""Robot-specific generated dynamics kernels (see docs/codegen.md)."""
