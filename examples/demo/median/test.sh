#!/bin/sh
# Runs median.sh on each data file and compares with the expected answer.
failed=0
check() {
  got=$(sh median.sh "data/$1")
  if [ "$got" = "$2" ]; then
    echo "ok    $1 -> $got"
  else
    echo "FAIL  $1: expected $2, got $got"
    failed=$((failed + 1))
  fi
}
check odd.txt 3
check even.txt 2.5
check prices.txt 12
check latencies.txt 95
if [ "$failed" -gt 0 ]; then
  echo "$failed failed"
  exit 1
fi
echo "all passed"
