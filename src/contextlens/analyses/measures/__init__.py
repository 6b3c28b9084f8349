"""Measures more than one face or analysis reads: the layer ``auto`` stands for, the random-word
baseline, span encoding, the WordNet benchmark data and its WiC pairs, the dev-tuned sense
threshold, word-pair datasets and retrieval scores. The benchmarks build on them; so do the lesson,
the corpus jobs and the static models, without importing a benchmark."""
