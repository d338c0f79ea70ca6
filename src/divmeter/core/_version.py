"""The library version: one place, imported by every module that records it (signatures,
reports) without importing the package's public API."""

__version__ = "0.1.0"
