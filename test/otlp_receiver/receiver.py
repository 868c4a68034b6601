#!/usr/bin/env python3
"""A small OTLP/HTTP JSON trace receiver for adk_runner's tests (stdlib only).

    python3 test/otlp_receiver/receiver.py --port 0 --port-file F --store S \
        [--require-header 'Authorization: Bearer T'] [--fail-file X]

POST /v1/traces takes an ExportTraceServiceRequest in the OTLP JSON encoding
and checks its shape the way a collector would: resourceSpans[] with a
resource (attributes incl. service.name) and scopeSpans[] with a scope and
spans[]; each span with a 32-hex traceId, 16-hex spanId, an optional 16-hex
parentSpanId, a name, kind 0-5, start/end times as decimal strings of
nanoseconds (end >= start), attributes as [{key, value: AnyValue}] (intValue
as a decimal string), events with timeUnixNano, and status.code 0-2.  A
request that breaks a rule gets 400 and is not stored; one without the
required header gets 401; while the fail file exists every request gets 503.
Accepted spans are appended to the store (one JSON object per line), so the
record survives a restart of the receiver.  Keys of the spans' attributes
are kept as sent.

GET /_stats -> {"requests", "accepted", "rejected", "spans", "errors": [...]}
for this process's lifetime.  Listens on 127.0.0.1 only; stops on SIGTERM.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
NANOS = re.compile(r"^[0-9]{1,20}$")
INT64 = re.compile(r"^-?[0-9]{1,19}$")
VALUE_KEYS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"}

lock = threading.Lock()
stats = {"requests": 0, "accepted": 0, "rejected": 0, "spans": 0, "errors": []}


def check_value(v, where):
    if not isinstance(v, dict) or len(v) != 1 or next(iter(v)) not in VALUE_KEYS:
        raise ValueError("%s: an AnyValue has exactly one of %s" % (where, sorted(VALUE_KEYS)))
    k, x = next(iter(v.items()))
    if k == "stringValue" and not isinstance(x, str):
        raise ValueError("%s: stringValue must be a string" % where)
    if k == "boolValue" and not isinstance(x, bool):
        raise ValueError("%s: boolValue must be a boolean" % where)
    if k == "intValue" and not (isinstance(x, str) and INT64.match(x)):
        raise ValueError("%s: intValue must be a decimal string (int64 in JSON)" % where)
    if k == "doubleValue" and (isinstance(x, bool) or not isinstance(x, (int, float))):
        raise ValueError("%s: doubleValue must be a number" % where)
    if k == "arrayValue":
        if not isinstance(x, dict) or not isinstance(x.get("values", []), list):
            raise ValueError("%s: arrayValue is {values: [...]}" % where)
        for i, e in enumerate(x.get("values", [])):
            check_value(e, "%s[%d]" % (where, i))


def check_attributes(attrs, where):
    if not isinstance(attrs, list):
        raise ValueError("%s: attributes must be a list" % where)
    seen = set()
    for a in attrs:
        if not isinstance(a, dict) or not isinstance(a.get("key"), str) or not a["key"]:
            raise ValueError("%s: an attribute is {key, value}" % where)
        if a["key"] in seen:
            raise ValueError("%s: attribute %r twice" % (where, a["key"]))
        seen.add(a["key"])
        check_value(a.get("value"), "%s.%s" % (where, a["key"]))
    return {a["key"] for a in attrs}


def check_request(body):
    spans = []
    rs_list = body.get("resourceSpans") if isinstance(body, dict) else None
    if not isinstance(rs_list, list) or not rs_list:
        raise ValueError("resourceSpans must be a non-empty list")
    for rs in rs_list:
        res = rs.get("resource")
        if not isinstance(res, dict) or "service.name" not in check_attributes(res.get("attributes"), "resource"):
            raise ValueError("resource.attributes must have service.name")
        ss_list = rs.get("scopeSpans")
        if not isinstance(ss_list, list) or not ss_list:
            raise ValueError("scopeSpans must be a non-empty list")
        for ss in ss_list:
            if not isinstance(ss.get("scope"), dict) or not ss["scope"].get("name"):
                raise ValueError("scopeSpans[].scope.name missing")
            if not isinstance(ss.get("spans"), list):
                raise ValueError("scopeSpans[].spans must be a list")
            for s in ss["spans"]:
                w = "span %s" % s.get("spanId")
                if not HEX32.match(str(s.get("traceId", ""))) or set(s["traceId"]) == {"0"}:
                    raise ValueError("%s: traceId must be 32 lower-case hex digits, not all zero" % w)
                if not HEX16.match(str(s.get("spanId", ""))) or set(s["spanId"]) == {"0"}:
                    raise ValueError("%s: spanId must be 16 lower-case hex digits, not all zero" % w)
                if "parentSpanId" in s and not HEX16.match(str(s["parentSpanId"])):
                    raise ValueError("%s: parentSpanId must be 16 lower-case hex digits" % w)
                if not isinstance(s.get("name"), str) or not s["name"]:
                    raise ValueError("%s: name missing" % w)
                if not isinstance(s.get("kind"), int) or isinstance(s.get("kind"), bool) or not 0 <= s["kind"] <= 5:
                    raise ValueError("%s: kind must be an integer enum 0-5" % w)
                for t in ("startTimeUnixNano", "endTimeUnixNano"):
                    if not isinstance(s.get(t), str) or not NANOS.match(s[t]):
                        raise ValueError("%s: %s must be a decimal string" % (w, t))
                if int(s["endTimeUnixNano"]) < int(s["startTimeUnixNano"]):
                    raise ValueError("%s: ends before it starts" % w)
                check_attributes(s.get("attributes", []), w)
                for e in s.get("events", []):
                    if not isinstance(e.get("name"), str) or not NANOS.match(str(e.get("timeUnixNano", ""))):
                        raise ValueError("%s: an event has a name and timeUnixNano" % w)
                    check_attributes(e.get("attributes", []), w + " event")
                st = s.get("status", {})
                if not isinstance(st, dict) or not isinstance(st.get("code", 0), int) or not 0 <= st.get("code", 0) <= 2:
                    raise ValueError("%s: status.code must be 0, 1 or 2" % w)
                spans.append(s)
    return spans


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_stats":
            with lock:
                self.reply(200, stats)
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        with lock:
            stats["requests"] += 1
        if self.path != "/v1/traces":
            return self.reply(404, {"error": "not found"})
        if ARGS.fail_file and os.path.exists(ARGS.fail_file):
            return self.reply(503, {"error": "unavailable"})
        if ARGS.require_header:
            name, _, value = ARGS.require_header.partition(":")
            if self.headers.get(name.strip()) != value.strip():
                return self.reply(401, {"error": "unauthorized"})
        try:
            if not self.headers.get("Content-Type", "").startswith("application/json"):
                raise ValueError("Content-Type must be application/json")
            spans = check_request(json.loads(raw))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            with lock:
                stats["rejected"] += 1
                stats["errors"].append(str(e))
            return self.reply(400, {"error": str(e)})
        with lock:
            with open(ARGS.store, "a") as f:
                for s in spans:
                    f.write(json.dumps(s) + "\n")
            stats["accepted"] += 1
            stats["spans"] += len(spans)
        self.reply(200, {"partialSuccess": {}})


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--store", required=True)
    p.add_argument("--require-header")
    p.add_argument("--fail-file")
    ARGS = p.parse_args()
    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(srv.server_address[1]))
        os.rename(tmp, ARGS.port_file)
    srv.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
