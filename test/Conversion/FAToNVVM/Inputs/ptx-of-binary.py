"""Prints the PTX of the gpu.binary in fa-opt's output (read from stdin).

fa-pipeline-cuda ends with gpu-module-to-binary{format=isa}, which keeps the
PTX as the `assembly` string of a #gpu.object; MLIR prints it with its bytes
escaped as \\XX. This undoes that, so ptxas can assemble it.
"""

import re
import sys

text = sys.stdin.read()
match = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not match:
    sys.exit("ptx-of-binary.py: no gpu.object assembly in the input")
sys.stdout.write(
    re.sub(
        r"\\([0-9A-Fa-f]{2})|\\\\",
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else "\\",
        match.group(1),
    )
)
