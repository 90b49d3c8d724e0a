"""Models and simulators the chapters' widgets call: the numpy GPT and its training, the
corpus, the committed weights, number formats, serving physics, hardware tables, the
batching simulator. Package data: `data/` (the corpus) and `weights/` (trained models)."""
