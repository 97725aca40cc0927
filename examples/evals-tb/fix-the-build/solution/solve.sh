#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
sed -i 's/-o $@ main.o geometry.o/-o $@ main.o geometry.o -lm/' Makefile
