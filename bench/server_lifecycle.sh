# Sourced by the bench scripts that start one server at a time (serve_compare.sh,
# embed_compare.sh): SERVER_PID, stop_server (also on EXIT) and wait_ready URL.
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2> /dev/null || true
    wait "$SERVER_PID" 2> /dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

wait_ready() {  # url: true once /health answers 200, false if the server died or took > 60 s
  for _ in $(seq 1 240); do
    if curl -sf "$1/health" > /dev/null 2>&1; then return 0; fi
    kill -0 "$SERVER_PID" 2> /dev/null || return 1
    sleep 0.25
  done
  return 1
}
