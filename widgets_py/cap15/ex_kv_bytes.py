"""Exercise of §2: the bytes of a KV cache with grouped-query attention (GQA).

The reference is maths.serving.kv_bytes_per_token, the one formula every serving widget uses,
applied to a model card of the shapes asked for. Hidden cases: the book's models without MLA
and shapes drawn around them, every cache format serving engines use.
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.exercise import Drives, Exercise
from ..maths.hardware import MODELS, ModelCard
from ..maths.numformats import FORMATS
from ..maths.serving import CACHE_FORMATS, kv_bytes_per_token

SHAPED = tuple(k for k, m in MODELS.items() if not m.mla)  # K and V per head: MLA keeps a latent instead


def cache_bytes(n_layers: int, n_heads: int, n_kv_heads: int, d_head: int, cache: str, tokens: int,
                batch: int) -> int:
    """Bytes of the cache of `batch` sequences of `tokens` tokens, for a model of these shapes."""
    card = ModelCard("exercici", "exercici", "the exercise's shapes", n_heads * d_head, n_layers, n_heads,
                     n_kv_heads, d_head, d_ff=0, vocab=0, max_context=tokens)
    return int(kv_bytes_per_token(card, cache) * tokens * batch)


def case(model: str, cache: str, tokens: int, batch: int) -> dict:
    m = MODELS[model]
    return {"n_layers": m.n_layers, "n_heads": m.n_heads, "n_kv_heads": m.n_kv_heads, "d_head": m.d_head,
            "cache": cache, "tokens": tokens, "batch": batch}


def draw(rng) -> dict:
    cache, tokens, batch = str(rng.choice(CACHE_FORMATS)), int(rng.integers(1, 32769)), int(rng.integers(1, 65))
    if rng.random() < 0.5:
        return case(str(rng.choice(SHAPED)), cache, tokens, batch)
    n_heads = int(rng.choice([8, 16, 32, 64, 128]))
    return {"n_layers": int(rng.integers(12, 97)), "n_heads": n_heads,
            "n_kv_heads": n_heads // int(rng.choice([1, 2, 4, 8])), "d_head": int(rng.choice([64, 80, 128])),
            "cache": cache, "tokens": tokens, "batch": batch}


EXAMPLE = case("llama-3-70b", "bf16", 8192, 1)
BYTES = ", ".join(f"`\"{k}\"` {fmt.number(FORMATS[k].nbytes)}" for k in CACHE_FORMATS)

STATEMENT = f"""
Per cada token, cada capa del model guarda al KV-cache una clau K i un valor V de `d_head`
nombres per a cada cap de KV. Amb l'atenció amb consultes agrupades (GQA), diversos caps de
consulta comparteixen els mateixos K i V: hi ha `n_kv_heads` caps de KV, menys que els
`n_heads` caps de consulta (sense GQA, en són tants com aquests).

Escriu `kv_cache_bytes(n_layers, n_heads, n_kv_heads, d_head, cache, tokens, batch)`, que torni
els bytes (un enter) que ocupa el cache de `batch` seqüències de `tokens` tokens cadascuna, en
el format `cache`, on cada nombre ocupa: {BYTES}.

Per exemple, {MODELS["llama-3-70b"].label} ({EXAMPLE["n_layers"]} capes, {EXAMPLE["n_heads"]} caps
de consulta, {EXAMPLE["n_kv_heads"]} de KV, de {EXAMPLE["d_head"]} dimensions) amb
{fmt.tokens(8192)} tokens en BF16 ocupa {fmt.number(cache_bytes(**EXAMPLE))} bytes.
"""

PRELUDE = '''BYTES = {"fp32": 4, "bf16": 2, "fp8": 1, "int8": 1}  # bytes per nombre


def kv_cache_bytes(n_layers, n_heads, n_kv_heads, d_head, cache, tokens, batch):
    """Bytes del KV-cache de `batch` seqüències de `tokens` tokens."""
'''  # the reader's start and the solution's: the bytes of each format, the signature

STARTER = PRELUDE + '''    per_token = 2 * n_layers * n_heads * d_head * BYTES[cache]  # K i V de cada capa
    return per_token * tokens * batch
'''

SOLUTION = PRELUDE + '''    per_token = 2 * n_layers * n_kv_heads * d_head * BYTES[cache]  # K i V de cada cap de KV, a cada capa
    return per_token * tokens * batch
'''

DRIVES = Drives(widget="kv_cache", seam="bytes_per_token", binding='''
def bytes_per_token(m, cache_format):
    """Bytes de cache per token, amb la teva funció (un token d'una seqüència). Els models amb
    MLA guarden un latent en lloc de K i V per cap: aquests segueixen amb la fórmula del llibre."""
    if m.mla:
        return kv_bytes_per_token(m, cache_format)
    return kv_cache_bytes(m.n_layers, m.n_heads, m.n_kv_heads, m.d_head, cache_format, 1, 1)
''')

EXERCISE = Exercise(
    name="kv_bytes",
    title="Els bytes del KV-cache amb GQA",
    statement=STATEMENT,
    function="kv_cache_bytes",
    starter=STARTER,
    solution=SOLUTION,
    hints=("El cache guarda K i V dels caps de **KV**, no dels de consulta: amb GQA en són menys.",
           "Per token: 2 (K i V) × capes × caps de KV × `d_head` × bytes per nombre; després, × tokens × "
           "seqüències."),
    reference=cache_bytes,
    examples=(EXAMPLE, case("llama-3-8b", "fp8", 4096, 16), case("gpt2-xl", "fp32", 1024, 2)),
    draw=draw,
    seed=1502,
    drives=DRIVES,
)
