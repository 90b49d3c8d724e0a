"""Exercise of §1: the ceiling of a decode at batch 1, set by reading the weights once per token.

The reference is maths.serving.weights_time, the weight reads every step time of the chapter
adds up (serving.step_parts): tokens per second = 1 / that time. The hidden cases are the
book's dense models (their parameters read per token), GPUs and weight formats.
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.exercise import Exercise
from ..maths.hardware import GPUS, MODELS
from ..maths.numformats import FORMATS
from ..maths.serving import WEIGHT_FORMATS, params_read, weights_time

DENSE = tuple(k for k, m in MODELS.items() if not m.n_experts)  # every weight read at every step


def ceiling(params: int, bytes_per_param: float, bandwidth: float) -> float:
    """Tokens per second when a step takes the time of reading the weights, and nothing else."""
    return 1.0 / weights_time(params, bytes_per_param, bandwidth)


def case(model: str, gpu: str, weights: str) -> dict:
    return {"params": int(params_read(MODELS[model], 1)), "bytes_per_param": FORMATS[weights].nbytes,
            "bandwidth": GPUS[gpu].bandwidth}


def draw(rng) -> dict:
    return case(str(rng.choice(DENSE)), str(rng.choice(list(GPUS))), str(rng.choice(WEIGHT_FORMATS)))


EXAMPLE = case("llama-3-70b", "h100-80gb", "bf16")

STATEMENT = f"""
En el *decode* a lot 1, cada token nou obliga a llegir de la memòria de la GPU tots els pesos
que fa servir, una vegada (de la taula d'entrada, només la fila del token). Si aquesta lectura és l'únic que fa esperar, els tokens per segon tenen
un sostre: l'ample de banda dividit pels bytes de pesos que es llegeixen a cada pas.

Escriu `decode_ceiling(params, bytes_per_param, bandwidth)`, que torni aquest sostre en tokens
per segon:

- `params`: els paràmetres que es llegeixen a cada pas (un enter);
- `bytes_per_param`: els bytes de cada pes (4 en FP32, 2 en BF16, 1 en FP8 o INT8, 0,5 en INT4);
- `bandwidth`: l'ample de banda de la memòria, en **bytes** per segon.

Per exemple, {MODELS["llama-3-70b"].label} en BF16, que llegeix
{fmt.with_unit(EXAMPLE["params"] / 1e9, 1, "G")} paràmetres per pas (tots menys la taula d'entrada),
no passaria de {fmt.with_unit(ceiling(**EXAMPLE), 1, "tok/s")} en una {GPUS["h100-80gb"].label}
({fmt.with_unit(GPUS["h100-80gb"].bandwidth / 1e9, 0, "GB/s")}), si hi cabés.
"""

STARTER = '''def decode_ceiling(params, bytes_per_param, bandwidth):
    """Tokens per segon d'un decode a lot 1 que només espera la lectura dels pesos."""
    seconds = params / bandwidth  # el temps de llegir els pesos
    return 1 / seconds
'''

SOLUTION = '''def decode_ceiling(params, bytes_per_param, bandwidth):
    """Tokens per segon d'un decode a lot 1 que només espera la lectura dels pesos."""
    bytes_per_step = params * bytes_per_param  # tots els pesos, una vegada per token
    return bandwidth / bytes_per_step
'''

EXERCISE = Exercise(
    name="decode_ceiling",
    title="El sostre del decode",
    statement=STATEMENT,
    function="decode_ceiling",
    starter=STARTER,
    solution=SOLUTION,
    hints=("Quants **bytes** es llegeixen a cada pas? Tots els pesos, una vegada: `params` per "
           "`bytes_per_param`.",
           "Un pas dura el temps de llegir aquests bytes a `bandwidth` bytes per segon; els tokens per "
           "segon són l'invers d'aquest temps."),
    reference=ceiling,
    examples=(EXAMPLE, case("llama-3-8b", "l4", "fp8"), case("gpt2-xl", "a100-80gb", "int4")),
    draw=draw,
    seed=1501,
)
