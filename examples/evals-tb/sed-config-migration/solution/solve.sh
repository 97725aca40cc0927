#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
for f in conf/*.conf; do sed -i -E 's/^([A-Za-z_][A-Za-z0-9_]*): (.*)$/\1 = \2/' "$f"; done
