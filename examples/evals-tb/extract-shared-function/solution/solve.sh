#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
mkdir -p lib
printf '%s' 'log_line() {
  printf '"'"'[%s] %s\n'"'"' "$1" "$2"
}
' > lib/log.sh
for f in backup.sh cleanup.sh; do
  awk 'BEGIN{skip=0} /^log_line\(\) \{/{skip=1; print ". \"$(dirname \"$0\")/lib/log.sh\""; next} skip&&/^\}/{skip=0; next} !skip' "$f" > "$f.new"
  mv "$f.new" "$f"
done
