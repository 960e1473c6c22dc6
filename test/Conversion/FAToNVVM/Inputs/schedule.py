"""Reads convert-fa-to-nvvm output and prints each kernel's schedule: its
entry, cp.async copies, groups and waits, barriers, mma.syncs, atomic adds
and scf branches/loops/yields in order, runs of one collapsed as `<count> <what>`."""
import re
import sys

PATTERN = re.compile(
    r"llvm\.func @fa_\w+|nvvm\.(?:cp\.async\.(?:commit\.group|wait\.group \d+"
    r"|shared\.global)|barrier0|mma\.sync)|llvm\.atomicrmw fadd"
    r"|scf\.(?:for|if|yield)|\} else")

last, count = None, 0
for line in sys.stdin:
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
