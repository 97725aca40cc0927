#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
awk -F, 'NR>1{s[$1]+=$3; n[$1]++} END{for(c in s) print s[c]/n[c], c}' readings.csv | sort -nr | head -n 1 | cut -d' ' -f2 > answer.txt
