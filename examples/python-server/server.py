"""A tern tool server written in Python, with the official MCP SDK (`pip install mcp`).

tern runs it like any other MCP server; add to ~/.tern/config.toml:

    [mcp_servers.notes]
    command = "python3"
    args = ["/path/to/examples/python-server/server.py", "--file", "/path/to/notes.txt"]

Its tools then appear to the model as `notes__add_note` and `notes__list_notes`.
Logs go to stderr: stdout is the protocol.
"""

import argparse
import sys
from pathlib import Path

from mcp.server import MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--file", required=True, help="where the notes are kept, one per line")
args = parser.parse_args()
notes = Path(args.file)

server = MCPServer("notes")


@server.tool()
def add_note(text: str) -> str:
    """Append one note (a single line) to the notes file."""
    line = " ".join(text.splitlines()).strip()
    if not line:
        return "nothing to add: the note is empty"
    with notes.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    print(f"added a note of {len(line)} characters", file=sys.stderr)
    return f"added: {line}"


@server.tool()
def list_notes() -> str:
    """Return every note, numbered."""
    if not notes.exists():
        return "no notes yet"
    lines = notes.read_text(encoding="utf-8").splitlines()
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)) or "no notes yet"


if __name__ == "__main__":
    server.run("stdio")
