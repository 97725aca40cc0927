#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
for f in app.conf db.conf; do diff -u /tests/$f conf/$f || fail=1; done
[ "$(cat conf/README)" = "not a config file: key: value stays" ] || fail=1

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
