"""Builds the package's one optional native extension; everything else is in pyproject.toml.

``complexorder/nn/_wave_kernel.c`` is the float32 CPU kernel of paper Eq. 5 (see
``complexorder/nn/native.py``). It needs no PyTorch headers, only a C compiler and Python's
headers. It is optional: if it cannot be compiled the package still installs and uses its
PyTorch path (``python -c "import complexorder.nn.native as n; print(n.status())"`` says which).
"""

import sys

from setuptools import Extension, setup

if sys.platform == "win32":
    flags = ["/O2"]
else:
    # -ffp-contract=fast: fused multiply-adds in the polynomials (the kernel keeps the phase's own
    # two roundings by computing it in separate loops); no -march: x86-64 Linux builds carry
    # AVX-512 / AVX2 / baseline clones picked at load time (target_clones in the source).
    flags = ["-O3", "-ffp-contract=fast"]

setup(
    ext_modules=[
        Extension("complexorder.nn._wave_kernel", ["src/complexorder/nn/_wave_kernel.c"],
                  extra_compile_args=flags, optional=True),
    ],
)
