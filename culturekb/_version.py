"""The package version, on the ground floor so that any layer can record it without importing the public root."""

__version__ = "0.1.0"
