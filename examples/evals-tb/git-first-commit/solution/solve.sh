#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
git init -q -b main
git add -A
git -c user.name=tern -c user.email=tern@example.com commit -q -m "Initial import"
git branch release
