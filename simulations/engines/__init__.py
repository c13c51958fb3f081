"""Engines: the searches over the tables (BFS exploration, Hypothesis machine, replay)."""
