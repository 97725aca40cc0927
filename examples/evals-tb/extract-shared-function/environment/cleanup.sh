#!/bin/sh
log_line() {
  printf '[%s] %s\n' "$1" "$2"
}

log_line cleanup "removing temp files"
