"""Exercise of §5: the tokens one target pass emits in speculative decoding.

The reference is maths.decoding.tokens_per_pass (Leviathan et al. 2023, eq. 1), the formula the
chapter's text derives; the speculative widget measures the same quantity on its trained pair.
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.exercise import Drives, Exercise
from ..maths.decoding import tokens_per_pass


def draw(rng) -> dict:
    alpha = 1.0 if rng.random() < 0.1 else round(float(rng.uniform(0.0, 0.99)), 3)  # sometimes every proposal kept
    return {"alpha": alpha, "gamma": int(rng.integers(1, 9))}


STATEMENT = f"""
A cada passada, el model gran verifica les `gamma` (γ) propostes del draft d'una vegada. Suposa
que cada proposta s'accepta amb probabilitat `alpha` (α), independentment de les altres, i que
la verificació s'atura a la primera rebutjada. La passada dona els tokens acceptats i, a més,
un token del model gran: el que substitueix la proposta rebutjada o, si les accepta totes, un
de regal.

Escriu `tokens_per_pass(alpha, gamma)`, que torni el nombre **esperat** de tokens que dona una
passada del model gran (0 ≤ α ≤ 1; si α = 1, les accepta totes).

Per exemple, amb α = 0,8 i γ = 4 en surten {fmt.number(tokens_per_pass(0.8, 4), 4)} de mitjana.
"""

STARTER = '''def tokens_per_pass(alpha, gamma):
    """Tokens esperats per passada del model gran."""
    return (1 - alpha ** gamma) / (1 - alpha)
'''

SOLUTION = '''def tokens_per_pass(alpha, gamma):
    """Tokens esperats per passada del model gran."""
    # el token i-èsim (i = 0..gamma) surt si s'han acceptat les i propostes anteriors: alpha ** i
    return sum(alpha ** i for i in range(gamma + 1))
'''

DRIVES = Drives(widget="speculative", seam="law", binding='''
def law(alpha, gamma):
    """Els tokens per passada que preveu la fórmula, amb la teva funció."""
    return tokens_per_pass(alpha, gamma)
''')

EXERCISE = Exercise(
    name="spec_tokens",
    title="Tokens per passada de la decodificació especulativa",
    statement=STATEMENT,
    function="tokens_per_pass",
    starter=STARTER,
    solution=SOLUTION,
    hints=("El primer token de la passada surt sempre (acceptat o posat pel gran); el segon, només "
           "si s'ha acceptat la primera proposta (probabilitat α); el tercer, si s'han acceptat les "
           "dues primeres (α²)…",
           "La suma és 1 + α + … + α^γ: γ + 1 termes, el de regal inclòs. La forma tancada "
           "(1 − α^(γ+1)) / (1 − α) divideix per zero si α = 1."),
    reference=tokens_per_pass,
    examples=({"alpha": 0.8, "gamma": 4}, {"alpha": 0.5, "gamma": 1}, {"alpha": 0.0, "gamma": 3}),
    draw=draw,
    seed=1505,
    drives=DRIVES,
)
