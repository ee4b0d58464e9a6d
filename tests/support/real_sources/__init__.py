"""Converters of real public agent trajectories into the shared transcript format."""
