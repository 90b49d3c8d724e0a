"""Exercise of §7: the dollars of one request, from the seconds of its phases.

The reference is maths.pricing, the accounting of the cost widget: the prefill has the GPU
group to itself, and each decode step is shared by the `concurrency` sequences of its batch.
Hidden cases take their seconds from maths.serving (ttft, decode_step) for the book's models
and GPUs, so the numbers are the chapter's own.
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.exercise import Exercise
from ..maths import pricing
from ..maths.hardware import GPUS, MODELS
from ..maths.serving import Setup, clamp_context, decode_step, ttft


def cost(prefill_s: float, step_s: float, answer: int, concurrency: int, dollars_per_hour: float) -> float:
    """Dollars one request is charged."""
    return pricing.dollars(pricing.group_seconds(prefill_s, step_s, answer, concurrency), dollars_per_hour)


def draw(rng) -> dict:
    model, gpu = str(rng.choice(list(MODELS))), str(rng.choice(list(GPUS)))
    n_gpus = int(rng.choice([1, 2, 4, 8]))
    s = Setup(model, gpu, n_gpus=n_gpus, collectives=False)
    prompt, answer = int(rng.integers(16, 4001)), int(rng.integers(1, 2001))
    concurrency = int(rng.choice([1, 4, 16, 32, 64]))
    context = clamp_context(s.m, prompt + answer)
    return {"prefill_s": ttft(s, min(prompt, context)), "step_s": decode_step(s, concurrency, context),
            "answer": answer, "concurrency": concurrency,
            "dollars_per_hour": n_gpus * float(rng.choice([0.75, 2.0, 3.0, 4.5, 12.0]))}


EXAMPLE = {"prefill_s": 0.35, "step_s": 0.025, "answer": 500, "concurrency": 32, "dollars_per_hour": 24.0}

STATEMENT = f"""
Un servidor lloga un grup de GPU per `dollars_per_hour` dòlars l'hora, i cada petició paga els
segons del grup que fa servir:

- el *prefill* del seu *prompt*, `prefill_s` segons, amb el grup per a ella sola;
- els `answer` passos de *decode* de la seva resposta, de `step_s` segons cadascun; però cada pas
  serveix alhora les `concurrency` seqüències del lot, i la petició en paga una part igual
  a la de les altres, 1/`concurrency` de cada pas.

Escriu `request_cost(prefill_s, step_s, answer, concurrency, dollars_per_hour)`, que torni el que
costa la petició, en dòlars.

Per exemple, amb {fmt.number(EXAMPLE["prefill_s"], 2)} s de *prefill*, {EXAMPLE["answer"]} passos
de {fmt.number(EXAMPLE["step_s"] * 1e3)} ms compartits per {EXAMPLE["concurrency"]} seqüències i
un grup de {fmt.number(EXAMPLE["dollars_per_hour"])} dòlars l'hora, la petició costa
{fmt.number(cost(**EXAMPLE), 7)} dòlars.
"""

STARTER = '''def request_cost(prefill_s, step_s, answer, concurrency, dollars_per_hour):
    """Dòlars que paga una petició."""
    seconds = prefill_s + answer * step_s
    return seconds * dollars_per_hour / 3600
'''

SOLUTION = '''def request_cost(prefill_s, step_s, answer, concurrency, dollars_per_hour):
    """Dòlars que paga una petició."""
    seconds = prefill_s + answer * step_s / concurrency  # cada pas de decode, a parts iguals amb el lot
    return seconds * dollars_per_hour / 3600
'''

EXERCISE = Exercise(
    name="request_cost",
    title="El que costa una petició",
    statement=STATEMENT,
    function="request_cost",
    starter=STARTER,
    solution=SOLUTION,
    hints=("Un pas de *decode* genera un token per a cadascuna de les `concurrency` seqüències del lot: "
           "a la petició li toca 1/`concurrency` del seu temps.",
           "El *prefill* no es comparteix; i el preu és per **hora**: 3.600 segons."),
    reference=cost,
    examples=(EXAMPLE, {**EXAMPLE, "concurrency": 1}, {**EXAMPLE, "prefill_s": 2.5, "answer": 50}),
    draw=draw,
    seed=1507,
)
