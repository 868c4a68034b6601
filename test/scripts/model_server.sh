# Source me.  Starts the bundled local model server (test/model_server/)
# on a free loopback port for the regression suites, the demo and the
# benchmarks.
#
#   . test/scripts/model_server.sh
#   model_server_start [extra server args]   # sets ADK_TEST_MODEL_URL,
#                                            # ADK_TEST_MODEL_CONF (a
#                                            # postgresql.conf snippet)
#   model_server_stop
_ms_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../model_server" && pwd)

model_server_start() {
    MODEL_SERVER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/adk-model.XXXXXX")
    /usr/bin/python3 "$_ms_dir/server.py" --port 0 --port-file "$MODEL_SERVER_DIR/port" \
        --log "$MODEL_SERVER_DIR/server.log" "$@" >"$MODEL_SERVER_DIR/stdout.log" 2>&1 &
    MODEL_SERVER_PID=$!
    for _ in $(seq 100); do
        [ -s "$MODEL_SERVER_DIR/port" ] && break
        kill -0 "$MODEL_SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    if [ ! -s "$MODEL_SERVER_DIR/port" ]; then
        echo "model server did not start:"; cat "$MODEL_SERVER_DIR/stdout.log"
        return 1
    fi
    ADK_TEST_MODEL_URL="http://127.0.0.1:$(cat "$MODEL_SERVER_DIR/port")"
    ADK_TEST_MODEL_CONF=$MODEL_SERVER_DIR/model_server.conf
    MODEL_SERVER_LOG=$MODEL_SERVER_DIR/server.log
    printf "adk_test.model_url = '%s'\nadk.verify_incremental = on\n" "$ADK_TEST_MODEL_URL" >"$ADK_TEST_MODEL_CONF"
    export ADK_TEST_MODEL_URL ADK_TEST_MODEL_CONF MODEL_SERVER_LOG
}

model_server_stop() {
    [ -n "${MODEL_SERVER_PID:-}" ] && kill "$MODEL_SERVER_PID" 2>/dev/null
    MODEL_SERVER_PID=
}
