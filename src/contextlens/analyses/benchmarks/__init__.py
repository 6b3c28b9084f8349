"""Benchmarks on real data: WordNet data sets, WiC, WSD, word similarity, contextuality, retrieval."""
