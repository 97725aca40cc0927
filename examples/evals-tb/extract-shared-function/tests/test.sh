#!/bin/bash
# Harbor's verifier contract: runs in the workspace (/app) after the agent, writes
# /logs/verifier/reward.txt (or reward.json).
cd /app || exit 1
fail=0
[ -f lib/log.sh ] || { echo "no lib/log.sh"; fail=1; }
[ "$(grep -l 'log_line()' backup.sh cleanup.sh)" = "" ] || { echo "log_line is still defined in a script"; fail=1; }
grep -q 'log_line()' lib/log.sh || fail=1
[ "$(sh backup.sh)" = "$(printf '[backup] copying files\n[backup] done')" ] || fail=1
[ "$(sh cleanup.sh)" = "[cleanup] removing temp files" ] || fail=1
[ "$(cd / && sh /app/backup.sh | head -n 1)" = "[backup] copying files" ] || { echo "backup.sh must work from any directory"; fail=1; }

if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
