#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
sed -i 's|return (s\[n // 2\] + s\[n // 2 + 1\]) / 2|return (s[n // 2 - 1] + s[n // 2]) / 2|' stats.py
