#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
awk '$2=="ERROR"{n[$3]++} END{for(s in n) print s","n[s]}' app.log | sort -t, -k2,2nr -k1,1 | { echo service,errors; cat; } > errors.csv
