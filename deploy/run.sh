#!/usr/bin/env bash
# The "run" command: installs what is missing, builds, and generates text from a model.
#   deploy/run.sh [MODEL.gguf] [extra sparrow generate flags]
# Without a model it uses ../shared/models/stories260K.gguf.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup-deps.sh
deploy/build.sh
MODEL="../shared/models/stories260K.gguf"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then MODEL="$1"; shift; fi
exec build/bin/sparrow generate -m "$MODEL" -p "Once upon a time" -n 256 "$@"
