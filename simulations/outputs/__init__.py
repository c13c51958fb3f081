"""Outputs: what the engines found, as counterexample forms, figures and their files, reports
and comparisons.

The notebooks' helpers are not here: they live in ``simulations.notebook`` and call these.
"""
