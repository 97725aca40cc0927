#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
header=0; rows=0; order=0
[ "$(head -n 1 users.csv)" = "id,name,email" ] && header=1
if diff <(tail -n +2 users.csv | sort) <(tail -n +2 /tests/expected.csv | sort) >/dev/null; then rows=1; fi
if diff users.csv /tests/expected.csv; then order=1; fi
# Several rewards, as Harbor's reward.json allows; `reward` decides the pass.
reward=$(( header * rows * order ))
printf '{"reward": %d, "header": %d, "rows": %d, "order": %d}\n' $reward $header $rows $order > /logs/verifier/reward.json
