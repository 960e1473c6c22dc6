"""Reads convert-fa-to-nvvm output and prints each kernel's schedule: its
entry, cp.async copies, groups and waits, barriers, mma.syncs, wgmmas (by
shape), their fences, commits and waits, async-proxy fences, atomic adds and
scf branches/loops/yields in order, runs of one collapsed as `<count> <what>`.
Host functions (their launch guards) are skipped. The thread place's uniform
branch (KernelBuilder::headAndBatchAgain: ctaid.y and ctaid.z, or the folded
grid's quotient and remainder) shows as one `place`; with --no-place it is
left out (what the schedule was before the grid folded)."""
import re
import sys

PATTERN = re.compile(
    r"llvm\.func @fa_\w+|nvvm\.(?:cp\.async\.(?:commit\.group|wait\.group \d+"
    r"|shared\.global)|barrier0|mma\.sync)|llvm\.atomicrmw fadd"
    r"|wgmma\.(?:fence|commit_group|wait_group\.sync\.aligned \d+)"
    r"|wgmma\.mma_async\.sync\.aligned\.m64n\d+k16|fence\.proxy\.async"
    r"|scf\.(?:for|if|yield)|\} else")

HOST = re.compile(r"^\s*func\.func ")

# The place's branch: `scf.if %c -> (i32, i32) {` on the comparison of
# nctaid.y (through an opaque mov) with the heads, up to its closing brace.
PLACE = re.compile(r"scf\.if %\S+ -> \(i32, i32\) \{")
show_place = "--no-place" not in sys.argv[1:]

last, count = None, 0
in_kernel = False
recent = []
skip_depth = 0
for line in sys.stdin:
    if skip_depth:
        skip_depth += line.count("{") - line.count("}")
        continue
    recent = (recent + [line])[-3:]
    if HOST.match(line):
        in_kernel = False
    if "llvm.func @fa_" in line:
        in_kernel = True
    if not in_kernel:
        continue
    found = PATTERN.findall(line)
    if PLACE.search(line) and any("nvvm.read.ptx.sreg.nctaid.y" in r or
                                  "mov.b32" in r for r in recent[:-1]):
        skip_depth = line.count("{") - line.count("}")
        found = ["place"] if show_place else []
    for what in found:
        if what == last:
            count += 1
            continue
        if last is not None:
            print("%2d %s" % (count, last) if not last.startswith("llvm.func")
                  else last)
        last, count = what, 1
if last is not None:
    print("%2d %s" % (count, last))
