# Shared helpers, sourced by main.sh and report.sh.
greet_user() {
  printf 'Hello, %s!\n' "$1"
}
