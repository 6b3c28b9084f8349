"""Corpus scale: read real corpora, split sentences, extract every occurrence of target words."""
