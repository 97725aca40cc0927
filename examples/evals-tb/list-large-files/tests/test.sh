#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
diff -u /tests/expected.txt big.txt || fail=1

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
