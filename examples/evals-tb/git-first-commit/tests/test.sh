#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
[ "$(git rev-parse --abbrev-ref HEAD)" = main ] || { echo "not on main"; fail=1; }
[ "$(git rev-list --count HEAD)" = 1 ] || { echo "not exactly one commit"; fail=1; }
[ "$(git log -1 --format=%s)" = "Initial import" ] || fail=1
[ "$(git log -1 --format='%an <%ae>')" = "tern <tern@example.com>" ] || fail=1
[ "$(git rev-parse release)" = "$(git rev-parse HEAD)" ] || { echo "no release branch at HEAD"; fail=1; }
[ "$(git ls-tree -r --name-only HEAD | sort | tr '\n' ' ')" = "README.md docs/usage.txt src/app.sh " ] || { echo "the commit lacks files"; fail=1; }
[ -z "$(git status --porcelain)" ] || { echo "uncommitted changes"; fail=1; }

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
