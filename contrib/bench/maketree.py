#!/usr/bin/env python3
"""Makes the benchmarks' folder: FILES small files in directories of 100.

Usage: maketree.py ROOT FILES
"""
import os
import sys

root, files = sys.argv[1], int(sys.argv[2])
for i in range(files):
    d = os.path.join(root, "d%05d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%03d.txt" % (i % 100)), "w") as fh:
        fh.write("file %d\n" % i)
