#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
patch -p1 < fix.patch >/dev/null
rm fix.patch
