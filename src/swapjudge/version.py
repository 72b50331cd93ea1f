"""The package's version, in a module of its own so any module can read it without importing the package's face
(`swapjudge/__init__.py` re-exports it; importing it from there would tie a module to the lazy API)."""

__version__ = "0.1.0"
