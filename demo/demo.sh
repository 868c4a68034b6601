#!/usr/bin/env bash
# The README's first command: on a fresh Debian 12 machine, as root,
#
#   bash demo/demo.sh
#
# installs what is needed, builds and installs adk_runner, starts a
# throw-away PostgreSQL cluster as the unprivileged user adkci (PostgreSQL
# refuses root), runs the demo and prints the session history from SQL.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

if [ "$(id -u)" -eq 0 ] && [ -z "${ADK_DEMO_AS_USER:-}" ]; then
    if [ -z "${ADK_CI_NO_APT:-}" ]; then
        echo "== installing packages"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends \
            postgresql-15 postgresql-server-dev-15 libcurl4-openssl-dev libjson-c-dev \
            make gcc pkg-config python3 curl ca-certificates >/dev/null
    fi
    echo "== building and installing adk_runner"
    make -s USE_PGXS=1 PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config -j2 >/dev/null
    make -s USE_PGXS=1 PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install >/dev/null
    id adkci >/dev/null 2>&1 || useradd --create-home --shell /bin/bash adkci
    D=$(mktemp -d /tmp/adk-demo.XXXXXX)
    cp -a "$SRC/test" "$SRC/demo" "$D/"
    chown -R adkci "$D"
    exec runuser -u adkci -- env HOME=/home/adkci ADK_DEMO_AS_USER=1 \
        OPENAI_API_KEY="${OPENAI_API_KEY:-}" OPENAI_BASE_URL="${OPENAI_BASE_URL:-}" \
        GEMINI_API_KEY="${GEMINI_API_KEY:-}" ANTHROPIC_API_KEY="${ANTHROPIC_API_KEY:-}" \
        ADK_DEMO_MODEL="${ADK_DEMO_MODEL:-}" bash "$D/demo/demo.sh"
fi

. test/scripts/cluster.sh
. test/scripts/model_server.sh

# A real provider when its key is in the environment (the key stays in the
# server's environment: the model names the variable, adk.allowed_key_env
# allows it); the bundled local model server otherwise.
if [ -n "${OPENAI_API_KEY:-}" ]; then
    provider=openai endpoint=${OPENAI_BASE_URL:-https://api.openai.com/v1}
    model=${ADK_DEMO_MODEL:-gpt-4o-mini} key_env=OPENAI_API_KEY
elif [ -n "${GEMINI_API_KEY:-}" ]; then
    provider=gemini endpoint=https://generativelanguage.googleapis.com
    model=${ADK_DEMO_MODEL:-gemini-2.0-flash} key_env=GEMINI_API_KEY
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
    provider=anthropic endpoint=https://api.anthropic.com
    model=${ADK_DEMO_MODEL:-claude-3-5-haiku-latest} key_env=ANTHROPIC_API_KEY
else
    model_server_start
    provider=openai endpoint=$ADK_TEST_MODEL_URL/v1 model=local-demo key_env=
    trap 'model_server_stop; cluster_stop' EXIT
    echo "== using the bundled local model server at $ADK_TEST_MODEL_URL"
fi
[ -z "$key_env" ] || echo "== using $provider ($endpoint, model $model, key from \$$key_env)"
# an environment key goes only to the hosts adk.env_key_hosts binds it to:
# bind it to the endpoint's host (the default knows the providers' own)
conf=()
[ -z "$key_env" ] ||
    conf+=("adk.env_key_hosts = '$key_env=$(printf '%s' "$endpoint" | sed -E 's#^[A-Za-z]+://([^/]+).*#\1#')'")
cluster_start "${conf[@]}"
[ -n "${MODEL_SERVER_PID:-}" ] && trap 'model_server_stop; cluster_stop' EXIT
psql -X -v ON_ERROR_STOP=1 -P pager=off -v provider="$provider" -v endpoint="$endpoint" \
    -v model="$model" -v key_env="$key_env" -f demo/demo.sql
