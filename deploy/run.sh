#!/usr/bin/env bash
# The "run" command: installs what is missing, builds, and starts sparrowd on a model.
#   deploy/run.sh [MODEL.gguf] [extra sparrowd flags]
# Without a model it serves ../shared/models/stories260K.gguf: HTTP (OpenAI API) on
# 127.0.0.1:8080 and gRPC on 127.0.0.1:50051. Ctrl-C stops it. `build/bin/sparrowd --help`
# lists every flag.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup-deps.sh --build
# The programs alone (sparrowd, sparrow, sparrowctl): the tests are deploy/test.sh's.
SPARROW_BUILD_TARGETS=programs deploy/build.sh
MODEL="../shared/models/stories260K.gguf"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then MODEL="$1"; shift; fi
echo "try: curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 48}'"
exec build/bin/sparrowd --model "$MODEL" "$@"
