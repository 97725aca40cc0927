#!/usr/bin/env python3
"""User-space instructions tern-fs spends per small read_file call, counted by callgrind.

Instruction counts do not depend on the machine's load, so two builds can be compared on a
busy machine where CPU-time numbers drift by 2x (notes/wave3/house.md). The server runs
under `valgrind --tool=callgrind` twice, with FEW and MANY sequential calls (each reply
awaited) of the same 2.8 KB file the `vs_reference` bench reads; the difference of the two
totals divided by the difference of the call counts is the cost of one call, without
start-up and shutdown.

    python3 tool-servers/fs/benches/instructions_per_call.py TERN_FS_BINARY [EXTRA_FLAG ...]

e.g. with `--no-fast-path` to count rmcp's route in the same binary. Build with symbols
(`--config 'profile.profiling.inherits="release"' --config 'profile.profiling.strip="none"'
--profile profiling`) to read the per-function profile with `callgrind_annotate`; the
totals do not need them. Kernel time (syscalls, wake-ups) is not counted here: that is what
the schedstat numbers of `cargo bench -p tern-fs --bench vs_reference` add.
"""

import json
import os
import subprocess
import sys
import tempfile

FEW, MANY = 100, 1100
MARKER = "tern-bench-marker"


def run(binary, extra, root, path, calls, out_file):
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
        binary,
        "--root",
        root,
        *extra,
    ]
    p = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )

    def send(message):
        p.stdin.write((json.dumps(message) + "\n").encode())
        p.stdin.flush()

    send(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "callgrind", "version": "0"},
            },
        }
    )
    assert b'"result"' in p.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(calls):
        send(
            {
                "jsonrpc": "2.0",
                "id": i + 1,
                "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": path}},
            }
        )
        reply = p.stdout.readline()
        if MARKER.encode() not in reply or b'"isError":false' not in reply:
            sys.exit(f"unexpected reply: {reply[:300]!r}")
    p.stdin.close()
    p.wait()
    with open(out_file) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    sys.exit(f"no totals in {out_file}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, extra = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as d:
        root = os.path.realpath(d)
        path = os.path.join(root, "small.txt")
        with open(path, "w") as f:
            for i in range(1, 41):
                f.write(
                    f"{MARKER} line {i}: the quick brown fox jumps over the lazy dog\n"
                )
        few = run(binary, extra, root, path, FEW, os.path.join(root, "few.out"))
        many = run(binary, extra, root, path, MANY, os.path.join(root, "many.out"))
        keep = os.environ.get("CALLGRIND_KEEP")
        if keep:
            os.replace(os.path.join(root, "many.out"), keep)
    per_call = (many - few) / (MANY - FEW)
    print(f"{binary} {' '.join(extra)}")
    print(f"  instructions: {FEW} calls {few:,}, {MANY} calls {many:,}")
    print(f"  per read_file call: {per_call:,.0f}")


if __name__ == "__main__":
    main()
