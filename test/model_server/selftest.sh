#!/usr/bin/env bash
# Self-test of the mock model server (bash + curl + python3 only).
# Usage: test/model_server/selftest.sh      (exit status 0 when every check passed)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/model_server_selftest.XXXXXX")
KEY="sk-selftest-$$-$RANDOM$RANDOM-DO-NOT-LOG"
PASS=0
FAIL=0
PIDS=()
printf '%s' "$KEY" >"$T/key"

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT

ok()  { PASS=$((PASS + 1)); printf 'ok   %s\n' "$1"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$1"; if [ -n "${2:-}" ]; then printf '%s\n' "$2" | head -c 1500 | sed 's/^/     /'; echo; fi; }

# ---------------------------------------------------------------- helpers --
cat >"$T/a.py" <<'PYEOF'
import json, sys
T = sys.argv[1]
raw = open(T + "/b", "rb").read()
hdr = open(T + "/h", "rb").read().decode("latin-1")
w = open(T + "/s").read().split()
status = int(w[0]) if w else 0
time_total = float(w[1]) if len(w) > 1 else 0.0
rc = int(open(T + "/rc").read().strip() or 0)
text = raw.decode("utf-8", "replace")
try:
    J = json.loads(raw)
except Exception:
    J = None

def header(name):
    for line in hdr.split("\r\n"):
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None

def events():
    t = raw.decode("utf-8", "replace").replace("\r\n", "\n")
    out = []
    for block in t.split("\n\n"):
        if not block.strip():
            continue
        ev, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                d = line[5:]
                data.append(d[1:] if d.startswith(" ") else d)
        out.append((ev, "\n".join(data)))
    return out

def oa_chunks():
    return [json.loads(d) for e, d in events() if d != "[DONE]"]

def oa_text():
    return "".join((c["choices"][0]["delta"].get("content") or "") for c in oa_chunks() if c["choices"])

def oa_calls():
    calls = {}
    for c in oa_chunks():
        for ch in c["choices"]:
            for tc in ch["delta"].get("tool_calls") or []:
                d = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
                if tc.get("id"):
                    d["id"] = tc["id"]
                f = tc.get("function") or {}
                d["name"] += f.get("name") or ""
                d["arguments"] += f.get("arguments") or ""
    return [dict(calls[i], args=json.loads(calls[i]["arguments"])) for i in sorted(calls)]

def oa_finish():
    return [ch["finish_reason"] for c in oa_chunks() for ch in c["choices"] if ch["finish_reason"]]

def gm_chunks():
    return [json.loads(d) for e, d in events()]

def gm_parts(chs=None):
    chs = gm_chunks() if chs is None else chs
    return [p for c in chs for cand in c.get("candidates", []) for p in cand["content"]["parts"]]

def gm_text(chs=None):
    return "".join(p.get("text", "") for p in gm_parts(chs))

def gm_calls(chs=None):
    return [p["functionCall"] for p in gm_parts(chs) if "functionCall" in p]

def an_events():
    return [(e, json.loads(d)) for e, d in events()]

def an_text():
    return "".join(d["delta"]["text"] for e, d in an_events()
                   if e == "content_block_delta" and d["delta"]["type"] == "text_delta")

def an_calls():
    blocks = {}
    for e, d in an_events():
        if e == "content_block_start" and d["content_block"]["type"] == "tool_use":
            blocks[d["index"]] = dict(d["content_block"], json="")
        elif e == "content_block_delta" and d["delta"]["type"] == "input_json_delta":
            blocks[d["index"]]["json"] += d["delta"]["partial_json"]
    return [dict(blocks[i], input=json.loads(blocks[i]["json"])) for i in sorted(blocks)]

env = dict(globals())
try:
    res = eval(sys.argv[2], env)
except Exception as e:
    import traceback
    traceback.print_exc()
    res = False
if not res:
    print("expression was false: %s" % sys.argv[2], file=sys.stderr)
    print("status=%s rc=%s time=%s" % (status, rc, time_total), file=sys.stderr)
sys.exit(0 if res else 1)
PYEOF

# A NAME EXPR -- assert a python expression over the last response
A() {
    if "$PY" "$T/a.py" "$T" "$2" 2>"$T/aerr"; then ok "$1"; else bad "$1" "$(cat "$T/aerr"; head -c 500 "$T/b")"; fi
}

# req PATH DATA [curl args...] -- POST, response in $T/b, headers $T/h, "code time" in $T/s, curl rc in $T/rc
req() {
    local path=$1 data=$2
    shift 2
    : >"$T/b"; : >"$T/h"
    printf '%s' "$data" >"$T/req.json"
    curl -s -o "$T/b" -D "$T/h" -w '%{http_code} %{time_total}' -X POST \
        -H 'Content-Type: application/json' --data-binary @"$T/req.json" "$@" "$BASE$path" >"$T/s"
    echo $? >"$T/rc"
}
get() {
    : >"$T/b"; : >"$T/h"
    curl -s -o "$T/b" -D "$T/h" -w '%{http_code} %{time_total}' "$@" >"$T/s"
    echo $? >"$T/rc"
}
OA()  { req /v1/chat/completions "$1" -H "Authorization: Bearer $KEY" "${@:2}"; }
GM()  { req "/v1beta/models/$1:generateContent" "$2" -H "x-goog-api-key: $KEY" "${@:3}"; }
GMS() { req "/v1beta/models/$1:streamGenerateContent?alt=sse" "$2" -H "x-goog-api-key: $KEY" "${@:3}"; }
AN()  { req /v1/messages "$1" -H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" "${@:2}"; }

start_server() { # portfile logfile args...
    local pf=$1 lf=$2
    shift 2
    "$PY" "$HERE/server.py" --port 0 --port-file "$pf" --log "$lf" "$@" >>"$T/server.stdout" 2>>"$T/server.stderr" &
    PIDS+=($!)
    for _ in $(seq 1 100); do [ -s "$pf" ] && break; sleep 0.05; done
}

# ------------------------------------------------------------------ start --
start_server "$T/port" "$T/server.log" --require-key "$KEY"
PORT=$(cat "$T/port" 2>/dev/null | tr -d '[:space:]')
if ! [[ "$PORT" =~ ^[0-9]+$ ]]; then
    bad "server started and wrote its port file"
    echo "model_server selftest: $PASS passed, $FAIL failed"
    exit 1
fi
ok "server started, port file holds $PORT"
BASE="http://127.0.0.1:$PORT"
if ls "$T"/port.tmp.* >/dev/null 2>&1; then bad "no temporary port file left behind"; else ok "no temporary port file left behind"; fi

# --------------------------------------------------------- helper routes --
get "$BASE/_health"
A "GET /_health -> 200 ok" 'status == 200 and raw == b"ok"'
get -X POST "$BASE/_reset"
A "POST /_reset" 'status == 200 and J["reset"] is True'
get "$BASE/_stats"
A "GET /_stats after reset" 'status == 200 and J["total"] == 0 and J["routes"].get("/_stats", 0) == 1'
get "$BASE/nope"
A "unknown route -> 404" 'status == 404 and "error" in J'
get "$BASE/v1/chat/completions"
A "GET on a provider route -> 405" 'status == 405'

# ------------------------------------------------------------------ auth --
req /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}]}'
A "openai: missing key -> 401 shape" 'status == 401 and J["error"]["type"] == "invalid_request_error" and "API key" in J["error"]["message"] and set(J["error"]) == {"message","type","param","code"}'
req /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}]}' -H "Authorization: Bearer sk-wrong"
A "openai: wrong key -> 401 invalid_api_key" 'status == 401 and J["error"]["code"] == "invalid_api_key" and "sk-wrong" not in text'
req /v1beta/models/gem:generateContent '{"contents":[{"parts":[{"text":"hi"}]}]}'
A "gemini: missing key -> 401 {error:{code,message,status}}" 'status == 401 and J["error"]["code"] == 401 and J["error"]["status"] == "UNAUTHENTICATED" and header("content-type").startswith("application/json")'
req /v1beta/models/gem:generateContent '{"contents":[{"parts":[{"text":"hi"}]}]}' -H "x-goog-api-key: wrong"
A "gemini: wrong key -> 401 API_KEY_INVALID" 'status == 401 and J["error"]["details"][0]["reason"] == "API_KEY_INVALID"'
req "/v1beta/models/gem:generateContent?key=$KEY" '{"contents":[{"parts":[{"text":"hi"}]}]}'
A "gemini: ?key= accepted" 'status == 200 and J["candidates"][0]["content"]["parts"][0]["text"] == "echo: hi"'
get "$BASE/_last"
A "/_last redacts ?key= in the path" '"<redacted len=" in J["path"] and "sk-selftest" not in text'
req /v1/messages '{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' -H "anthropic-version: 2023-06-01"
A "anthropic: missing key -> 401 shape" 'status == 401 and J["type"] == "error" and J["error"]["type"] == "authentication_error" and J["request_id"].startswith("req_")'
req /v1/messages '{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' -H "anthropic-version: 2023-06-01" -H "x-api-key: nope"
A "anthropic: wrong key -> 401" 'status == 401 and J["error"]["message"] == "invalid x-api-key"'
req /v1/messages '{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' -H "x-api-key: $KEY"
A "anthropic: missing anthropic-version -> 400" 'status == 400 and J["error"]["type"] == "invalid_request_error" and "anthropic-version" in J["error"]["message"]'

# ----------------------------------------------------------- bad requests --
OA '{"model":"m","messages":['
A "openai: invalid JSON -> 400" 'status == 400 and J["error"]["type"] == "invalid_request_error" and "parse the JSON" in J["error"]["message"]'
OA '{"model":"m"}'
A "openai: missing messages -> 400 param=messages" 'status == 400 and J["error"]["param"] == "messages"'
GM gem '{"contents":[]}'
A "gemini: empty contents -> 400 INVALID_ARGUMENT" 'status == 400 and J["error"]["status"] == "INVALID_ARGUMENT"'
AN '{"model":"c","messages":[{"role":"user","content":"hi"}]}'
A "anthropic: missing max_tokens -> 400" 'status == 400 and J["error"]["message"] == "max_tokens: Field required"'
AN 'not json'
A "anthropic: invalid JSON -> 400" 'status == 400 and J["type"] == "error" and J["error"]["type"] == "invalid_request_error"'

# --------------------------------------------------- scripted: rule 5 echo --
OA '{"model":"mock","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"hello there"}]}'
A "openai: echo, object/ids/usage" 'status == 200 and J["object"] == "chat.completion" and J["id"].startswith("chatcmpl-") and J["choices"][0]["message"]["content"] == "echo: hello there" and J["choices"][0]["finish_reason"] == "stop" and J["usage"] == dict(J["usage"], prompt_tokens=(7+11)//4+1, completion_tokens=17//4+1, total_tokens=(7+11)//4+1+17//4+1) and header("content-type") == "application/json" and int(header("content-length")) == len(raw)'
GM gem-1 '{"contents":[{"role":"user","parts":[{"text":"hello there"}]}]}'
A "gemini: echo, usageMetadata/modelVersion/responseId" 'status == 200 and J["candidates"][0]["content"] == {"parts":[{"text":"echo: hello there"}],"role":"model"} and J["candidates"][0]["finishReason"] == "STOP" and J["usageMetadata"]["promptTokenCount"] == 3 and J["usageMetadata"]["candidatesTokenCount"] == 5 and J["usageMetadata"]["totalTokenCount"] == 8 and J["modelVersion"] == "gem-1" and J["responseId"]'
AN '{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hello there"}]}]}'
A "anthropic: echo, message shape" 'status == 200 and J["type"] == "message" and J["role"] == "assistant" and J["id"].startswith("msg_") and J["content"] == [{"type":"text","text":"echo: hello there"}] and J["stop_reason"] == "end_turn" and J["stop_sequence"] is None and J["usage"]["input_tokens"] == 3 and J["usage"]["output_tokens"] == 5 and header("request-id")'
AN '{"model":"c","max_tokens":100,"messages":[{"role":"user","content":""}]}'
A "anthropic: no user text -> ok" 'J["content"][0]["text"] == "ok"'
GM gem '{"contents":[{"role":"user","parts":[]}]}'
A "gemini: no user text -> ok" 'J["candidates"][0]["content"]["parts"][0]["text"] == "ok"'

# ---------------------------------------------------- ANSWER_IN_CAPS, /_last --
OA '{"model":"m","messages":[{"role":"developer","content":"ANSWER_IN_CAPS please"},{"role":"user","content":"shout"}]}'
A "openai: developer ANSWER_IN_CAPS" 'J["choices"][0]["message"]["content"] == "ECHO: SHOUT"'
GM gem '{"systemInstruction":{"parts":[{"text":"ANSWER_IN_CAPS"}]},"contents":[{"role":"user","parts":[{"text":"shout"}]}]}'
A "gemini: systemInstruction ANSWER_IN_CAPS" 'J["candidates"][0]["content"]["parts"][0]["text"] == "ECHO: SHOUT"'
AN '{"model":"c","max_tokens":100,"system":[{"type":"text","text":"ANSWER_IN_CAPS"}],"messages":[{"role":"user","content":"shout"}]}'
A "anthropic: system ANSWER_IN_CAPS" 'J["content"][0]["text"] == "ECHO: SHOUT"'
get "$BASE/_last"
A "/_last: system recorded, key redacted, body parsed" 'J["system"] == "ANSWER_IN_CAPS" and J["headers"]["x-api-key"] == "<redacted len=%d>" % len(open(T + "/key").read()) and J["body"]["max_tokens"] == 100 and J["provider"] == "anthropic" and J["status"] == 200 and open(T + "/key").read() not in text'

# ---------------------------------------------------------- rule 3 weather --
TOOLS_OA='"tools":[{"type":"function","function":{"name":"get_weather","description":"w","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"transfer_to_agent","parameters":{"type":"object"}}},{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}]'
TOOLS_GM='"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT"}},{"name":"transfer_to_agent"},{"name":"lookup"}]}]'
TOOLS_AN='"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"transfer_to_agent","input_schema":{"type":"object"}},{"name":"lookup","input_schema":{"type":"object"}}]'

OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"What is the weather in Paris?"}]}'
A "openai: weather -> tool_calls get_weather(Paris)" '(lambda m: J["choices"][0]["finish_reason"] == "tool_calls" and m["content"] is None and len(m["tool_calls"]) == 1 and m["tool_calls"][0]["id"].startswith("call_") and m["tool_calls"][0]["type"] == "function" and m["tool_calls"][0]["function"]["name"] == "get_weather" and json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"city":"Paris"})(J["choices"][0]["message"])'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"how is the weather today?"}]}]}'
A "gemini: weather default Hangzhou, no id" 'J["candidates"][0]["content"]["parts"] == [{"functionCall":{"name":"get_weather","args":{"city":"Hangzhou"}}}] and J["candidates"][0]["finishReason"] == "STOP"'
AN '{"model":"c","max_tokens":100,'"$TOOLS_AN"',"messages":[{"role":"user","content":"weather in Berlin, please"}]}'
A "anthropic: weather -> tool_use toolu_" 'J["stop_reason"] == "tool_use" and J["content"][0]["type"] == "tool_use" and J["content"][0]["id"].startswith("toolu_") and J["content"][0]["name"] == "get_weather" and J["content"][0]["input"] == {"city":"Berlin"}'
OA '{"model":"m","messages":[{"role":"user","content":"What is the weather in Paris?"}]}'
A "openai: weather without the tool -> echo" 'J["choices"][0]["message"]["content"] == "echo: What is the weather in Paris?"'
OA '{"model":"m","tool_choice":"none",'"$TOOLS_OA"',"messages":[{"role":"user","content":"What is the weather in Paris?"}]}'
A "openai: tool_choice none -> echo" 'J["choices"][0]["finish_reason"] == "stop"'

# -------------------------------------------------------- rule 0 replay -----
REPLAY_SYS='[[replay:[{\"when\": \"French\", \"answers\": [\"bonjour\"]}, {\"answers\": [{\"calls\": [{\"name\": \"lookup\", \"args\": {\"q\": 1}}]}, \"done\"]}]]]'
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"system","content":"'"$REPLAY_SYS"'"},{"role":"user","content":"hello"}]}'
A "openai: replay, turn 0 -> the scripted call" '(lambda tc: len(tc) == 1 and tc[0]["function"]["name"] == "lookup" and json.loads(tc[0]["function"]["arguments"]) == {"q":1})(J["choices"][0]["message"]["tool_calls"])'
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"system","content":"'"$REPLAY_SYS"'"},{"role":"user","content":"hello"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"{}"}]}'
A "openai: replay, turn 1 -> the scripted text" 'J["choices"][0]["message"]["content"] == "done"'
OA '{"model":"m","messages":[{"role":"system","content":"'"$REPLAY_SYS"'"},{"role":"user","content":"in French"}]}'
A "openai: replay, the entry whose when is in the user text" 'J["choices"][0]["message"]["content"] == "bonjour"'
OA '{"model":"m","messages":[{"role":"system","content":"'"$REPLAY_SYS"'"},{"role":"user","content":"in French"},{"role":"assistant","content":"bonjour"},{"role":"user","content":"French again"},{"role":"assistant","content":"x"}]}'
A "openai: replay past its answers -> the other rules" 'J["choices"][0]["message"]["content"] == "echo: French again"'

# -------------------------------------------------------- rule 2 directives --
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"call get_weather({\"city\":\"Paris\"}) then call lookup({\"q\": [1, 2], \"n\": {\"x\": null}}) and call undeclared({})"}]}'
A "openai: parallel directive calls (undeclared skipped)" '(lambda tc: len(tc) == 2 and tc[0]["function"]["name"] == "get_weather" and json.loads(tc[0]["function"]["arguments"]) == {"city":"Paris"} and tc[1]["function"]["name"] == "lookup" and json.loads(tc[1]["function"]["arguments"]) == {"q":[1,2],"n":{"x":None}} and tc[0]["id"] != tc[1]["id"])(J["choices"][0]["message"]["tool_calls"])'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"call lookup({\"a\":1}) call get_weather({\"city\":\"Rome\"})"}]}]}'
A "gemini: parallel directive calls" 'J["candidates"][0]["content"]["parts"] == [{"functionCall":{"name":"lookup","args":{"a":1}}},{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]'
AN '{"model":"c","max_tokens":100,'"$TOOLS_AN"',"messages":[{"role":"user","content":"call lookup({\"a\":1}) call get_weather({\"city\":\"Rome\"})"}]}'
A "anthropic: parallel directive calls" '[(b["name"], b["input"]) for b in J["content"]] == [("lookup",{"a":1}),("get_weather",{"city":"Rome"})] and J["stop_reason"] == "tool_use"'
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"call nothere({\"a\":1})"}]}'
A "openai: directive for undeclared tool -> echo" 'J["choices"][0]["message"]["content"].startswith("echo: call nothere")'
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"call! nothere({\"a\":1})"}]}'
A "openai: forced directive call! -> undeclared call" 'J["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "nothere"'

# ---------------------------------------------------------- rule 4 transfer --
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"Please transfer to billing_agent."}]}'
A "openai: transfer_to_agent" '(lambda tc: tc["function"]["name"] == "transfer_to_agent" and json.loads(tc["function"]["arguments"]) == {"agent_name":"billing_agent"})(J["choices"][0]["message"]["tool_calls"][0])'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"transfer to helper"}]}]}'
A "gemini: transfer_to_agent" 'J["candidates"][0]["content"]["parts"][0]["functionCall"] == {"name":"transfer_to_agent","args":{"agent_name":"helper"}}'
AN '{"model":"c","max_tokens":50,'"$TOOLS_AN"',"messages":[{"role":"user","content":"Transfer to helper!"}]}'
A "anthropic: transfer_to_agent" 'J["content"][0]["name"] == "transfer_to_agent" and J["content"][0]["input"] == {"agent_name":"helper"}'

# ------------------------------------------------------- rule 1 tool results --
WRES='{\"city\":\"Hangzhou\",\"forecast\":\"sunny\",\"temperature_c\":25}'
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"weather in Hangzhou?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Hangzhou\"}"}},{"id":"call_2","type":"function","function":{"name":"lookup","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"'"$WRES"'"},{"role":"tool","tool_call_id":"call_2","content":"{\"rows\": [1, 2]}"}]}'
A "openai: tool results -> weather sentence + generic" 'J["choices"][0]["message"]["content"] == "The weather in Hangzhou is sunny, 25\u00b0C. Tool lookup returned: {\"rows\":[1,2]}." and J["choices"][0]["finish_reason"] == "stop"'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Hangzhou"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"city":"Hangzhou","forecast":"sunny","temperature_c":25}}}]}]}'
A "gemini: functionResponse -> weather sentence" 'J["candidates"][0]["content"]["parts"][0]["text"] == "The weather in Hangzhou is sunny, 25\u00b0C."'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"id":"adk-1","name":"lookup","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"adk-1","name":"lookup","response":{"result":"fine"}}}]}]}'
A "gemini: generic fallback" 'J["candidates"][0]["content"]["parts"][0]["text"] == "Tool lookup returned: {\"result\":\"fine\"}."'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"id":"adk-1","name":"lookup","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"adk-1","name":"lookup","response":{}}}]},{"role":"model","parts":[{"text":"done"}]},{"role":"user","parts":[{"text":"call get_weather({\"city\":\"Oslo\"})"}]}]}'
A "gemini: ids in request -> functionCall.id in response" '(lambda fc: fc["name"] == "get_weather" and fc["args"] == {"city":"Oslo"} and fc.get("id"))(J["candidates"][0]["content"]["parts"][0]["functionCall"])'
AN '{"model":"c","max_tokens":100,'"$TOOLS_AN"',"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Hangzhou"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"'"$WRES"'"}]}]}'
A "anthropic: tool_result -> weather sentence" 'J["content"] == [{"type":"text","text":"The weather in Hangzhou is sunny, 25\u00b0C."}] and J["stop_reason"] == "end_turn"'
AN '{"model":"c","max_tokens":100,'"$TOOLS_AN"',"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"lookup","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"text","text":"plain words"}]}]}]}'
A "anthropic: tool_result blocks, generic fallback" 'J["content"][0]["text"] == "Tool lookup returned: \"plain words\"."'
GM gem '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"token":"t-1","call_next":"call get_weather({\"city\": \"t-1\"}) call nothere({})"}}}]}]}'
A "gemini: a result's call_next -> the declared calls it names" 'J["candidates"][0]["content"]["parts"] == [{"functionCall":{"name":"get_weather","args":{"city":"t-1"}}}]'
OA '{"model":"m","messages":[{"role":"user","content":"please [[say:{\"a\": 1}]] now"}]}'
A "openai: [[say:TEXT]] -> TEXT exactly" 'J["choices"][0]["message"]["content"] == "{\"a\": 1}"'
OA '{"model":"m","messages":[{"role":"user","content":"[[script:first||second]]"},{"role":"assistant","content":"first"},{"role":"user","content":"again"}]}'
A "openai: [[script:A||B]] -> B after one model message" 'J["choices"][0]["message"]["content"] == "second"'
OA '{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"[[script:call lookup({\"q\": 1})||done]]"}]}'
A "openai: a [[script:]] item of directives -> the calls" 'J["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup"'
OA '{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}}},"messages":[{"role":"user","content":"hi"}]}'
A "openai: json_schema response_format -> the echo in its shape" 'json.loads(J["choices"][0]["message"]["content"]) == {"a": 1, "b": "echo: hi"}'
OA '{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}},"messages":[{"role":"user","content":"hi"}]}'
A "openai: strict json_schema without additionalProperties false -> 400" 'status == 400 and "additionalProperties" in J["error"]["message"]'
GM gem '{"generationConfig":{"responseSchema":{"type":"OBJECT","properties":{"ok":{"type":"BOOLEAN"}}}},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
A "gemini: responseSchema without the JSON MIME type -> 400" 'status == 400'
GM gem '{"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
A "gemini: responseJsonSchema -> the echo in its shape" 'json.loads(J["candidates"][0]["content"]["parts"][0]["text"]) == {"ok": True}'

# ------------------------------------------------------------- max tokens --
OA '{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"a rather long sentence here"}]}'
A "openai: max_tokens cuts, finish length" 'J["choices"][0]["message"]["content"] == "echo: a " and J["choices"][0]["finish_reason"] == "length" and J["usage"]["completion_tokens"] == 3'
OA '{"model":"m","max_completion_tokens":3,"messages":[{"role":"user","content":"a rather long sentence here"}]}'
A "openai: max_completion_tokens" 'len(J["choices"][0]["message"]["content"]) == 12 and J["choices"][0]["finish_reason"] == "length"'
GM gem '{"generationConfig":{"maxOutputTokens":2},"contents":[{"role":"user","parts":[{"text":"a rather long sentence here"}]}]}'
A "gemini: maxOutputTokens -> MAX_TOKENS" 'J["candidates"][0]["finishReason"] == "MAX_TOKENS" and J["candidates"][0]["content"]["parts"][0]["text"] == "echo: a "'
AN '{"model":"c","max_tokens":2,"messages":[{"role":"user","content":"a rather long sentence here"}]}'
A "anthropic: max_tokens -> stop_reason max_tokens" 'J["stop_reason"] == "max_tokens" and J["content"][0]["text"] == "echo: a "'

# ---------------------------------------------------------- prompt caching --
CC='"cache_control":{"type":"ephemeral"}'
SYS='"system":[{"type":"text","text":"'"$(printf 'policy %.0s' $(seq 40))"'",'"$CC"'}]'
AN '{"model":"cache-c","max_tokens":10,'"$SYS"',"messages":[{"role":"user","content":[{"type":"text","text":"hello",'"$CC"'}]}]}'
A "anthropic cache: first request writes" 'status == 200 and J["usage"]["cache_creation_input_tokens"] > 0 and J["usage"]["cache_read_input_tokens"] == 0'
AN '{"model":"cache-c","max_tokens":10,'"$SYS"',"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]},{"role":"assistant","content":[{"type":"text","text":"echo: hello"}]},{"role":"user","content":[{"type":"text","text":"again",'"$CC"'}]}]}'
A "anthropic cache: the next one reads the prefix" 'J["usage"]["cache_read_input_tokens"] > 0 and J["usage"]["cache_creation_input_tokens"] > 0'
AN '{"model":"cache-c","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"a",'"$CC"'},{"type":"text","text":"b",'"$CC"'},{"type":"text","text":"c",'"$CC"'},{"type":"text","text":"d",'"$CC"'},{"type":"text","text":"e",'"$CC"'}]}]}'
A "anthropic cache: five breakpoints -> 400" 'status == 400 and "A maximum of 4 blocks with cache_control" in J["error"]["message"]'
AN '{"model":"cache-c","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}'
A "anthropic cache: none without breakpoints" 'J["usage"]["cache_creation_input_tokens"] == 0 and J["usage"]["cache_read_input_tokens"] == 0'
OA '{"model":"cache-m","prompt_cache_key":"k1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}]}'
OA '{"model":"cache-m","prompt_cache_key":"k1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"},{"role":"assistant","content":"echo: hello"},{"role":"user","content":"again"}]}'
A "openai cache: prompt_cache_key, the prefix read" 'J["usage"]["prompt_tokens_details"]["cached_tokens"] > 0'
OA '{"model":"cache-m","prompt_cache_key":"k2","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"},{"role":"assistant","content":"echo: hello"},{"role":"user","content":"again"}]}'
A "openai cache: another key, nothing read" 'J["usage"]["prompt_tokens_details"]["cached_tokens"] == 0'
GM gemini-implicit-cache '{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}'
GM gemini-implicit-cache '{"contents":[{"role":"user","parts":[{"text":"hello"}]},{"role":"model","parts":[{"text":"echo: hello"}]},{"role":"user","parts":[{"text":"again"}]}]}'
A "gemini implicit cache: cachedContentTokenCount" 'J["usageMetadata"]["cachedContentTokenCount"] > 0'

# -------------------------------------------------------------- streaming --
LONG="stream me a reasonably long answer please"
OA '{"model":"m","stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "openai stream: text, framing, [DONE], no usage" 'status == 200 and header("content-type").startswith("text/event-stream") and header("transfer-encoding") == "chunked" and oa_text() == "echo: '"$LONG"'" and events()[-1] == (None, "[DONE]") and all(c["object"] == "chat.completion.chunk" and "usage" not in c for c in oa_chunks()) and oa_finish() == ["stop"] and len({c["id"] for c in oa_chunks()}) == 1 and oa_chunks()[0]["choices"][0]["delta"]["role"] == "assistant" and max(len(c["choices"][0]["delta"].get("content") or "") for c in oa_chunks()) <= 8 and raw.endswith(b"data: [DONE]\n\n")'
OA '{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "openai stream: include_usage final chunk" '(lambda ch: ch[-1]["choices"] == [] and ch[-1]["usage"]["completion_tokens"] == len("echo: '"$LONG"'")//4+1 and all(c["usage"] is None for c in ch[:-1]))(oa_chunks())'
OA '{"model":"m","stream":true,'"$TOOLS_OA"',"messages":[{"role":"user","content":"call get_weather({\"city\":\"Paris\"}) call lookup({\"k\":\"a long value to split\"})"}]}' -N
A "openai stream: tool_calls deltas by index" '(lambda cs: [(c["name"], c["args"]) for c in cs] == [("get_weather",{"city":"Paris"}),("lookup",{"k":"a long value to split"})] and all(c["id"].startswith("call_") for c in cs))(oa_calls()) and oa_finish() == ["tool_calls"] and events()[-1][1] == "[DONE]"'
GMS gem-s '{"contents":[{"role":"user","parts":[{"text":"'"$LONG"'"}]}]}' -N
A "gemini sse: text chunks, \\r\\n\\r\\n framing, final finishReason+usage" 'status == 200 and header("content-type") == "text/event-stream" and raw.count(b"\r\n\r\n") == len(events()) and raw.endswith(b"\r\n\r\n") and gm_text() == "echo: '"$LONG"'" and gm_chunks()[-1]["candidates"][0]["finishReason"] == "STOP" and all("finishReason" not in c["candidates"][0] for c in gm_chunks()[:-1]) and gm_chunks()[-1]["usageMetadata"]["candidatesTokenCount"] == len(gm_text())//4+1 and all(c["modelVersion"] == "gem-s" for c in gm_chunks())'
GMS gem-s '{'"$TOOLS_GM"',"contents":[{"role":"user","parts":[{"text":"weather in Lima"}]}]}' -N
A "gemini sse: functionCall in one chunk" 'len(gm_chunks()) == 1 and gm_calls() == [{"name":"get_weather","args":{"city":"Lima"}}] and gm_chunks()[0]["candidates"][0]["finishReason"] == "STOP"'
req "/v1beta/models/gem-s:streamGenerateContent" '{"contents":[{"role":"user","parts":[{"text":"array form"}]}]}' -H "x-goog-api-key: $KEY" -N
A "gemini stream without alt=sse: JSON array" 'isinstance(J, list) and gm_text(J) == "echo: array form" and J[-1]["candidates"][0]["finishReason"] == "STOP"'
AN '{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "anthropic stream: event sequence and text" '(lambda ev: [e for e,_ in ev][:3] == ["message_start","content_block_start","ping"] and [e for e,_ in ev][-4:] == ["content_block_delta","content_block_stop","message_delta","message_stop"] and all(d["type"] == e for e,d in ev) and an_text() == "echo: '"$LONG"'" and ev[-2][1]["delta"]["stop_reason"] == "end_turn" and ev[-2][1]["usage"]["output_tokens"] == len(an_text())//4+1 and ev[0][1]["message"]["content"] == [] and ev[0][1]["message"]["id"].startswith("msg_"))(an_events()) and header("content-type").startswith("text/event-stream")'
AN '{"model":"c","max_tokens":100,"stream":true,'"$TOOLS_AN"',"messages":[{"role":"user","content":"call get_weather({\"city\":\"Paris\"}) call lookup({\"k\":[1,2,3]})"}]}' -N
A "anthropic stream: tool_use blocks with input_json_delta" '[(c["name"], c["input"]) for c in an_calls()] == [("get_weather",{"city":"Paris"}),("lookup",{"k":[1,2,3]})] and all(c["id"].startswith("toolu_") and c["input"] == {} or True for c in an_calls()) and an_events()[-2][1]["delta"]["stop_reason"] == "tool_use"'
AN '{"model":"c","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "anthropic stream: max_tokens" 'an_text() == "echo: st" and an_events()[-2][1]["delta"]["stop_reason"] == "max_tokens"'
OA '{"model":"m","stream":true,"messages":[{"role":"user","content":"http 1.0 client"}]}' -N -0
A "openai stream over HTTP/1.0 (no chunked, close)" 'status == 200 and header("transfer-encoding") is None and oa_text() == "echo: http 1.0 client"'

# ------------------------------------------------ request body variations --
OA '{"model":"m","messages":[{"role":"user","content":"chunked upload"}]}' -H 'Transfer-Encoding: chunked'
A "chunked request body accepted" 'J["choices"][0]["message"]["content"] == "echo: chunked upload"'
"$PY" -c 'import json; print(json.dumps({"model":"m","messages":[{"role":"user","content":"x"*2000000},{"role":"assistant","content":"y"},{"role":"user","content":"big body"}]}))' >"$T/big.json"
: >"$T/b"; : >"$T/h"
curl -s -o "$T/b" -D "$T/h" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' --data-binary @"$T/big.json" "$BASE/v1/chat/completions" >"$T/s"; echo $? >"$T/rc"
A "2 MB request body (Expect: 100-continue) fast" 'status == 200 and J["choices"][0]["message"]["content"] == "echo: big body" and time_total < 0.9'

# ---------------------------------------------------------------- latency --
OA '{"model":"mock-latency-300","messages":[{"role":"user","content":"slow"}]}'
A "model latency-300 delays >= 0.3 s" 'status == 200 and time_total >= 0.3'
get -X POST -d '{"latency_ms": 250}' "$BASE/_config"
A "POST /_config latency_ms" 'J["latency_ms"] == 250'
GM gem '{"contents":[{"parts":[{"text":"slow"}]}]}'
A "/_config latency applies (>= 0.25 s)" 'status == 200 and time_total >= 0.25'
GM gem-latency-0 '{"contents":[{"parts":[{"text":"fast"}]}]}'
A "model latency-0 overrides /_config" 'status == 200 and time_total < 0.2'
get -X POST -d '{"latency_ms": 0}' "$BASE/_config"
AN '{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"fast"}]}'
A "latency back to 0" 'status == 200 and time_total < 0.2'
# concurrency: 10 requests of 500 ms in parallel finish well under 5 s
t0=$(date +%s.%N)
CPIDS=()
for i in $(seq 1 10); do
    curl -s -o /dev/null -H "Authorization: Bearer $KEY" -d '{"model":"m-latency-500","messages":[{"role":"user","content":"p'"$i"'"}]}' "$BASE/v1/chat/completions" &
    CPIDS+=($!)
done
wait "${CPIDS[@]}"
t1=$(date +%s.%N)
if "$PY" -c "import sys; sys.exit(0 if $t1 - $t0 < 2.5 else 1)"; then ok "10 concurrent 500 ms requests run in parallel"; else bad "10 concurrent 500 ms requests run in parallel" "took $("$PY" -c "print($t1 - $t0)") s"; fi

# ----------------------------------------------------------------- faults --
MSG_OA='"messages":[{"role":"user","content":"fault test"}]'
MSG_GM='"contents":[{"role":"user","parts":[{"text":"fault test"}]}]'
MSG_AN='"messages":[{"role":"user","content":"fault test"}]'

OA '{"model":"m-fault-500",'"$MSG_OA"'}'
A "openai fault-500" 'status == 500 and J["error"]["type"] == "server_error"'
GM gem-fault-500 '{'"$MSG_GM"'}'
A "gemini fault-500" 'status == 500 and J["error"]["status"] == "INTERNAL" and J["error"]["code"] == 500'
AN '{"model":"c-fault-500","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-500" 'status == 500 and J["type"] == "error" and J["error"]["type"] == "api_error"'
AN '{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"please [[fault:500]] now"}]}'
A "[[fault:500]] marker in user text" 'status == 500'
OA '{"model":"m","stream":true,"messages":[{"role":"user","content":"[[fault:fault-500]]"}]}'
A "[[fault:fault-500]] on a streaming request -> HTTP 500 JSON" 'status == 500 and J["error"]["type"] == "server_error"'

OA '{"model":"m-fault-429",'"$MSG_OA"'}'
A "openai fault-429 first -> 429 + Retry-After" 'status == 429 and header("retry-after") == "1" and J["error"]["code"] == "rate_limit_exceeded"'
OA '{"model":"m-fault-429",'"$MSG_OA"'}'
A "openai fault-429 retry of same body -> 200" 'status == 200 and J["choices"][0]["message"]["content"] == "echo: fault test"'
OA '{"model":"m-fault-429","messages":[{"role":"user","content":"another conversation"}]}'
A "openai fault-429 new conversation -> 429 again" 'status == 429'
GM gem-fault-429 '{'"$MSG_GM"'}'
A "gemini fault-429 -> RESOURCE_EXHAUSTED + RetryInfo" 'status == 429 and J["error"]["status"] == "RESOURCE_EXHAUSTED" and J["error"]["details"][0]["retryDelay"] == "1s" and header("retry-after") == "1"'
GM gem-fault-429 '{'"$MSG_GM"'}'
A "gemini fault-429 retry -> 200" 'status == 200'
AN '{"model":"c-fault-429","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-429 -> rate_limit_error" 'status == 429 and J["error"]["type"] == "rate_limit_error" and header("retry-after") == "1"'
AN '{"model":"c-fault-429","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-429 retry -> 200" 'status == 200'
AN '{"model":"c-fault-429-always","max_tokens":9,'"$MSG_AN"'}'
AN '{"model":"c-fault-429-always","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-429-always -> 429 on retry too" 'status == 429'
OA '{"model":"m","messages":[{"role":"user","content":"[[fault:429-always]]"}]}'
OA '{"model":"m","messages":[{"role":"user","content":"[[fault:429-always]]"}]}'
A "[[fault:429-always]] marker" 'status == 429'

OA '{"model":"m-fault-overloaded",'"$MSG_OA"'}'
A "openai fault-overloaded -> 503" 'status == 503 and J["error"]["type"] == "server_error"'
GM gem-fault-overloaded '{'"$MSG_GM"'}'
A "gemini fault-overloaded -> 503 UNAVAILABLE" 'status == 503 and J["error"]["status"] == "UNAVAILABLE"'
AN '{"model":"c-fault-overloaded","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-overloaded -> 529 overloaded_error" 'status == 529 and J["error"]["type"] == "overloaded_error"'

OA '{"model":"m-fault-malformed",'"$MSG_OA"'}'
A "openai fault-malformed: 200 application/json, not JSON" 'status == 200 and header("content-type") == "application/json" and J is None and raw == b"{\"choices\": ["'
GM gem-fault-malformed '{'"$MSG_GM"'}'
A "gemini fault-malformed" 'status == 200 and header("content-type").startswith("application/json") and J is None'
AN '{"model":"c-fault-malformed","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-malformed" 'status == 200 and J is None'
AN '{"model":"c-fault-malformed","max_tokens":9,"stream":true,'"$MSG_AN"'}' -N
A "anthropic fault-malformed stream: a non-JSON data line" 'status == 200 and rc == 0 and any(e == "content_block_delta" and not d.endswith("}") for e, d in events())'

for P in OA GM AN; do
    case $P in
        OA) OA '{"model":"m-fault-truncated",'"$MSG_OA"'}' ;;
        GM) GM gem-fault-truncated '{'"$MSG_GM"'}' ;;
        AN) AN '{"model":"c-fault-truncated","max_tokens":9,'"$MSG_AN"'}' ;;
    esac
    A "$P fault-truncated (non-stream): 200, cut JSON, exact Content-Length" 'status == 200 and rc == 0 and J is None and int(header("content-length")) == len(raw) > 0'
done
OA '{"model":"m-fault-truncated","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "openai fault-truncated stream: some chunks, no finish, no [DONE], connection dropped" 'status == 200 and rc == 18 and len(oa_chunks()) >= 2 and oa_finish() == [] and b"[DONE]" not in raw'
GMS gem-fault-truncated '{"contents":[{"role":"user","parts":[{"text":"'"$LONG"'"}]}]}' -N
A "gemini fault-truncated stream: no finishReason" 'status == 200 and rc == 18 and len(gm_chunks()) >= 2 and all("finishReason" not in c["candidates"][0] for c in gm_chunks())'
AN '{"model":"c-fault-truncated","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "anthropic fault-truncated stream: no message_delta/message_stop" 'status == 200 and rc == 18 and "message_start" in [e for e,_ in an_events()] and not {"message_delta","message_stop"} & {e for e,_ in an_events()}'

AN '{"model":"c-fault-stream-error","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "anthropic fault-stream-error: event: error mid-stream" 'status == 200 and rc == 0 and an_events()[-1][0] == "error" and an_events()[-1][1]["error"]["type"] == "overloaded_error"'
OA '{"model":"m-fault-stream-error","stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "openai fault-stream-error: data: {error} mid-stream" 'status == 200 and "error" in json.loads(events()[-1][1])'

OA '{"model":"m-fault-oversized",'"$MSG_OA"'}'
A "openai fault-oversized: ~20 MB valid JSON" 'status == 200 and len(raw) > 19_000_000 and len(J["choices"][0]["message"]["content"]) >= 20_000_000'
GM gem-fault-oversized '{'"$MSG_GM"'}'
A "gemini fault-oversized" 'status == 200 and len(raw) > 19_000_000 and J["candidates"][0]["finishReason"] == "STOP"'
AN '{"model":"c-fault-oversized","max_tokens":9,"stream":true,'"$MSG_AN"'}' -N
A "anthropic fault-oversized stream" 'status == 200 and len(an_text()) >= 20_000_000'

OA '{"model":"m-fault-badutf8",'"$MSG_OA"'}'
A "openai fault-badutf8: raw \\xff\\xfe in JSON" 'status == 200 and b"\xff\xfe" in raw and int(header("content-length")) == len(raw) and J is None'
GM gem-fault-badutf8 '{'"$MSG_GM"'}'
A "gemini fault-badutf8" 'status == 200 and b"\xff\xfe" in raw'
AN '{"model":"c-fault-badutf8","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-badutf8" 'status == 200 and b"\xff\xfe" in raw'

# model output the extension must survive: bare numbers Python cannot write,
# huge token counts, empty finish reasons and error types, a redirect
TOOLS_F_OA='"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]'
OA '{"model":"m",'"$TOOLS_F_OA"',"messages":[{"role":"user","content":"call f({\"x\": \"@@raw:1e-20000@@\", \"n\": 123456789012345678901234567890})"}]}'
A "openai @@raw@@: a bare 1e-20000 and a big integer in arguments" 'status == 200 and J["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{\"x\":1e-20000,\"n\":123456789012345678901234567890}"'
OA '{"model":"m","stream":true,'"$TOOLS_F_OA"',"messages":[{"role":"user","content":"call f({\"x\": \"@@raw:1e999@@\"})"}]}' -N
A "openai @@raw@@ streamed" 'status == 200 and "".join(json.loads(d)["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for e, d in events() if d != "[DONE]" and json.loads(d)["choices"] and "tool_calls" in json.loads(d)["choices"][0]["delta"]) == "{\"x\":1e999}"'
GM gem '{"tools":[{"functionDeclarations":[{"name":"f"}]}],"contents":[{"role":"user","parts":[{"text":"call f({\"x\": \"@@raw:1e999@@\"})"}]}]}'
A "gemini @@raw@@: a bare 1e999 in args" 'status == 200 and b"\"x\": 1e999" in raw'
AN '{"model":"c","max_tokens":9,"stream":true,"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"call f({\"x\": \"@@raw:1e-20000@@\"})"}]}' -N
A "anthropic @@raw@@ streamed" 'status == 200 and "".join(d["delta"].get("partial_json", "") for e, d in an_events() if e == "content_block_delta") == "{\"x\": 1e-20000}"'
AN '{"model":"c-fault-huge-usage","max_tokens":9,'"$MSG_AN"'}'
A "anthropic fault-huge-usage" 'status == 200 and J["usage"]["input_tokens"] == 9223372036854775807 and J["usage"]["output_tokens"] == 99999999999999999999999'
GMS gem-fault-empty-finish '{'"$MSG_GM"'}' -N
A "gemini fault-empty-finish streamed: finishReason \"\", no parts" 'status == 200 and json.loads(events()[-1][1])["candidates"][0]["finishReason"] == "" and json.loads(events()[-1][1])["candidates"][0]["content"]["parts"] == []'
AN '{"model":"c-fault-stream-error-empty","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N
A "anthropic fault-stream-error-empty: error with an empty type" 'status == 200 and an_events()[-1][0] == "error" and an_events()[-1][1]["error"] == {"type": "", "message": ""}'
OA '{"model":"m-fault-redirect",'"$MSG_OA"'}'
A "openai fault-redirect: 302 with a Location" 'status == 302 and header("location").startswith("http://127.0.0.1:9/moved/") and raw == b""'
GMS gem-fault-badutf8 '{'"$MSG_GM"'}' -N
A "gemini fault-badutf8 stream" 'status == 200 and b"\xff\xfe" in raw and rc == 0'

# hang: the client times out, the server keeps serving others meanwhile
: >"$T/b"
curl -s -o "$T/hang.out" -m 2 -w '%{http_code} %{time_total}' -H "Authorization: Bearer $KEY" \
    -d '{"model":"m-fault-hang","messages":[{"role":"user","content":"hang"}]}' "$BASE/v1/chat/completions" >"$T/hang.s" &
HANG_CURL=$!
sleep 0.3
get "$BASE/_health"
A "server answers while another request hangs" 'status == 200 and time_total < 0.5'
wait $HANG_CURL
HRC=$?
if [ "$HRC" = 28 ] && [ ! -s "$T/hang.out" ]; then ok "fault-hang: curl -m 2 times out (rc 28), nothing received"; else bad "fault-hang: curl -m 2 times out" "rc=$HRC out=$(head -c 200 "$T/hang.out")"; fi
curl -s -o "$T/hang.out" -m 2 -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' \
    -d '{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"[[fault:hang]]"}]}' "$BASE/v1/messages"
HRC=$?
if [ "$HRC" = 28 ]; then ok "[[fault:hang]] marker times out"; else bad "[[fault:hang]] marker times out" "rc=$HRC"; fi
AN '{"model":"c-fault-stall","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"'"$LONG"'"}]}' -N -m 2
A "anthropic fault-stall: events then silence (curl -m 2 -> 28)" 'rc == 28 and an_events()[0][0] == "message_start" and "message_stop" not in [e for e,_ in an_events()]'

# --------------------------------------------------------------- keep-alive --
CFG="$T/curl.cfg"
: >"$CFG"
printf '%s' '{"model":"bench","messages":[{"role":"user","content":"keep alive"}]}' >"$T/ka_oa.json"
for i in $(seq 1 200); do
    cat >>"$CFG" <<EOF
url = "$BASE/v1/chat/completions"
header = "Authorization: Bearer $KEY"
header = "Content-Type: application/json"
data-binary = "@$T/ka_oa.json"
output = "/dev/null"
silent
write-out = "%{http_code} %{num_connects}\\n"
EOF
    [ "$i" -lt 200 ] && echo "next" >>"$CFG"
done
curl -K "$CFG" >"$T/ka.out" 2>"$T/ka.err"
KA_RC=$?
read -r KA_N KA_OK KA_CONN < <(awk '{n++; if ($1 == 200) ok++; c += $2} END {print n, ok, c}' "$T/ka.out")
if [ "$KA_RC" = 0 ] && [ "$KA_N" = 200 ] && [ "$KA_OK" = 200 ] && [ "$KA_CONN" = 1 ]; then
    ok "keep-alive: 200 non-streaming requests in one curl, num_connects sums to 1"
else
    bad "keep-alive: 200 non-streaming requests in one curl" "rc=$KA_RC n=$KA_N ok=$KA_OK connects=$KA_CONN"
fi

: >"$CFG"
printf '%s' '{"model":"bench","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"keep alive stream"}]}' >"$T/ka_an.json"
printf '%s' '{"contents":[{"role":"user","parts":[{"text":"keep alive gemini"}]}]}' >"$T/ka_gm.json"
printf '%s' '{"model":"bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"keep alive"}]}' >"$T/ka_oas.json"
for i in $(seq 1 60); do
    case $((i % 4)) in
        0) printf 'url = "%s"\nheader = "x-api-key: %s"\nheader = "anthropic-version: 2023-06-01"\ndata-binary = "@%s"\n' "$BASE/v1/messages" "$KEY" "$T/ka_an.json" ;;
        1) printf 'url = "%s"\nheader = "x-goog-api-key: %s"\ndata-binary = "@%s"\n' "$BASE/v1beta/models/g:streamGenerateContent?alt=sse" "$KEY" "$T/ka_gm.json" ;;
        2) printf 'url = "%s"\nheader = "x-goog-api-key: %s"\ndata-binary = "@%s"\n' "$BASE/v1beta/models/g:generateContent" "$KEY" "$T/ka_gm.json" ;;
        3) printf 'url = "%s"\nheader = "Authorization: Bearer %s"\ndata-binary = "@%s"\n' "$BASE/v1/chat/completions" "$KEY" "$T/ka_oas.json" ;;
    esac >>"$CFG"
    printf 'header = "Content-Type: application/json"\noutput = "/dev/null"\nsilent\nwrite-out = "%%{http_code} %%{num_connects}\\n"\n' >>"$CFG"
    [ "$i" -lt 60 ] && echo "next" >>"$CFG"
done
curl -K "$CFG" >"$T/ka2.out" 2>"$T/ka2.err"
KA_RC=$?
read -r KA_N KA_OK KA_CONN < <(awk '{n++; if ($1 == 200) ok++; c += $2} END {print n, ok, c}' "$T/ka2.out")
if [ "$KA_RC" = 0 ] && [ "$KA_N" = 60 ] && [ "$KA_OK" = 60 ] && [ "$KA_CONN" = 1 ]; then
    ok "keep-alive: 60 mixed streaming/non-streaming requests, 3 providers, one connection"
else
    bad "keep-alive: mixed streaming requests on one connection" "rc=$KA_RC n=$KA_N ok=$KA_OK connects=$KA_CONN"
fi

# ------------------------------------------------------------ stats, reset --
get "$BASE/_stats"
A "/_stats counts per route/status/fault" 'J["routes"]["openai.chat_completions"] > 200 and J["routes"]["gemini.generateContent"] > 10 and J["routes"]["gemini.streamGenerateContent"] > 10 and J["routes"]["anthropic.messages"] > 10 and J["status"]["401"] >= 6 and J["faults"]["429"] >= 3 and J["in_flight"] >= 0'
get "$BASE/_requests"
A "/_requests lists recent requests" 'isinstance(J, list) and 0 < len(J) <= 100'
get -X POST "$BASE/_reset"
get "$BASE/_stats"
A "/_reset clears counters" 'J["total"] == 0 and J["faults"] == {}'
OA '{"model":"m-fault-429",'"$MSG_OA"'}'
A "/_reset forgets 429 conversations" 'status == 429'

# -------------------------------------------- second server: CLI variants --
export MS_SELFTEST_KEY="$KEY-2"
start_server "$T/port2" "$T/server2.log" --latency-ms 200 --require-key-env MS_SELFTEST_KEY --gemini-real-auth-codes
PORT2=$(tr -d '[:space:]' <"$T/port2" 2>/dev/null)
BASE_SAVE=$BASE
BASE="http://127.0.0.1:$PORT2"
req /v1beta/models/gem:generateContent '{"contents":[{"parts":[{"text":"hi"}]}]}' -H "x-goog-api-key: $KEY-2"
A "--latency-ms 200 and --require-key-env" 'status == 200 and time_total >= 0.2'
req /v1beta/models/gem:generateContent '{"contents":[{"parts":[{"text":"hi"}]}]}'
A "--gemini-real-auth-codes: missing key -> 403 PERMISSION_DENIED" 'status == 403 and J["error"]["status"] == "PERMISSION_DENIED"'
req /v1beta/models/gem:generateContent '{"contents":[{"parts":[{"text":"hi"}]}]}' -H "x-goog-api-key: $KEY"
A "--gemini-real-auth-codes: wrong key -> 400 API_KEY_INVALID" 'status == 400 and J["error"]["status"] == "INVALID_ARGUMENT" and J["error"]["details"][0]["reason"] == "API_KEY_INVALID"'
BASE=$BASE_SAVE
# SIGTERM stops it
kill -TERM "${PIDS[1]}" 2>/dev/null
for _ in $(seq 1 40); do kill -0 "${PIDS[1]}" 2>/dev/null || break; sleep 0.05; done
if kill -0 "${PIDS[1]}" 2>/dev/null; then bad "SIGTERM stops the server"; else ok "SIGTERM stops the server"; fi

# ------------------------------------------------------------ echo-key --
OA '{"model":"m",'"$TOOLS_OA"',"messages":[{"role":"user","content":"say [[echo-key]]"}]}'
A "openai: [[echo-key]] puts the key in the text" 'J["choices"][0]["message"]["content"] == "echo: say " + open(T + "/key").read()'
AN '{"model":"c","max_tokens":100,'"$TOOLS_AN"',"messages":[{"role":"user","content":"call lookup({\"[[echo-key]]\": \"[[echo-key]]\"})"}]}'
A "anthropic: [[echo-key]] in call args and names" '(lambda k: J["content"][0]["input"] == {k: k})(open(T + "/key").read())'
GM gem '{"contents":[{"role":"user","parts":[{"text":"[[fault:key-error]]"}]}]}'
A "gemini: fault key-error quotes the key" 'status == 401 and open(T + "/key").read() in J["error"]["message"]'
get "$BASE/_last"
A "/_last keeps the marker, not the key" 'open(T + "/key").read() not in text'

# ------------------------------------------------------------- no secrets --
sleep 0.2
if grep -rqF -- "$KEY" "$T/server.log" "$T/server2.log" "$T/server.stdout" "$T/server.stderr"; then
    bad "API keys never appear in logs / stdout / stderr" "$(grep -rF -- "$KEY" "$T"/server* | head -3)"
else
    ok "API keys never appear in logs / stdout / stderr"
fi
if grep -q 'key=<redacted' "$T/server.log" && [ "$(grep -c ' POST ' "$T/server.log")" -gt 250 ]; then
    ok "log has one line per request, ?key= redacted"
else
    bad "log has one line per request, ?key= redacted" "$(tail -3 "$T/server.log")"
fi
if grep -qiE 'authorization|x-api-key|x-goog-api-key' "$T/server.log"; then bad "log holds no header names/values"; else ok "log holds no header names/values"; fi
get "$BASE/_requests"
A "/_requests hold no key" 'open(T + "/key").read() not in text'

echo "model_server selftest: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
