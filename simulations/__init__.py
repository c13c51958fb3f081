"""Engines, CLI and reports over the model."""
