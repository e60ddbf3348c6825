"""The package's version, in a module of its own so that any layer can read it (the package root re-exports the
upper layers, so importing it from below would be an upward arrow)."""

__version__ = "0.2.0"
