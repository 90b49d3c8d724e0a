"""Exercise of §2: what a paged KV cache reserves and does not fill.

The reference allocates the requests in maths.kv_blocks.BlockPool, the pool the batching
simulator's scheduler takes blocks from (PagedAttention: whole blocks, the last one partly
empty), and counts the token slots of its blocks that no token fills.
"""

from __future__ import annotations

from ..engine.exercise import Exercise
from ..maths.kv_blocks import BLOCK_TOKENS, BlockPool


def waste(lengths: list[int], block: int) -> int:
    """Token slots of the blocks the requests hold that none of their tokens fills."""
    pool = BlockPool(total=None, size=block)
    for rid, tokens in enumerate(lengths):
        pool.grow(rid, tokens)
    return pool.used * block - sum(lengths)


def draw(rng) -> dict:
    block = int(rng.choice([8, 16, 32]))
    lengths = rng.integers(0, 3000, size=int(rng.integers(1, 13)))
    whole = rng.random(len(lengths)) < 0.3  # some caches end exactly at a block's end
    lengths[whole] = block * rng.integers(0, 100, size=int(whole.sum()))
    return {"lengths": [int(n) for n in lengths], "block": block}


STATEMENT = f"""
Un KV-cache paginat (*PagedAttention*, el de vLLM) no reserva la memòria de cada seqüència
d'una sola peça: la reparteix en blocs de `block` tokens (vLLM en fa servir {BLOCK_TOKENS}
per defecte). Una seqüència pren un bloc nou quan omple l'anterior, de manera que només el seu
darrer bloc pot quedar a mitges.

Escriu `paged_waste(lengths, block)`, que torni quants llocs de token (un enter) dels blocs que
ocupen les seqüències han quedat buits; `lengths` és la llista dels tokens que té al
cache cada seqüència (una seqüència de 0 tokens no té cap bloc).

Per exemple, `paged_waste([16, 17, 1, 0], 16)` és 30: la primera omple el seu bloc, la segona en
té dos amb 15 llocs buits i la tercera, un amb 15 llocs buits.
"""

STARTER = '''def paged_waste(lengths, block):
    """Llocs de token reservats als blocs i buits."""
    return sum(block - n % block for n in lengths)
'''

SOLUTION = '''def paged_waste(lengths, block):
    """Llocs de token reservats als blocs i buits."""
    blocks = sum(-(-n // block) for n in lengths)  # cada seqüència, els blocs que la contenen (arrodonit amunt)
    return blocks * block - sum(lengths)
'''

EXERCISE = Exercise(
    name="paged_waste",
    title="El que desaprofita un cache paginat",
    statement=STATEMENT,
    function="paged_waste",
    starter=STARTER,
    solution=SOLUTION,
    hints=("Quants blocs té una seqüència de `n` tokens? Els que calen per contenir-los: `n / block` "
           "arrodonit **amunt** (`math.ceil`).",
           "Una seqüència que acaba just al final d'un bloc no en desaprofita cap lloc, i una de 0 tokens "
           "no té cap bloc."),
    reference=waste,
    examples=({"lengths": [16, 17, 1, 0], "block": 16}, {"lengths": [100, 250, 31], "block": 16},
              {"lengths": [64, 8, 40], "block": 32}),
    draw=draw,
    seed=1503,
)
