#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
# Bytecode the agent's runs left could be stale (same size, same second): start clean.
find . -name __pycache__ -prune -exec rm -rf {} +
cp /tests/test_stats.py test_stats.py
python3 -m unittest -q 2>&1 || fail=1
python3 -c 'from stats import median; assert median([1, 2, 3, 10]) == 2.5' || fail=1

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
