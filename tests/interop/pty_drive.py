"""Drive a program through a pseudo-terminal, as a person at a keyboard would.

Usage: pty_drive.py SCRIPT_JSON -- COMMAND [ARGS...]
SCRIPT_JSON is a list of steps: {"send": "text"} types text; {"expect": "text",
"timeout": seconds} waits until the screen output contains it (counting only
output after the previous expect); {"screen": "text", "hold": seconds} keeps reading
for `hold` seconds, then checks that `text` is visible on the emulated screen (pyte,
a VT100 emulator): what a person would see, after every redraw and erase;
{"file": "path", "equals": "text"} checks a file's content at that moment (relative to
the working directory; "equals": null means the file must not exist); {"touch": "path"}
creates an empty file (a signal to a test server that something should happen now). Prints
{"output": ..., "status": ..., "screen": ...} as JSON (the screen as the program left it). Exits 1 (printing what was seen) when an
expectation fails.
"""

import fcntl
import json
import os
import struct
import termios

import pyte
import pty
import select
import sys
import time


def main():
    sep = sys.argv.index("--")
    script = json.loads(sys.argv[1])
    cmd = sys.argv[sep + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        # The size of the emulated screen, as a terminal reports it to the program.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.execvp(cmd[0], cmd)
    out = b""
    seen_upto = 0

    def pump(timeout):
        nonlocal out
        r, _, _ = select.select([fd], [], [], timeout)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out += data
        return True

    def visible():
        screen = pyte.Screen(120, 40)
        stream = pyte.ByteStream(screen)
        stream.feed(out)
        return "\n".join(line.rstrip() for line in screen.display)

    for step in script:
        if "screen" in step:
            deadline = time.time() + step.get("hold", 1.0)
            while time.time() < deadline:
                pump(0.05)
            shown = visible()
            if step["screen"] not in shown:
                print(json.dumps({"error": f"not on screen after {step.get('hold', 1.0)} s: {step['screen']!r}",
                                  "screen": shown,
                                  "output": out.decode("utf-8", "replace")}))
                sys.exit(1)
        if "file" in step:
            try:
                with open(step["file"], encoding="utf-8") as f:
                    content = f.read()
            except FileNotFoundError:
                content = None
            if content != step["equals"]:
                print(json.dumps({"error": f"{step['file']} holds {content!r}, not {step['equals']!r}",
                                  "screen": visible(),
                                  "output": out.decode("utf-8", "replace")}))
                sys.exit(1)
        if "touch" in step:
            with open(step["touch"], "w", encoding="utf-8"):
                pass
        if "send" in step:
            time.sleep(0.05)
            os.write(fd, step["send"].encode())
        if "expect" in step:
            deadline = time.time() + step.get("timeout", 30)
            want = step["expect"].encode()
            while want not in out[seen_upto:]:
                if time.time() > deadline or not pump(0.1) and want not in out[seen_upto:]:
                    if time.time() > deadline:
                        print(json.dumps({"error": f"timed out waiting for {step['expect']!r}",
                                          "output": out.decode("utf-8", "replace")}))
                        sys.exit(1)
            seen_upto = out.index(want, seen_upto) + len(want)
    # Drain until the child exits.
    deadline = time.time() + 30
    status = None
    while time.time() < deadline:
        pump(0.1)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
    while pump(0.05):
        pass
    print(json.dumps({"output": out.decode("utf-8", "replace"), "status": status,
                      "screen": visible()}))


if __name__ == "__main__":
    main()
