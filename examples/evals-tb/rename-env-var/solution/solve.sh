#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
grep -rl APP_PORT . | xargs sed -i 's/APP_PORT/SERVICE_PORT/g'
