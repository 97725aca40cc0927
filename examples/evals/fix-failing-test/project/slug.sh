#!/bin/sh
# Turns a title into a URL slug: lower case, words joined by single dashes.
printf '%s\n' "$1" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//'
