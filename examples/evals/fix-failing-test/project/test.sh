#!/bin/sh
# Checks slug.sh against known titles.
failed=0
expect() {
  got=$(sh slug.sh "$1")
  if [ "$got" = "$2" ]; then echo "ok    '$1' -> $got"; else echo "FAIL  '$1': expected $2, got $got"; failed=1; fi
}
expect "hello" "hello"
expect "Hello World" "hello-world"
expect "  Tern: an agent  " "tern-an-agent"
expect "MCP servers, all the way down" "mcp-servers-all-the-way-down"
exit $failed
