# Source me, from the top of the tree.  The benchmarks start their own
# cluster, which PostgreSQL refuses to do as root.
#
#   . test/scripts/as_test_user.sh
#   run_as_test_user test/bench/NAME.sh "$@"
#
# As root: copies test/ into a temp dir owned by the unprivileged user
# adkci (created if missing), runs the script there as adkci with the same
# arguments (PGBIN, MEM_CALLS, HISTORY and PROVIDER passed on), removes the
# copy and exits with the script's status.  As any other user it returns at
# once and the script goes on.
run_as_test_user() {
    local script=$1 d rc
    shift
    [ "$(id -u)" -eq 0 ] || return 0
    id adkci >/dev/null 2>&1 || useradd --create-home adkci
    d=$(mktemp -d /tmp/adk-bench.XXXXXX)
    if ! { cp -a test "$d/" && chown -R adkci "$d"; }; then
        rm -rf "$d"
        exit 1
    fi
    rc=0
    runuser -u adkci -- env HOME=/home/adkci PGBIN="${PGBIN:-}" MEM_CALLS="${MEM_CALLS:-}" HISTORY="${HISTORY:-}" \
        PROVIDER="${PROVIDER:-}" bash "$d/$script" "$@" || rc=$?
    rm -rf "$d"
    exit $rc
}
