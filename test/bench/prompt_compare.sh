#!/usr/bin/env bash
# Benchmark: prompt assembly per model call, two builds compared in one run
# instructions (callgrind, deterministic on a loaded
# machine) instead of prompt.sh's wall times, and the requests each build
# sends, byte for byte, and stores in adk.model_calls.
#
#   sudo ADK_PG_CONFIG=/path/pg_config [PROVIDER=openai|gemini|anthropic] \
#       bash test/bench/prompt_compare.sh BASE.so NEW.so
#
# BASE.so and NEW.so are two builds of adk_runner.so (e.g. the branch point's
# and yours) for the PostgreSQL tree of ADK_PG_CONFIG, whose extension SQL
# files are installed.  The tree is copied (a relocatable one) so that the
# two libraries can take turns without touching it.  The scenario is
# prompt.sh's, for PROVIDER's wire format (test/bench/provider.sh, default
# openai): a tool loop on sessions of 10, 1,000 and 5,000 events; per
# size and build, a single-user backend under callgrind makes a warm-up run
# and then one run of K1 = 2 or K2 = 12 model calls, and
#
#   per call = (instructions with K2 - instructions with K1) / (K2 - K1).
#
# The model server logs every request body (--body-log); per size and run
# length the two builds' bodies must be identical, and so must the stored
# adk.model_calls.request values.  Needs valgrind.  Run as root (initdb
# refuses; the scenario runs as user adkci).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BASE.so NEW.so" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 2; }
cd "$(dirname "$0")/../.."
SRC=$PWD
PGC=${ADK_PG_CONFIG:-pg_config}
SIZES=${SIZES:-"10 1000 5000"}
HISTORY=${HISTORY:-text}		# or tools: see prompt.sh's make_session
K1=2
K2=12
. test/bench/provider.sh
id adkci >/dev/null 2>&1 || useradd --create-home adkci
W=$(mktemp -d /tmp/adk-prompt-compare.XXXXXX)
trap 'kill $(cat "$W/ms.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$W"' EXIT
# a private tree such as /opt/pg-X (bin is ROOT/lib/postgresql/15/bin)
root=$(cd "$($PGC --bindir)/../../../.." && pwd)
case $root in /usr | /usr/local | /) echo "$PGC is not a private PostgreSQL tree" >&2; exit 2 ;; esac
cp -a "$root" "$W/pg"
PGBIN=$W/pg/$(realpath --relative-to="$root" "$($PGC --bindir)")
LIB=$("$PGBIN/pg_config" --pkglibdir)
cp "$1" "$W/base.so"
cp "$2" "$W/new.so"
cp -a test "$W/"
chown -R adkci "$W"
as() { runuser -u adkci -- env HOME=/home/adkci "$@"; }

# the model server, logging bodies; the cluster, prompt.sh's objects and sessions
as bash -c "python3 '$W/test/model_server/server.py' --port 0 --port-file '$W/ms.port' \
    --log '$W/ms.log' --body-log '$W/bodies' >/dev/null 2>&1 & echo \$! > '$W/ms.pid'"
for _ in $(seq 100); do [ -s "$W/ms.port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$W/ms.port")"
cp "$W/new.so" "$LIB/adk_runner.so"
as "$PGBIN/initdb" -D "$W/data" -A trust -U adkci --no-sync >/dev/null
printf "unix_socket_directories = '%s'\nlisten_addresses = ''\nfsync = off\nlc_messages = 'C'\ntimezone = 'UTC'\n" "$W" >>"$W/data/postgresql.conf"
as "$PGBIN/pg_ctl" -D "$W/data" -l "$W/server.log" -w start >/dev/null
sed -n '/^CREATE EXTENSION adk_runner;/,/^SQL$/p' "$SRC/test/bench/prompt.sh" | sed '$d' |
    as "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$W" -d postgres -v url="$url" \
        -v provider="$PROVIDER" -v model_path="$BENCH_MODEL_PATH" -v model_id="$BENCH_MODEL_ID" >/dev/null
as "$PGBIN/psql" -X -q -h "$W" -d postgres -c "ALTER DATABASE postgres SET bench.history = '$HISTORY'"
for b in base new; do for n in $SIZES; do for k in $K1 $K2; do
    as "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$W" -d postgres -c "CALL make_session('$b-$n-$k', $n)"
done; done; done
as "$PGBIN/pg_ctl" -D "$W/data" -m fast -w stop >/dev/null
# each build runs on its own copy of the cluster: the second would otherwise
# run on tables the first made bigger (+5-8% per call at 10 events for one
# library compared with itself)
as cp -a "$W/data" "$W/data.base"
as mv "$W/data" "$W/data.new"

as touch "$W/bodies"
declare -A IR
single() { as "$PGBIN/postgres" --single -D "$W/data.$b" postgres; }
for b in base new; do
    cp "$W/$b.so" "$LIB/adk_runner.so"
    for n in $SIZES; do for k in $K1 $K2; do
        s=$(wc -l <"$W/bodies")
        printf "CALL warm_up('w-%s-%s-%s')\nCALL one_run('%s-%s-%s', %s, %s)\n" $b $n $k $b $n $k $n $k |
            as valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
                "$PGBIN/postgres" --single -D "$W/data.$b" postgres >"$W/out.log" 2>&1
        if grep -q ERROR "$W/out.log"; then grep ERROR "$W/out.log"; exit 1; fi
        IR[$b.$n.$k]=$(awk '/^summary:|^totals:/ {print $2; exit}' "$W/cg.out")
        sed -n "$((s + 1)),\$p" "$W/bodies" >"$W/bodies.$b.$n.$k"
        echo "COPY (SELECT c.request FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
                    WHERE i.session_id IN ('w-$b-$n-$k', '$b-$n-$k')
                    ORDER BY c.id) TO '$W/req.$b.$n.$k'" |
            tr '\n' ' ' | sed 's/$/\n/' | single >/dev/null 2>&1
    done; done
done

echo "instructions per model call inside a run ($PROVIDER, $HISTORY history; callgrind; (K$K2 - K$K1) / $((K2 - K1)))"
printf '%8s %14s %14s %8s\n' events base new change
for n in $SIZES; do
    pb=$(( (IR[base.$n.$K2] - IR[base.$n.$K1]) / (K2 - K1) ))
    pn=$(( (IR[new.$n.$K2] - IR[new.$n.$K1]) / (K2 - K1) ))
    printf '%8d %14d %14d %7.1f%%\n' "$n" "$pb" "$pn" "$(awk -v a=$pn -v b=$pb 'BEGIN {print (a - b) * 100 / b}')"
done
set -- $SIZES
first=$1; last=${!#}
for b in base new; do
    echo "ratio $b $last/$first: $(awk -v a=$(( IR[$b.$last.$K2] - IR[$b.$last.$K1] )) -v c=$(( IR[$b.$first.$K2] - IR[$b.$first.$K1] )) 'BEGIN {printf "%.1f", a / c}')"
done
bad=0
for n in $SIZES; do for k in $K1 $K2; do
    for what in bodies req; do
        if cmp -s "$W/$what.base.$n.$k" "$W/$what.new.$n.$k"; then r=identical; else r=DIFFERENT; bad=1; fi
        printf '%-32s %5d events, %2d-call run and warm-up: %3d requests, %8d bytes: %s\n' \
            "$( [ $what = bodies ] && echo "request bodies sent" || echo "adk.model_calls.request stored")" \
            "$n" "$k" "$(wc -l <"$W/$what.new.$n.$k")" "$(wc -c <"$W/$what.new.$n.$k")" "$r"
    done
done; done
exit $bad
