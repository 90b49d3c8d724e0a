"""Exercise of §4: the error of group-wise INT4, weight by weight.

The reference is maths.numformats.quantize, the round trip the quantization widget puts the
mini-GPT's matrices through: groups of `group` weights of one output column along the input
axis (AWQ, GPTQ), a symmetric absmax scale per group stored in BF16, codes -7..7 rounded to
nearest (ties to even), the last group padded with zeros. Hidden cases: random matrices,
with groups that do and do not divide the input size, and an all-zero column now and then.
"""

from __future__ import annotations

import numpy as np

from ..engine.exercise import Exercise
from ..maths.numformats import INT_TOP, quantize


def error(w: np.ndarray, group: int) -> np.ndarray:
    """[in, out] quantized minus original weights."""
    return quantize(w, "int4", group).astype(np.float64) - w


def draw(rng) -> dict:
    n_in, n_out = int(rng.integers(4, 49)), int(rng.integers(1, 7))
    w = rng.normal(0.0, float(rng.choice([0.02, 0.5, 1.0])), (n_in, n_out))
    if rng.random() < 0.2:
        w[:, 0] = 0.0  # a column of zeros: every one of its groups has absmax 0
    return {"w": w.astype(np.float32), "group": int(rng.choice([4, 8, 16, 32]))}


W = np.array([[0.9, -0.2], [0.1, 0.35], [-0.6, 0.05], [0.3, -0.8], [1.2, 0.0], [-0.45, 0.7]], np.float32)

STATEMENT = f"""
En la variant simètrica del widget del §4, la quantització INT4 per grups desa cada pes amb un
enter de −{INT_TOP["int4"]} a {INT_TOP["int4"]} i una escala per grup (AWQ i GPTQ aprofiten els 16
codis, amb un punt zero, i desen l'escala en FP16). La matriu `w` té forma `[entrades, sortides]` (el model
calcula `x @ w`), i un grup són `group` pesos consecutius d'una mateixa columna, al llarg de les
entrades, com els agrupen AWQ i GPTQ; si el nombre d'entrades no és múltiple de `group`, el darrer grup de cada
columna és més curt. Per a cada grup:

1. l'escala és el valor absolut màxim del grup dividit per {INT_TOP["int4"]}, desada en BF16
   (arrodonida amb la funció `bf16` del codi inicial); si tot el grup és 0, l'escala és 1;
2. cada pes es divideix per l'escala, s'arrodoneix a l'enter més proper (`np.round`) i es
   limita a l'interval de −{INT_TOP["int4"]} a {INT_TOP["int4"]};
3. el pes que fa servir el model és aquest enter per l'escala.

Escriu `int4_error(w, group)`, que torni un array de la mateixa forma que `w` amb l'error de cada
pes: el pes quantitzat menys l'original.
"""

PRELUDE = '''import numpy as np


def bf16(x):
    """x arrodonit al bfloat16 més proper (empat: al parell), com es desa l'escala."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def int4_error(w, group):
    """Pes quantitzat en INT4 per grups menys l'original, amb la forma de w."""
    w = np.asarray(w, dtype=np.float64)
'''  # the reader's start and the solution's: numpy and the scale's rounding

STARTER = PRELUDE + '''    scale = bf16(np.abs(w).max(axis=0) / 7)  # una escala per columna
    scale[scale == 0] = 1.0
    codes = np.clip(np.round(w / scale), -7, 7)
    return codes * scale - w
'''

SOLUTION = PRELUDE + '''    out = np.empty_like(w)
    for start in range(0, w.shape[0], group):  # els grups, al llarg de les entrades
        block = w[start:start + group]  # [<= group, sortides]: un grup de cada columna
        scale = bf16(np.abs(block).max(axis=0) / 7)  # [sortides]
        scale[scale == 0] = 1.0
        codes = np.clip(np.round(block / scale), -7, 7)
        out[start:start + group] = codes * scale - block
    return out
'''

EXERCISE = Exercise(
    name="int4_error",
    title="L'error de l'INT4 per grups",
    statement=STATEMENT,
    function="int4_error",
    starter=STARTER,
    solution=SOLUTION,
    hints=("El codi inicial fa servir una sola escala per columna; n'hi ha d'haver una per grup de "
           "`group` files de cada columna.",
           "Recorre les files de `group` en `group` (`w[start:start + group]`): el màxim per columna "
           "d'aquest tros dona les escales dels seus grups; el darrer tros pot ser més curt."),
    reference=error,
    examples=({"w": W, "group": 4}, {"w": W, "group": 2}, {"w": W[:, :1].copy(), "group": 8}),
    draw=draw,
    seed=1504,
    rtol=1e-6,
    atol=1e-6,
)
