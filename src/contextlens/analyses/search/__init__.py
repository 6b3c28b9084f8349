"""Semantic search and its cost: text encoders, the vector index, capacity."""
