"""Reads convert-fa-to-nvvm output and prints each kernel's schedule: its
entry, cp.async copies, groups and waits, barriers, mma.syncs, wgmmas (by
shape), their fences, commits and waits, async-proxy fences, atomic adds and
scf branches/loops/yields in order, runs of one collapsed as `<count> <what>`.
Host functions (their launch guards) are skipped."""
import re
import sys

PATTERN = re.compile(
    r"llvm\.func @fa_\w+|nvvm\.(?:cp\.async\.(?:commit\.group|wait\.group \d+"
    r"|shared\.global)|barrier0|mma\.sync)|llvm\.atomicrmw fadd"
    r"|wgmma\.(?:fence|commit_group|wait_group\.sync\.aligned \d+)"
    r"|wgmma\.mma_async\.sync\.aligned\.m64n\d+k16|fence\.proxy\.async"
    r"|scf\.(?:for|if|yield)|\} else")

HOST = re.compile(r"^\s*func\.func ")

last, count = None, 0
in_kernel = False
for line in sys.stdin:
    if HOST.match(line):
        in_kernel = False
    if "llvm.func @fa_" in line:
        in_kernel = True
    if not in_kernel:
        continue
    for what in PATTERN.findall(line):
        if what == last:
            count += 1
            continue
        if last is not None:
            print("%2d %s" % (count, last) if not last.startswith("llvm.func")
                  else last)
        last, count = what, 1
if last is not None:
    print("%2d %s" % (count, last))
