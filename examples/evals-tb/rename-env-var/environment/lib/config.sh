# The port comes from APP_PORT, else 8080.
port() {
  echo "${APP_PORT:-8080}"
}
