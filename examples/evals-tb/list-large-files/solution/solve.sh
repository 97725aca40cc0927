#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
find data -type f -size +1024c | sort > big.txt
