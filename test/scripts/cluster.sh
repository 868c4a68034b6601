# Source me.  A throw-away PostgreSQL 15 cluster for the demo and the
# benchmarks: unix socket only, in a temp dir, owned by the calling
# (non-root) user.  PostgreSQL refuses to run as root.
#
#   . test/scripts/cluster.sh
#   cluster_start [postgresql.conf line ...]   # sets PGHOST PGPORT PGDATABASE
#   psql -c 'select 1'
#   cluster_stop
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

cluster_start() {
    CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/adk-cluster.XXXXXX")
    "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -A trust -U "$(id -un)" --no-sync >"$CLUSTER_DIR/initdb.log" 2>&1 ||
        { cat "$CLUSTER_DIR/initdb.log"; return 1; }
    {
        echo "unix_socket_directories = '$CLUSTER_DIR'"
        echo "listen_addresses = ''"
        echo "fsync = off"
        echo "lc_messages = 'C'"
        echo "timezone = 'UTC'"
        for line in "$@"; do echo "$line"; done
    } >>"$CLUSTER_DIR/data/postgresql.conf"
    export PGHOST=$CLUSTER_DIR PGPORT=5432 PGDATABASE=postgres PGUSER=$(id -un)
    "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w -o "-p $PGPORT" start >/dev/null ||
        { cat "$CLUSTER_DIR/server.log"; return 1; }
    trap cluster_stop EXIT
}

cluster_stop() {
    [ -n "${CLUSTER_DIR:-}" ] || return 0
    "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1
    rm -rf "$CLUSTER_DIR"
    CLUSTER_DIR=
}
