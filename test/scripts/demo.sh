#!/usr/bin/env bash
# The README's first command: on a fresh Debian 12 machine, as root,
#
#   bash test/scripts/demo.sh
#
# installs what is needed, builds and installs adk_runner, starts a
# throw-away PostgreSQL cluster as the unprivileged user adkci (PostgreSQL
# refuses root), runs the demo and prints the session history from SQL.
set -euo pipefail
cd "$(dirname "$0")/../.."
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
    cp -a "$SRC/test" "$D/"
    chown -R adkci "$D"
    exec runuser -u adkci -- env HOME=/home/adkci ADK_DEMO_AS_USER=1 bash "$D/test/scripts/demo.sh"
fi

. test/scripts/cluster.sh
cluster_start
echo "== demo: a session in the database"
psql -X -q -v ON_ERROR_STOP=1 -P pager=off -f test/scripts/demo.sql
