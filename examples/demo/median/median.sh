#!/bin/sh
# Prints the median of the numbers in the file given as $1 (one per line).
set -eu
sort "$1" | awk '
  { v[NR] = $1 }
  END {
    if (NR == 0) { print "median: no numbers" > "/dev/stderr"; exit 1 }
    if (NR % 2) print v[(NR + 1) / 2]
    else print (v[NR / 2] + v[NR / 2 + 1]) / 2
  }'
