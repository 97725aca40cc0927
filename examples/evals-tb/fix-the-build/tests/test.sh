#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
sums=$(cat main.c geometry.c geometry.h | cksum)
[ "$sums" = "$(cat /tests/sources.cksum)" ] || { echo "the C sources changed"; fail=1; }
make clean >/dev/null 2>&1
make >/dev/null || fail=1
[ "$(./hypot 3 4)" = 5 ] || { echo "./hypot 3 4 does not print 5"; fail=1; }
[ "$(./hypot 5 12)" = 13 ] || fail=1

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
