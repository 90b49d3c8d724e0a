"""The maths the chapters' widgets call, in pure numpy: the mini-GPT and its training, the
corpus and the committed weights' manifest, decoding, number formats, serving physics and
hardware tables, the batching simulator, statistics. No Catalan words, no session: it imports
nothing above it (maths.products is how a runtime offers faster products). Package data:
`data/` (the corpus) and `weights/` (trained models)."""
