"""Outputs: what the engines found, as counterexample forms, pictures, reports and comparisons."""
