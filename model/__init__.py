"""Executable model of ACP client-provided system prompts."""
