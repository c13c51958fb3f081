"""Engines: the searches over the tables (BFS exploration, Hypothesis machine, replay) and what
they run on: bounds and domains, symmetry, populations, sharing, the cache, a cluster."""
