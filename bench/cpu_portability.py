"""Whether another x86 CPU computes the golden vectors: the golden check run natively and under
QEMU's user-mode emulation of older CPUs (Debian's ``qemu-user``; slow, minutes per model).

An emulated ``Haswell`` has AVX2 but no AVX-512 and no VNNI: onnxruntime then multiplies
uint8 activations by int8 weights with ``vpmaddubsw`` (a saturating int16 pair sum) instead of
VNNI's exact int32 dot products, and AVX2 instead of AVX-512 float kernels: the paths on which
the earlier int8 graph gave other vectors (docs/decisions/0013-portable-int8.md). Other QEMU CPU
models can be named (``qemu-x86_64 -cpu help``); CPUs without AVX2 and FMA are not covered.

    make check-portability          # or: .venv/bin/python -m bench.cpu_portability
    .venv/bin/python -m bench.cpu_portability --cpus Haswell --models minilm-int8
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time

from bench.results import recorded
from tests.embedding.golden import MODELS

# Features QEMU's TCG cannot emulate, dropped so it does not warn once per thread.
UNSUPPORTED = "-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm"


def check(cpu: str | None, model: str) -> str:
    command = [sys.executable, "-m", "tests.embedding.golden", "--check", model]
    if cpu is not None:
        qemu = shutil.which("qemu-x86_64")
        if qemu is None:
            raise SystemExit("qemu-x86_64 not found: apt-get install qemu-user "
                             "(or run `make check-portability`)")
        command = [qemu, "-cpu", f"{cpu},{UNSUPPORTED}", *command]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    line = done.stdout.strip().splitlines()[-1]
    return f"{line.split(';')[0]} ({time.perf_counter() - start:.0f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpus", nargs="+", default=["Haswell"])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    args = parser.parse_args()
    print("| CPU | model | worst cosine to the golden vectors |")
    print("|---|---|---|")
    for cpu in [None, *args.cpus]:
        for model in args.models:
            print(f"| {cpu or 'this machine'} | {model} | {check(cpu, model)} |", flush=True)


if __name__ == "__main__":
    with recorded("cpu_portability"):
        main()
