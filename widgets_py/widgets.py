"""The widget modules of chapter 15, each declaring one `WIDGET`. Add new widgets here."""

MODULES = ("batching", "clock", "cost", "kv_cache", "quantize", "roofline", "sampling", "speculative", "training")
