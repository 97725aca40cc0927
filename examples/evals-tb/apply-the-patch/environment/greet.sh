#!/bin/sh
name=${1:-world}
echo "helo, $name"
