"""Mutation run over the numeric modules: does some test fail for every plausible wrong version?

    .venv/bin/python benchmarks/mutation.py [gpt speculative sampling quantize] [--children 2]

For each module, mutmut 3 (`pip install -e .[test]`) mutates that module alone in a scratch
copy of the package (so `mutants/` never lands in the work tree and other engineers' runs
are untouched) and runs only the module's own test files, `-x -q -p no:cacheprovider`.
Prints the score (killed / total) and the surviving mutants with their diff line. A script,
not a test: a full run takes minutes on two cores.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = {  # module -> (its file, the unit tests that own it)
    "gpt": ("widgets_py/maths/gpt.py", ["tests/test_gpt.py"]),
    "layers": ("widgets_py/maths/layers.py", ["tests/test_gpt.py"]),
    "speculative": ("widgets_py/cap15/speculative.py", ["tests/test_speculative.py"]),
    "sampling": ("widgets_py/cap15/sampling.py", ["tests/test_sampling.py"]),
    "quantize": ("widgets_py/cap15/quantize.py", ["tests/test_quantize.py"]),
    "numformats": ("widgets_py/maths/numformats.py", ["tests/test_quantize.py"]),  # quantize's rounding
    # the browser's kernel: the programs Python compiles for it, and its Python side (slow: hypothesis)
    "program": ("widgets_py/accel/program.py", ["tests/test_kernel.py", "tests/test_gpt.py"]),
    "builder": ("widgets_py/accel/builder.py", ["tests/test_kernel.py", "tests/test_gpt.py"]),
    "tape": ("widgets_py/accel/tape.py", ["tests/test_kernel.py", "tests/test_gpt.py"]),
    "compiled": ("widgets_py/accel/compiled.py", ["tests/test_kernel.py", "tests/test_gpt.py"]),
    "kernel": ("widgets_py/accel/kernel.py", ["tests/test_kernel.py", "tests/test_gpt.py"]),
}
HELPERS = ["tests/conftest.py", "tests/wasm_host.py"]  # imported by the tests, never mutated
KILLED = {"killed", "timeout"}  # a mutant that hangs is caught too (mutmut's own count)


def scratch_copy(module: str, path: str, tests: list[str]) -> Path:
    """The package (its data included) and the module's tests, with a [tool.mutmut] for it."""
    work = Path(tempfile.mkdtemp(prefix=f"mutation-{module}-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "widgets_py", work / "widgets_py", ignore=ignore)
    (work / "tests").mkdir()
    for name in [*HELPERS, *tests]:
        shutil.copy(ROOT / name, work / name)
    (work / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["widgets_py"]\n'
        f'only_mutate = ["{path}"]\n'
        'pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider"]\n'
        "timeout_multiplier = 3.0\n"  # a mutant that loops forever is cut at 3x the clean run
        # wasmtime is not fork-safe: a worker forked from a process that ran the kernel hangs
        # (and would count as a timeout, a false kill). Workers fork from a server that imports
        # nothing of ours; each runs its tests from a clean import.
        'process_isolation = "forkserver"\n'
        'forkserver_warmup = "none"\n'
        f"pytest_add_cli_args_test_selection = {tests!r}\n".replace("'", '"')
    )
    return work


def mutmut(work: Path, *args: str, log: Path | None = None) -> str:
    """Run mutmut in the scratch copy; with `log`, stream its progress there (tail -f it)."""
    exe = str(Path(sys.executable).with_name("mutmut"))
    if log:
        with log.open("w") as f:
            subprocess.run([exe, *args], cwd=work, stdout=f, stderr=subprocess.STDOUT)
        return ""
    return subprocess.run([exe, *args], cwd=work, capture_output=True, text=True).stdout


def diff_line(work: Path, mutant: str) -> str:
    """The changed line of a mutant, as `- old  =>  + new`."""
    lines = mutmut(work, "show", mutant).splitlines()
    old = [line[1:].strip() for line in lines if line.startswith("-") and not line.startswith("---")]
    new = [line[1:].strip() for line in lines if line.startswith("+") and not line.startswith("+++")]
    return f"{' / '.join(old)}  =>  {' / '.join(new)}"


def run_module(module: str, children: int) -> tuple[int, int, list[str]]:
    work = scratch_copy(module, *MODULES[module])
    print(f"{module}: mutating in {work}; progress in run.log there", file=sys.stderr, flush=True)
    mutmut(work, "run", "--max-children", str(children), log=work / "run.log")
    results = re.findall(r"^\s*(\S+): (.+)$", mutmut(work, "results", "--all", "true"), re.M)
    if not results:
        raise SystemExit(f"{module}: mutmut produced no results; see {work / 'run.log'}")
    survivors = [f"{name}  [{status}]  {diff_line(work, name)}" for name, status in results if status not in KILLED]
    shutil.rmtree(work)
    return len(results) - len(survivors), len(results), survivors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=["gpt", "speculative"], choices=sorted(MODULES))
    parser.add_argument("--children", type=int, default=2, help="parallel test processes (cores)")
    args = parser.parse_args()
    scores = {}
    for module in args.modules:
        killed, total, survivors = run_module(module, args.children)
        scores[module] = (killed, total)
        print(f"\n== {MODULES[module][0]}: {killed} / {total} killed ({killed / total:.1%})", flush=True)
        for line in survivors:
            print("   ", line)
    print("\nmodule        killed / total")
    for module, (killed, total) in scores.items():
        print(f"{module:<13} {killed:>6} / {total:<6} {killed / total:.1%}")


if __name__ == "__main__":
    main()
