"""Static models made here: word2vec and fastText trained on a corpus (:mod:`.train`), a static
model distilled from a transformer (:mod:`.distill`); saved in the cache by core.static_store, so
every ``static`` argument takes them by name."""
