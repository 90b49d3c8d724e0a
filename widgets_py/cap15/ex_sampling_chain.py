"""Exercise of §6: the sampling chain, in Hugging Face transformers' order.

The reference is maths.decoding.shape then restricted, the chain the sampling widget draws
from: Hugging Face transformers' order (temperature -> top-k -> top-p on the renormalised top-k
survivors -> min-p against the largest survivor), with no repetition penalty. Hidden cases:
random logits (no ties) with each filter on or off.
"""

from __future__ import annotations

import numpy as np

from ..engine.exercise import Drives, Exercise
from ..maths.decoding import restricted, shape

NOTHING_SEEN = np.zeros(0, dtype=int)  # no repetition penalty here: no token counts as seen


def chain(logits: np.ndarray, temperature: float, top_k: int, top_p: float, min_p: float) -> np.ndarray:
    """[V] the distribution a token is drawn from after the whole chain."""
    return restricted(*shape(np.asarray(logits, dtype=np.float64), NOTHING_SEEN, temperature, top_k, top_p,
                             min_p, penalty=1.0))


def draw(rng) -> dict:
    vocab = int(rng.integers(6, 33))
    on = rng.random(3) < 0.7  # each filter on or off
    return {"logits": rng.normal(0.0, 2.0, vocab),
            "temperature": round(float(rng.uniform(0.3, 2.0)), 2),
            "top_k": int(rng.integers(1, vocab + 1)) if on[0] else 0,
            "top_p": round(float(rng.uniform(0.3, 0.99)), 2) if on[1] else 1.0,
            "min_p": round(float(rng.uniform(0.01, 0.3)), 3) if on[2] else 0.0}


LOGITS = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -2.0])

STATEMENT = """
Abans de triar el token següent, la distribució del model passa per una cadena de filtres.
L'ordre importa, i cada motor té el seu. Aquí seguim el de Hugging Face transformers (vLLM fa
top-k i top-p igual, però aplica min-p abans; llama.cpp aplica la temperatura al final):

1. **temperatura**: divideix els logits per `temperature` (més gran que 0) i en fa la softmax;
2. **top-k**: es queda amb els `top_k` tokens de logit més alt (`top_k = 0`: no filtra);
3. **top-p**: sobre les probabilitats dels supervivents de top-k, *renormalitzades*, ordenades de
   més a menys probables, es queda el prefix més curt la massa del qual arriba a `top_p`
   (`top_p = 1`: no filtra);
4. **min-p**: descarta els supervivents amb una probabilitat inferior a `min_p` vegades la del
   més probable (`min_p = 0`: no filtra);
5. la distribució final és la de la temperatura, restringida als supervivents i renormalitzada.

Escriu `sampling_probs(logits, temperature, top_k, top_p, min_p)`, que rebi els logits com un
array de numpy de forma `[V]` i torni un array de la mateixa forma amb la probabilitat final de
cada token (0 als descartats).
"""

PRELUDE = '''import numpy as np


def sampling_probs(logits, temperature, top_k, top_p, min_p):
    """La distribució de la qual es tria el token, després de tota la cadena."""
    z = np.asarray(logits, dtype=float) / temperature  # 1. temperatura
    p = np.exp(z - z.max())
    p /= p.sum()
    keep = np.ones(len(p), dtype=bool)
    if top_k:  # 2. top-k
        keep &= z >= np.sort(z)[-top_k]
'''  # the reader's start and the solution's: temperature and top-k

STARTER = PRELUDE + '''    # 3. top-p i 4. min-p: falten
    q = np.where(keep, p, 0.0)
    return q / q.sum()  # 5. renormalitzar
'''

SOLUTION = PRELUDE + '''    if top_p < 1:  # 3. top-p, sobre els supervivents renormalitzats
        q = np.where(keep, p, 0.0) / p[keep].sum()
        order = np.argsort(-q, kind="stable")
        before = np.cumsum(q[order]) - q[order]  # la massa dels més probables que cadascun
        keep[order[before >= top_p - 1e-9]] = False
    if min_p > 0:  # 4. min-p, relatiu al més probable
        q = np.where(keep, p, 0.0)
        keep &= q >= min_p * q.max()
    q = np.where(keep, p, 0.0)
    return q / q.sum()  # 5. renormalitzar
'''

DRIVES = Drives(widget="sampling", seam="filtered", binding='''
from ..maths.decoding import penalised, tempered


def filtered(logits, seen, temperature, top_k, top_p, min_p, penalty):
    """La cadena amb la teva funció: temperatura, top-k, top-p i min-p són els teus; la
    penalització de repetició i el cas greedy (temperatura 0), els del llibre. Torna la
    distribució amb temperatura i quins tokens poden sortir."""
    if temperature == 0:
        return shape(logits, seen, temperature, top_k, top_p, min_p, penalty)
    z = penalised(logits, seen, penalty)
    final = np.asarray(sampling_probs(z, temperature, top_k, top_p, min_p), dtype=float)
    return softmax(tempered(z, temperature)), final > 0
''')

EXERCISE = Exercise(
    name="sampling_chain",
    title="La cadena de mostreig de Hugging Face",
    statement=STATEMENT,
    function="sampling_probs",
    starter=STARTER,
    solution=SOLUTION,
    hints=("Top-p es calcula sobre els supervivents de top-k **renormalitzats**: la massa que compta "
           "és la que queda després de top-k, no la de tot el vocabulari.",
           "Per a top-p, ordena de més a menys probable i queda't cada token mentre la massa dels "
           "anteriors sigui inferior a `top_p`: el primer sempre queda.",
           "Min-p compara amb la probabilitat del més probable, no amb 1: `q >= min_p * q.max()`."),
    reference=chain,
    examples=({"logits": LOGITS, "temperature": 0.8, "top_k": 5, "top_p": 0.9, "min_p": 0.05},
              {"logits": LOGITS, "temperature": 1.3, "top_k": 0, "top_p": 0.7, "min_p": 0.0},
              {"logits": LOGITS, "temperature": 0.5, "top_k": 6, "top_p": 1.0, "min_p": 0.1},
              {"logits": LOGITS, "temperature": 1.0, "top_k": 3, "top_p": 0.8, "min_p": 0.0}),
    draw=draw,
    hidden=24,
    seed=1506,
    rtol=1e-7,
    atol=1e-12,
    drives=DRIVES,
)
