#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
if grep -rn APP_PORT . ; then echo "APP_PORT is still used"; fail=1; fi
[ "$(SERVICE_PORT=9000 sh serve.sh)" = "listening on 9000" ] || fail=1
[ "$(sh serve.sh)" = "listening on 8080" ] || fail=1
grep -q 'export SERVICE_PORT=80' deploy/env.sh || fail=1

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
