#!/usr/bin/env python3
"""Local mock LLM server for the adk_runner tests, demo and benchmarks.

Impersonates, over plain HTTP on 127.0.0.1, the wire formats of

  * OpenAI Chat Completions   POST .../chat/completions            (JSON or SSE)
  * Gemini generateContent    POST .../models/{model}:generateContent
                              POST .../models/{model}:streamGenerateContent[?alt=sse]
  * Anthropic Messages        POST .../v1/messages                 (JSON or SSE)

Answers are scripted (see README.md next to this file): tool results are
summarised, `call name({...})` directives become function calls, "weather" and
"transfer to X" trigger get_weather / transfer_to_agent, everything else is
echoed.  Faults (500, 429, hang, malformed JSON, truncated streams, oversized
bodies, invalid UTF-8, ...) are chosen by tokens in the model name or by a
`[[fault:NAME]]` marker in the last user text.

Python 3 standard library only.  API keys are never written to the log, to
stdout/stderr, or to /_last (they are replaced by "<redacted len=N>").
"""

import argparse
import collections
import datetime
import hashlib
import hmac
import json
import math
import os
import random
import re
import signal
import socket
import string
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "1.0"

# Headers whose values are credentials: never logged, redacted in /_last.
SECRET_HEADERS = {
    "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key",
    "api-key", "cookie", "set-cookie",
}
SECRET_QUERY_PARAMS = {"key", "api_key", "apikey", "access_token"}

TEXT_CHUNK = 8                 # characters of text per streamed event
ARGS_CHUNK = 8                 # characters of tool-call JSON per streamed fragment
OVERSIZED_CHARS = 20 * 1024 * 1024
OVERSIZED_STREAM_CHUNK = 64 * 1024
HANG_SECONDS = 300
BADUTF8_MARK = "@@BADUTF8@@"

# Fault names, longest first so that "429-always" wins over "429".
FAULTS = ["stream-error-empty", "stream-error", "huge-usage", "empty-finish", "redirect", "429-always",
          "reset-once", "hang-once", "overloaded", "malformed", "truncated", "oversized", "badutf8",
          "key-error", "reset", "stall", "hang", "429", "500", "400"]
# In the last user text: replaced by the request's API key in the answer
# (text and call arguments, names included), as a provider that echoes
# the key would do.  /_last and /_requests keep the marker, not the key.
ECHO_KEY_MARK = "[[echo-key]]"
FAULT_MODEL_RE = re.compile(r"fault-(" + "|".join(re.escape(f) for f in FAULTS) + r")(?![0-9a-z])")
FAULT_TEXT_RE = re.compile(r"\[\[fault:(?:fault-)?(" + "|".join(re.escape(f) for f in FAULTS) + r")\]\]", re.I)
LATENCY_RE = re.compile(r"(?<![a-z0-9])latency-(\d+)", re.I)
STREAM_DELAY_RE = re.compile(r"stream-delay-(\d+)", re.I)

DIRECTIVE_RE = re.compile(r"\bcall(?:(!)\s*|\s+)([A-Za-z_][A-Za-z0-9_.:\-]*)\s*\(")
TRANSFER_RE = re.compile(r"\btransfer\s+to\s+([A-Za-z0-9_.\-]+)", re.I)
IN_WORD_RE = re.compile(r"\bin\s+(\S+)", re.I)

ALNUM = string.ascii_letters + string.digits


def rand_str(n, alphabet=ALNUM):
    return "".join(random.choice(alphabet) for _ in range(n))


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# A string "@@raw:TEXT@@" in call arguments is sent as the bare number TEXT:
# Python's json cannot write 1e999 or 1e-20000 (they are not doubles).
RAW_NUM_RE = re.compile(r'"@@raw:([0-9eE+.\-]+)@@"')
RAW_NUM_BYTES_RE = re.compile(rb'\\?"@@raw:([0-9eE+.\-]+)@@\\?"')
REDIRECT_LOCATION = "http://127.0.0.1:9/moved/v1/chat?key=secret-in-location#frag"
HUGE_TOKENS = (9223372036854775807, 99999999999999999999999)


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def args_text(args, **kw):
    """Call arguments as JSON text, "@@raw:...@@" strings as bare numbers."""
    if kw:
        return RAW_NUM_RE.sub(r"\1", json.dumps(args, **kw))
    return RAW_NUM_RE.sub(r"\1", compact(args))


def chunks(text, n):
    if text == "":
        return [""]
    return [text[i:i + n] for i in range(0, len(text), n)]


def redact_query(path):
    """Replace the value of ?key=... (and similar) by <redacted len=N>."""
    if "?" not in path:
        return path
    base, _, query = path.partition("?")
    out = []
    for item in query.split("&"):
        name, eq, value = item.partition("=")
        if eq and urllib.parse.unquote_plus(name).lower() in SECRET_QUERY_PARAMS:
            out.append("%s=<redacted len=%d>" % (name, len(urllib.parse.unquote_plus(value))))
        else:
            out.append(item)
    return base + "?" + "&".join(out)


_QUERY_KEY_RE = re.compile(r"([?&](?:key|api_key|apikey|access_token)=)[^&\s\"']*", re.I)


# --------------------------------------------------------------------------
# shared state
# --------------------------------------------------------------------------

class State:
    def __init__(self, default_latency_ms, log_path, require_key, gemini_real_auth):
        self.lock = threading.Lock()
        self.default_latency_ms = default_latency_ms
        self.latency_ms = default_latency_ms
        self.require_key = require_key
        self.gemini_real_auth = gemini_real_auth
        self.log_lock = threading.Lock()
        self.log_fh = open(log_path, "a", buffering=1, encoding="utf-8") if log_path else None
        self.secrets = set()          # key values seen, scrubbed from every log line
        if require_key:
            self.secrets.add(require_key)
        self.reset()

    def reset(self):
        with self.lock:
            self.latency_ms = self.default_latency_ms
            self.routes = collections.Counter()
            self.statuses = collections.Counter()
            self.models = collections.Counter()
            self.faults = collections.Counter()
            self.total = 0
            self.streams = 0
            self.in_flight = 0
            self.last = None
            self.recent = collections.deque(maxlen=100)
            self.seen_429 = set()
            self.prompt_cache = set()   # hashes of the prompt prefixes cached (prompt_cache())
            self.started = time.time()

    def remember_secret(self, value):
        if value and len(value) >= 1:
            with self.lock:
                if len(self.secrets) < 10000:
                    self.secrets.add(value)

    def scrub(self, line):
        line = _QUERY_KEY_RE.sub(lambda m: m.group(1) + "<redacted>", line)
        with self.lock:
            secrets = list(self.secrets)
        for s in secrets:
            if len(s) >= 4 and s in line:
                line = line.replace(s, "<redacted>")
        return line

    def log(self, line):
        line = self.scrub(line.replace("\n", "\\n"))
        with self.log_lock:
            fh = self.log_fh or sys.stderr
            try:
                fh.write(line + "\n")
                fh.flush()
            except Exception:
                pass


STATE = None  # set in main()
BODY_LOG = None  # set in main(): --body-log


# --------------------------------------------------------------------------
# neutral conversation model
# --------------------------------------------------------------------------

class BadRequest(Exception):
    def __init__(self, message, param=None, code=None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


class Conv:
    """A provider request converted into a neutral list of messages."""

    def __init__(self, provider, model):
        self.provider = provider
        self.model = model or ""
        self.system = ""
        self.messages = []          # {"role": user|model|tool, "texts": [], "calls": [], "results": []}
        self.tools = []             # declared function names
        self.tools_disabled = False
        self.max_tokens = None
        self.stream = False
        self.include_usage = False
        self.gemini_ids = False     # request carried functionCall ids
        self.prompt_chars = 0
        self.cache = None           # (prompt tokens, read, written) when cached (prompt_cache())
        self.response_schema = None  # OpenAI response_format's, Gemini's responseSchema
        self.thinking = None        # thinking asked for: {"budget"|"level", "include"} (see thinking_*)
        self.reasoning = None       # OpenAI reasoning_effort

    def add(self, role, texts=None, calls=None, results=None):
        m = {"role": role, "texts": list(texts or []), "calls": list(calls or []),
             "results": list(results or [])}
        self.messages.append(m)
        return m

    def count_chars(self):
        n = len(self.system)
        for m in self.messages:
            for t in m["texts"]:
                n += len(t)
            for c in m["calls"]:
                n += len(c.get("name") or "") + len(compact(c.get("args")))
            for r in m["results"]:
                n += len(compact(r.get("response")))
        self.prompt_chars = n

    def last_user_text(self):
        for m in reversed(self.messages):
            if m["role"] == "user" and m["texts"]:
                return "\n".join(m["texts"])
        return ""

    def summary(self):
        return {"provider": self.provider, "model": self.model, "system": self.system,
                "tools": self.tools, "tools_disabled": self.tools_disabled,
                "max_tokens": self.max_tokens, "stream": self.stream,
                "messages": self.messages}


def _maybe_json(value):
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[", '"') or s in ("true", "false", "null") or re.match(r"^-?\d", s or "x"):
            try:
                return json.loads(s)
            except ValueError:
                return value
    return value


def _as_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return None


def _get(d, *names, default=None):
    """First present key among names (camelCase / snake_case aliases)."""
    if not isinstance(d, dict):
        return default
    for n in names:
        if n in d:
            return d[n]
    return default


def _text_of(content):
    """OpenAI/Anthropic content: a string or a list of parts; returns list of texts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for p in content:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text") \
                    and isinstance(p.get("text"), str):
                out.append(p["text"])
    return out


# ---- OpenAI --------------------------------------------------------------

def parse_openai(body):
    if not isinstance(body, dict):
        raise BadRequest("Invalid type for request body: expected an object.")
    model = body.get("model")
    if not model or not isinstance(model, str):
        raise BadRequest("you must provide a model parameter")
    msgs = body.get("messages")
    if msgs is None:
        raise BadRequest("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    if not isinstance(msgs, list):
        raise BadRequest("Invalid type for 'messages': expected an array of objects.", "messages", "invalid_type")
    if not msgs:
        raise BadRequest("Invalid 'messages': empty array. Expected an array with minimum length 1, "
                         "but got an empty array instead.", "messages", "empty_array")
    conv = Conv("openai", model)
    names_by_id = {}
    system = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or "role" not in m:
            raise BadRequest("Missing required parameter: 'messages[%d].role'." % i,
                             "messages[%d].role" % i, "missing_required_parameter")
        role = m.get("role")
        if role in ("system", "developer"):
            system.extend(_text_of(m.get("content")))
        elif role == "user":
            conv.add("user", _text_of(m.get("content")))
        elif role == "assistant":
            calls = []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                args = fn.get("arguments")
                parsed = _maybe_json(args) if isinstance(args, str) else args
                calls.append({"id": tc.get("id"), "name": fn.get("name"), "args": parsed})
                if tc.get("id"):
                    names_by_id[tc["id"]] = fn.get("name")
            fc = m.get("function_call")
            if isinstance(fc, dict):
                calls.append({"id": None, "name": fc.get("name"), "args": _maybe_json(fc.get("arguments"))})
            conv.add("model", _text_of(m.get("content")), calls)
        elif role in ("tool", "function"):
            tid = m.get("tool_call_id")
            name = m.get("name") or names_by_id.get(tid) or "unknown"
            content = m.get("content")
            resp = _maybe_json("".join(_text_of(content))) if not isinstance(content, str) else _maybe_json(content)
            res = {"id": tid, "name": name, "response": resp}
            if conv.messages and conv.messages[-1]["role"] == "tool":
                conv.messages[-1]["results"].append(res)   # parallel results
            else:
                conv.add("tool", results=[res])
        else:
            raise BadRequest("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', "
                             "'function', 'tool', and 'developer'." % role,
                             "messages[%d].role" % i, "invalid_value")
    conv.system = "\n".join(system)
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if fn.get("name"):
                conv.tools.append(fn["name"])
    for f in body.get("functions") or []:
        if isinstance(f, dict) and f.get("name"):
            conv.tools.append(f["name"])
    tc = body.get("tool_choice", body.get("function_call"))
    if tc == "none":
        conv.tools_disabled = True
    mt = body.get("max_completion_tokens")
    if mt is None:
        mt = body.get("max_tokens")
    if mt is not None:
        conv.max_tokens = _as_int(mt)
        if conv.max_tokens is None or conv.max_tokens < 1:
            raise BadRequest("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1.",
                             "max_tokens", "integer_below_min_value")
    re_ = body.get("reasoning_effort")
    if re_ is not None:
        if re_ not in ("minimal", "low", "medium", "high"):
            raise BadRequest("Invalid value: '%s'. Supported values are: 'minimal', 'low', 'medium', and 'high'."
                             % re_, "reasoning_effort", "invalid_value")
        conv.reasoning = re_
    conv.stream = body.get("stream") is True
    so = body.get("stream_options")
    conv.include_usage = bool(conv.stream and isinstance(so, dict) and so.get("include_usage") is True)
    conv.response_schema = openai_response_format(body.get("response_format"))
    conv.count_chars()
    return conv


NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def openai_response_format(rf):
    """The schema of a json_schema response_format, checked as OpenAI does."""
    if rf is None:
        return None
    if not isinstance(rf, dict) or rf.get("type") not in ("text", "json_object", "json_schema"):
        raise BadRequest("Invalid value for 'response_format.type'.", "response_format.type", "invalid_value")
    if rf["type"] != "json_schema":
        return None
    js = rf.get("json_schema")
    if not isinstance(js, dict) or not isinstance(js.get("name"), str) or not NAME_RE.match(js["name"]):
        raise BadRequest("Invalid 'response_format.json_schema.name': string does not match pattern. "
                         "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                         "response_format.json_schema.name", "invalid_value")
    schema = js.get("schema")
    if not isinstance(schema, dict):
        raise BadRequest("Missing required parameter: 'response_format.json_schema.schema'.",
                         "response_format.json_schema.schema", "missing_required_parameter")
    if js.get("strict") is True:
        problem = strict_problem(schema, [])
        if problem:
            raise BadRequest("Invalid schema for response_format '%s': %s" % (js["name"], problem),
                             "response_format", "invalid_json_schema")
    return schema


def strict_problem(schema, path):
    """What OpenAI's strict mode refuses in a schema: objects without
    additionalProperties false, or with a property not required."""
    if not isinstance(schema, dict):
        return None
    where = "(%s)" % ", ".join("'%s'" % p for p in path)
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return "In context=%s, 'additionalProperties' is required to be supplied and to be false." % where
        props = schema.get("properties") or {}
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return ("In context=%s, 'required' is required to be supplied and to be an array including "
                    "every key in properties. Missing '%s'." % (where, missing[0]))
        for k, v in props.items():
            p = strict_problem(v, path + ["properties", k])
            if p:
                return p
    if isinstance(schema.get("items"), dict):
        return strict_problem(schema["items"], path + ["items"])
    return None


def schema_sample(schema, text):
    """A value of a response schema: the echo, answered in the shape asked for."""
    if not isinstance(schema, dict):
        return text
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "")
    t = str(t or "").lower()
    if t == "object":
        return {k: schema_sample(v, text) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return [schema_sample(schema.get("items"), text)]
    if t == "integer":
        return 1
    if t == "number":
        return 1.5
    if t == "boolean":
        return True
    return text


# ---- Gemini --------------------------------------------------------------

def parse_gemini(body, model):
    if not isinstance(body, dict):
        raise BadRequest("Invalid JSON payload received. Expected an object.")
    contents = body.get("contents")
    if not contents:
        raise BadRequest("* GenerateContentRequest.contents: contents is not specified\n")
    if not isinstance(contents, list):
        raise BadRequest('Invalid JSON payload received. Unknown name "contents": Proto field is not repeating, '
                         'cannot start list.')
    conv = Conv("gemini", model)
    si = _get(body, "systemInstruction", "system_instruction")
    if isinstance(si, str):
        conv.system = si
    elif isinstance(si, dict):
        conv.system = "\n".join(p["text"] for p in si.get("parts") or []
                                if isinstance(p, dict) and isinstance(p.get("text"), str))
    for c in contents:
        if not isinstance(c, dict):
            raise BadRequest("Invalid JSON payload received. Expected an object in contents.")
        role = c.get("role") or "user"
        if role not in ("user", "model", "function", "tool"):
            raise BadRequest("Please use a valid role: user, model.")
        texts, calls, results = [], [], []
        for p in c.get("parts") or []:
            if not isinstance(p, dict):
                continue
            if isinstance(p.get("text"), str) and not p.get("thought"):
                texts.append(p["text"])
            fc = _get(p, "functionCall", "function_call")
            if isinstance(fc, dict):
                if fc.get("id"):
                    conv.gemini_ids = True
                calls.append({"id": fc.get("id"), "name": fc.get("name"), "args": fc.get("args", {}),
                              "sig": _get(p, "thoughtSignature", "thought_signature")})
            fr = _get(p, "functionResponse", "function_response")
            if isinstance(fr, dict):
                results.append({"id": fr.get("id"), "name": fr.get("name") or "unknown",
                                "response": fr.get("response")})
        if results:
            conv.add("tool", texts, calls, results)
        else:
            conv.add("model" if role == "model" else "user", texts, calls)
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            for fd in _get(t, "functionDeclarations", "function_declarations", default=[]) or []:
                if isinstance(fd, dict) and fd.get("name"):
                    conv.tools.append(fd["name"])
    tcfg = _get(body, "toolConfig", "tool_config")
    fcc = _get(tcfg, "functionCallingConfig", "function_calling_config")
    if isinstance(fcc, dict) and str(fcc.get("mode", "")).upper() == "NONE":
        conv.tools_disabled = True
    gc = _get(body, "generationConfig", "generation_config") or {}
    rs = _get(gc, "responseJsonSchema", "response_json_schema", "responseSchema", "response_schema")
    if rs is not None:
        if _get(gc, "responseMimeType", "response_mime_type") != "application/json":
            raise BadRequest("* GenerateContentRequest.generation_config.response_mime_type: "
                             "response_mime_type must be application/json when a response schema is set.\n")
        conv.response_schema = rs
    thinking_gemini(conv, _get(gc, "thinkingConfig", "thinking_config"))
    mt = _get(gc, "maxOutputTokens", "max_output_tokens")
    if mt is not None:
        conv.max_tokens = _as_int(mt)
        if conv.max_tokens is None or conv.max_tokens < 1:
            raise BadRequest("* GenerateContentRequest.generation_config.max_output_tokens: "
                             "max_output_tokens must be positive.\n")
    conv.count_chars()
    return conv


# ---- Anthropic -----------------------------------------------------------

def parse_anthropic(body):
    if not isinstance(body, dict):
        raise BadRequest("Input should be a valid dictionary")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise BadRequest("%s: Field required" % field)
    mt = _as_int(body.get("max_tokens"))
    if mt is None or mt < 1:
        raise BadRequest("max_tokens: Input should be greater than or equal to 1")
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadRequest("messages: Input should be a valid list")
    if not msgs:
        raise BadRequest("messages: at least one message is required")
    conv = Conv("anthropic", body.get("model"))
    conv.max_tokens = mt
    sysv = body.get("system")
    conv.system = "\n".join(_text_of(sysv))
    names_by_id = {}
    first_thinking = set()      # assistant messages that begin with a thinking block
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise BadRequest("messages.%d.role: Input should be 'user' or 'assistant'" % i)
        content = m.get("content")
        texts, calls, results = [], [], []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                bt = b.get("type")
                if bt in ("thinking", "redacted_thinking"):
                    thinking_block_check(i, len(texts) + len(calls) + len(results), b, m["role"])
                    if not texts and not calls:
                        first_thinking.add(i)
                    continue
                if bt == "text" and isinstance(b.get("text"), str):
                    texts.append(b["text"])
                elif bt in ("tool_use", "server_tool_use"):
                    calls.append({"id": b.get("id"), "name": b.get("name"), "args": b.get("input", {})})
                    if b.get("id"):
                        names_by_id[b["id"]] = b.get("name")
                elif bt == "tool_result":
                    c = b.get("content")
                    raw = c if isinstance(c, str) else "".join(_text_of(c))
                    res = {"id": b.get("tool_use_id"), "name": names_by_id.get(b.get("tool_use_id"), "unknown"),
                           "response": _maybe_json(raw)}
                    if b.get("is_error"):
                        res["is_error"] = True
                    results.append(res)
        else:
            raise BadRequest("messages.%d.content: Input should be a valid list" % i)
        if m["role"] == "assistant":
            conv.add("model", texts, calls)["index"] = i
        elif results:
            conv.add("tool", texts, results=results)
        else:
            conv.add("user", texts)
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name"):
            conv.tools.append(t["name"])
    tc = body.get("tool_choice")
    if isinstance(tc, dict) and tc.get("type") == "none":
        conv.tools_disabled = True
    thinking_anthropic(conv, body, first_thinking)
    conv.stream = body.get("stream") is True
    conv.count_chars()
    return conv


# ---- thinking ---------------------------------------------------------------
#
# A request that asks for thinking (Anthropic "thinking": {"type":
# "enabled", "budget_tokens"}, Gemini generationConfig.thinkingConfig,
# OpenAI reasoning_effort) is answered with thoughts, in each provider's
# format: Anthropic a thinking block (its text, and a signature made of
# it) before the answer's blocks -- and a redacted_thinking block too when
# the user's message holds [[redacted]] -- counted in output_tokens;
# Gemini a thought part when includeThoughts, a thoughtSignature on the
# first functionCall part and thoughtsTokenCount; OpenAI
# completion_tokens_details.reasoning_tokens (part of completion_tokens).
# Sent back, they are checked as the APIs check them: an Anthropic
# thinking block's signature must be the one made of its text and a
# redacted block's data one this server made, and with thinking on, the
# last assistant message with tool_use must begin with a thinking block;
# a Gemini functionCall part of a model turn must carry the signature it
# was given.

THINK_PREFIX = "Thinking about: "
OPENAI_REASONING_TOKENS = {"minimal": 0, "low": 8, "medium": 16, "high": 32}


def thinking_sig(kind, text):
    return kind + "-" + hashlib.sha256((kind + "\0" + text).encode("utf-8")).hexdigest()[:32]


def thinking_block_check(i, j, b, role):
    if role != "assistant":
        raise BadRequest("messages.%d.content.%d: thinking blocks may only be in assistant messages" % (i, j))
    if b.get("type") == "thinking":
        text = b.get("thinking")
        if not isinstance(text, str) or b.get("signature") != thinking_sig("sig", text):
            raise BadRequest("messages.%d.content.%d: Invalid `signature` in `thinking` block" % (i, j))
    else:
        data = b.get("data")
        if not isinstance(data, str) or not data.startswith("redacted-"):
            raise BadRequest("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block" % (i, j))


def thinking_anthropic(conv, body, first_thinking):
    th = body.get("thinking")
    if th is None:
        return
    if not isinstance(th, dict) or th.get("type") not in ("enabled", "disabled"):
        raise BadRequest("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: "
                         "'disabled', 'enabled'" % (th.get("type") if isinstance(th, dict) else th))
    if th["type"] == "disabled":
        return
    budget = _as_int(th.get("budget_tokens"))
    if budget is None or budget < 1024:
        raise BadRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if conv.max_tokens <= budget:
        raise BadRequest("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                         "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                         "#max-tokens-and-context-window-size")
    conv.thinking = {"budget": budget, "include": True}
    # a tool loop: the assistant message before the last tool results
    last = [m for m in conv.messages if m["role"] == "model"]
    if last and last[-1]["calls"] and conv.messages[-1]["role"] == "tool" and \
            last[-1]["index"] not in first_thinking:
        raise BadRequest("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                         "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with "
                         "a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
                         "We recommend you include thinking blocks from previous turns. To avoid this "
                         "requirement, disable `thinking`." % last[-1]["index"])


def thinking_gemini(conv, tc):
    if tc is None:
        return
    if not isinstance(tc, dict):
        raise BadRequest("Invalid JSON payload received. Unknown name \"thinkingConfig\": Proto field is not "
                         "a message.")
    budget = _get(tc, "thinkingBudget", "thinking_budget")
    level = _get(tc, "thinkingLevel", "thinking_level")
    if budget is not None and level is not None:
        raise BadRequest("You can only set only one of thinking budget and thinking level.")
    if level is not None and str(level).lower() not in ("minimal", "low", "medium", "high"):
        raise BadRequest("Invalid value at 'generation_config.thinking_config.thinking_level' (%s)" % level)
    if budget is not None and (_as_int(budget) is None or _as_int(budget) < -1):
        raise BadRequest("Invalid value at 'generation_config.thinking_config.thinking_budget' (%s)" % budget)
    conv.thinking = {"budget": budget, "level": level,
                     "include": _get(tc, "includeThoughts", "include_thoughts") is True}
    if budget == 0:
        conv.thinking = None
        return
    # the current turn: from the user's last message on
    start = max([i for i, m in enumerate(conv.messages) if m["role"] == "user" and m["texts"]] or [0])
    for i, m in enumerate(conv.messages):
        for c in m["calls"] if m["role"] == "model" and i > start else []:
            if c.get("sig") is None:
                raise BadRequest("Function call is missing a thought_signature in functionCall parts. This is "
                                 "required for tools to work correctly, and missing thought_signature may lead "
                                 "to degraded model performance. Additional data, function call `%s` , "
                                 "position %d." % (c.get("name"), i + 1))
            if c["sig"] != thinking_sig("gsig", (c.get("name") or "") + compact(c.get("args"))):
                raise BadRequest("Corrupted thought signature.")


def thinking_answer(conv, ans, user_text):
    if conv.reasoning is not None:
        ans.thought_tokens = OPENAI_REASONING_TOKENS[conv.reasoning]
        ans.completion_tokens += ans.thought_tokens
        return
    if conv.thinking is None:
        return
    last = conv.messages[-1] if conv.messages else None
    if last is not None and last["role"] == "tool" and last["results"]:
        about = "the result of " + ", ".join(r.get("name") or "unknown" for r in last["results"])
    else:
        about = user_text or "nothing"
    ans.thought = THINK_PREFIX + about
    ans.thought_tokens = len(ans.thought) // 4 + 1
    ans.include_thoughts = conv.thinking.get("include", False)
    if conv.provider == "anthropic":
        ans.redacted = "[[redacted]]" in user_text
        ans.completion_tokens += ans.thought_tokens


# --------------------------------------------------------------------------
# scripted behaviour
# --------------------------------------------------------------------------

class Answer:
    def __init__(self):
        self.text = None        # str or None
        self.calls = []         # [{"id", "name", "args"}]
        self.finish = "stop"    # neutral: stop | length | tool_calls
        self.rule = ""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cache_read = 0         # of prompt_tokens: read from the prompt cache
        self.cache_write = 0        # of prompt_tokens: written to it (Anthropic)
        self.thought = None         # thinking text (Anthropic, Gemini) when thinking was asked for
        self.thought_tokens = 0     # reasoning tokens (Gemini: apart from completion_tokens)
        self.redacted = False       # Anthropic: a redacted_thinking block too
        self.include_thoughts = False

    def summary(self):
        return {"rule": self.rule, "text": self.text, "calls": self.calls, "finish": self.finish,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cache_read": self.cache_read, "cache_write": self.cache_write,
                "thought": self.thought, "thought_tokens": self.thought_tokens}


def _fmt_num(v):
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def describe_result(name, response):
    w = response
    if isinstance(w, str):
        w = _maybe_json(w)
    if isinstance(w, dict) and len(w) == 1 and next(iter(w)) in ("result", "output", "content", "response"):
        inner = _maybe_json(next(iter(w.values())))
        if isinstance(inner, dict):
            w = inner
    if name == "get_weather" and isinstance(w, dict) and all(k in w for k in ("city", "forecast", "temperature_c")):
        return "The weather in %s is %s, %s\u00b0C." % (w["city"], w["forecast"], _fmt_num(w["temperature_c"]))
    return "Tool %s returned: %s." % (name, compact(response))


SAY_RE = re.compile(r"\[\[say:(.*?)\]\]", re.S)


def parse_directives(text):
    """call name({...}) -> [(name, args, forced)]"""
    out = []
    dec = json.JSONDecoder()
    for m in DIRECTIVE_RE.finditer(text):
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text) or text[pos] != "{":
            continue
        try:
            args, end = dec.raw_decode(text, pos)
        except ValueError:
            continue
        while end < len(text) and text[end].isspace():
            end += 1
        if end >= len(text) or text[end] != ")" or not isinstance(args, dict):
            continue
        out.append((m.group(2), args, bool(m.group(1))))
    return out


def new_call_id(provider, conv):
    if provider == "openai":
        return "call_" + rand_str(24)
    if provider == "anthropic":
        return "toolu_01" + rand_str(22)
    if conv.gemini_ids:
        return "function-call-" + "".join(random.choice(string.digits) for _ in range(19))
    return None


SCRIPT_RE = re.compile(r"\[\[script:(.*?)\]\]", re.S)


def scripted(conv):
    """[[script:A||B||...]] in a user text: the model's answers from there on.

    The answer is item k, k the model messages after the (latest) user
    message holding the marker -- the last item once they are used up.  An
    item of `call name({...})` directives (declared tools, or `call!`) is
    those calls, any other item its text exactly: the model answering
    wrongly, then rightly after it was corrected.  None without a marker,
    or when the text has directives outside it (the marker is then in a
    call's arguments, for the agent called).
    """
    for i in range(len(conv.messages) - 1, -1, -1):
        m = conv.messages[i]
        if m["role"] != "user":
            continue
        text = "\n".join(m["texts"])
        found = SCRIPT_RE.search(text)
        if found and parse_directives(SCRIPT_RE.sub("", text)):
            return None     # a directive around it: the marker is an argument
        if found:
            items = found.group(1).split("||")
            k = sum(1 for n in conv.messages[i + 1:] if n["role"] == "model")
            return items[min(k, len(items) - 1)]
    return None


REPLAY_MARK = "[[replay:"


def replay_answer(conv):
    """The scripted turn of a [[replay:[...]]] system instruction, or None.

    The marker holds a JSON array of {"when": substring?, "answers": [...]}:
    the first entry whose "when" is in the last user text (an entry without
    one matches any) answers with its k-th answer, k the number of model
    messages after the last user message with text.  An answer is a text,
    or {"calls": [{"name", "args"}]}."""
    at = conv.system.find(REPLAY_MARK)
    if at < 0:
        return None
    try:
        entries, _ = json.JSONDecoder().raw_decode(conv.system, at + len(REPLAY_MARK))
    except ValueError:
        return None
    text = conv.last_user_text()
    last = -1
    for i, m in enumerate(conv.messages):
        if m["role"] == "user" and m["texts"]:
            last = i
    k = sum(1 for m in conv.messages[last + 1:] if m["role"] == "model")
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict) or ("when" in e and e["when"] not in text):
            continue
        answers = e.get("answers") or []
        return answers[k] if k < len(answers) else None
    return None


def script(conv):
    ans = Answer()
    tools = set() if conv.tools_disabled else set(conv.tools)
    last = conv.messages[-1] if conv.messages else None
    user_text = conv.last_user_text()
    calls = []
    replay = replay_answer(conv)
    if isinstance(replay, str):
        ans.rule = "replay"
        ans.text = replay
    elif isinstance(replay, dict):
        ans.rule = "replay"
        calls = [(c["name"], c.get("args") or {}) for c in replay.get("calls") or []]
    elif (item := scripted(conv)) is not None:
        for name, args, forced in parse_directives(item):
            if forced or name in tools:
                calls.append((name, args))
        ans.rule = "script"
        if not calls:
            ans.text = item
    elif last is not None and last["role"] == "tool" and last["results"]:
        # a result that says what to call next (chained tools)
        for r in last["results"]:
            resp = _maybe_json(r.get("response"))
            if isinstance(resp, dict) and isinstance(resp.get("call_next"), str):
                for name, args, forced in parse_directives(resp["call_next"]):
                    if forced or name in tools:
                        calls.append((name, args))
        if calls:
            ans.rule = "call_next"
        else:
            ans.rule = "tool_result"
            ans.text = " ".join(describe_result(r.get("name") or "unknown", r.get("response")) for r in last["results"])
    else:
        for name, args, forced in parse_directives(user_text):
            if forced or name in tools:
                calls.append((name, args))
        if calls:
            ans.rule = "directive"
        elif "weather" in user_text.lower() and "get_weather" in tools:
            ans.rule = "weather"
            low = user_text.lower()
            m = IN_WORD_RE.search(user_text, low.find("weather")) or IN_WORD_RE.search(user_text)
            city = m.group(1).strip(string.punctuation + "\u00bf\u00a1\u2019\u201d") if m else ""
            calls.append(("get_weather", {"city": city or "Hangzhou"}))
        elif "transfer_to_agent" in tools and TRANSFER_RE.search(user_text):
            ans.rule = "transfer"
            agent = TRANSFER_RE.search(user_text).group(1).strip(".-")
            calls.append(("transfer_to_agent", {"agent_name": agent}))
        elif SAY_RE.search(user_text):
            # the answer is exactly the text between the markers
            ans.rule = "say"
            ans.text = SAY_RE.search(user_text).group(1)
        elif "[[nul]]" in user_text:
            # a NUL in the answer ("\u0000" on the wire): jsonb cannot hold it
            ans.rule = "nul"
            ans.text = "nul:\u0000:end"
        elif user_text and conv.response_schema is not None:
            # a response schema: the echo as a value of it, as JSON
            ans.rule = "echo_schema"
            ans.text = json.dumps(schema_sample(conv.response_schema, "echo: " + user_text))
        elif user_text:
            ans.rule = "echo"
            ans.text = "echo: " + user_text
        else:
            ans.rule = "ok"
            ans.text = "ok"
    if calls:
        ans.calls = [{"id": new_call_id(conv.provider, conv), "name": n, "args": a} for n, a in calls]
        ans.finish = "tool_calls"
        out_chars = sum(len(c["name"]) + len(compact(c["args"])) for c in ans.calls)
    else:
        if "ANSWER_IN_CAPS" in conv.system:
            ans.text = ans.text.upper()
        if conv.max_tokens is not None and len(ans.text) > 4 * conv.max_tokens:
            ans.text = ans.text[:4 * conv.max_tokens]
            ans.finish = "length"
        out_chars = len(ans.text)
    ans.prompt_tokens = conv.prompt_chars // 4 + 1
    ans.completion_tokens = out_chars // 4 + 1
    if conv.cache is not None:
        ans.prompt_tokens, ans.cache_read, ans.cache_write = conv.cache
    thinking_answer(conv, ans, user_text)
    return ans


# ---- prompt caching ---------------------------------------------------------
#
# A cached request's prompt is a list of units in the order the provider
# reads it (Anthropic: tools, system blocks, message blocks; OpenAI and
# Gemini: the system prompt, then messages), each counted len(text) // 4
# tokens; its prompt_tokens are then the units' (+ 1).  A prefix is cached
# by its units' hash, per model (and OpenAI's prompt_cache_key).
#  - Anthropic: only with cache_control breakpoints (at most 4, each
#    {"type": "ephemeral"}, "ttl" allowed; more is the API's 400).  Each
#    breakpoint reads the longest cached prefix ending at it or at one of
#    the 20 blocks before it; the prefix up to the last breakpoint is written
#    (cache_creation_input_tokens: what is past what was read), and every
#    breakpoint's prefix is cached.  input_tokens is what is neither.
#  - OpenAI: only with prompt_cache_key: the longest cached prefix of whole
#    messages is read (prompt_tokens_details.cached_tokens); every prefix
#    is cached.
#  - Gemini, implicit: only for a model whose name contains "implicit-cache"
#    (so that other tests' usage stays as it was); as OpenAI, reported as
#    cachedContentTokenCount.

CACHE_LOOKBACK = 20


def _units_tokens(units):
    out, n = [], 0
    for u in units:
        n += len(u) // 4
        out.append(n)
    return out


def _prefix_hashes(scope, units):
    h = hashlib.sha256(scope.encode())
    out = []
    for u in units:
        h.update(b"\0" + u.encode("utf-8", "surrogatepass"))
        out.append(h.copy().hexdigest())
    return out


def _without_cc(block):
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def prompt_cache(provider, body, model):
    """(prompt tokens, read, written) of a cached request, or None; raises BadRequest."""
    units, marks = [], []
    if provider == "anthropic":
        def add(block):
            if isinstance(block, dict) and "cache_control" in block:
                cc = block["cache_control"]
                if (not isinstance(cc, dict) or cc.get("type") != "ephemeral"
                        or set(cc) - {"type", "ttl"}):
                    raise BadRequest("cache_control: Input tag does not match the expected tag 'ephemeral'")
                if block.get("type") in ("thinking", "redacted_thinking") or \
                        (block.get("type") == "text" and not block.get("text")):
                    raise BadRequest("cache_control cannot be set for empty text blocks or thinking blocks")
                marks.append(len(units))
            units.append(compact(_without_cc(block)) if not isinstance(block, str) else block)
        for t in body.get("tools") or []:
            add(t)
        sysv = body.get("system")
        for b in ([sysv] if isinstance(sysv, str) else sysv or []):
            add(b)
        for m in body.get("messages") or []:
            c = m.get("content") if isinstance(m, dict) else None
            for b in ([c] if isinstance(c, str) else c or []):
                add(b)
        if not marks:
            return None
        if len(marks) > 4:
            raise BadRequest("A maximum of 4 blocks with cache_control may be provided. Found %d." % len(marks))
        scope = "anthropic\0" + str(body.get("model"))
    else:
        if provider == "openai":
            key = body.get("prompt_cache_key")
            if key is None:
                return None
            if not isinstance(key, str):
                raise BadRequest("Invalid type for 'prompt_cache_key': expected a string.", "prompt_cache_key",
                                 "invalid_type")
            msgs = body.get("messages") or []
            scope = "openai\0" + str(body.get("model")) + "\0" + key
        else:
            if "implicit-cache" not in (model or ""):
                return None
            msgs = ([body["systemInstruction"]] if body.get("systemInstruction") else []) + \
                (body.get("contents") or [])
            scope = "gemini\0" + str(model)
        units = [compact(m) for m in msgs]
    tokens = _units_tokens(units)
    hashes = _prefix_hashes(scope, units)
    with STATE.lock:
        cached = STATE.prompt_cache
        if provider == "anthropic":
            read = 0
            for i in marks:
                for j in range(i, max(-1, i - CACHE_LOOKBACK - 1), -1):
                    if hashes[j] in cached:
                        read = max(read, tokens[j])
                        break
            written = max(0, tokens[marks[-1]] - read)
            cached.update(hashes[i] for i in marks)
        else:
            read = 0
            for j in range(len(units) - 1, -1, -1):
                if hashes[j] in cached:
                    read = tokens[j]
                    break
            written = 0
            cached.update(hashes)
    return (tokens[-1] + 1 if tokens else 1), read, written


def echo_key(ans, key):
    """Put the key where the answer has the echo-key marker."""
    def sub(v):
        if isinstance(v, str):
            return v.replace(ECHO_KEY_MARK, key)
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {sub(k): sub(x) for k, x in v.items()}
        return v
    ans.text = sub(ans.text)
    # new dicts: /_last holds the old ones
    ans.calls = [dict(c, args=sub(c["args"])) for c in ans.calls]


# --------------------------------------------------------------------------
# provider renderers
# --------------------------------------------------------------------------

class Stream:
    """A rendered streaming response: frames (bytes) and how many of them are
    'safe' (carry no finish reason / terminator)."""

    def __init__(self, frames, n_safe):
        self.frames = frames
        self.n_safe = n_safe


# ---- OpenAI ----

OPENAI_FP = "fp_mock0adk01"
OPENAI_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "": ""}


def openai_usage(ans):
    return {"prompt_tokens": ans.prompt_tokens, "completion_tokens": ans.completion_tokens,
            "total_tokens": ans.prompt_tokens + ans.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": ans.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": ans.thought_tokens, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def openai_body(conv, ans, rid, created):
    msg = {"role": "assistant", "content": ans.text if not ans.calls else None}
    if ans.calls:
        msg["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": args_text(c["args"])}}
                             for c in ans.calls]
    msg["refusal"] = None
    msg["annotations"] = []
    body = {"id": rid, "object": "chat.completion", "created": created, "model": conv.model,
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": OPENAI_FINISH[ans.finish]}],
            "usage": openai_usage(ans), "service_tier": "default", "system_fingerprint": OPENAI_FP}
    return (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def openai_stream(conv, ans, rid, created, text_chunk=TEXT_CHUNK):
    base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": conv.model,
            "service_tier": "default", "system_fingerprint": OPENAI_FP}

    def frame(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if conv.include_usage:
            d["usage"] = None
        return b"data: " + compact(d).encode("utf-8") + b"\n\n"

    frames = []
    if ans.calls:
        for i, c in enumerate(ans.calls):
            head = {"index": i, "id": c["id"], "type": "function",
                    "function": {"name": c["name"], "arguments": ""}}
            if i == 0:
                frames.append(frame({"role": "assistant", "content": None, "tool_calls": [head], "refusal": None}))
            else:
                frames.append(frame({"tool_calls": [head]}))
            for frag in chunks(args_text(c["args"]), ARGS_CHUNK):
                frames.append(frame({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}))
    else:
        frames.append(frame({"role": "assistant", "content": "", "refusal": None}))
        for piece in chunks(ans.text, text_chunk):
            if piece:
                frames.append(frame({"content": piece}))
    n_safe = len(frames)
    frames.append(frame({}, OPENAI_FINISH[ans.finish]))
    if conv.include_usage:
        d = dict(base)
        d["choices"] = []
        d["usage"] = openai_usage(ans)
        frames.append(b"data: " + compact(d).encode("utf-8") + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return Stream(frames, n_safe)


# ---- Gemini ----

GEMINI_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP", "": ""}


def gemini_json(obj, pretty):
    if pretty:
        return json.dumps(obj, ensure_ascii=False, indent=2)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ": "))


def gemini_usage(ans, final=True):
    u = {"promptTokenCount": ans.prompt_tokens}
    if ans.cache_read:
        u["cachedContentTokenCount"] = ans.cache_read
    if final:
        u["candidatesTokenCount"] = ans.completion_tokens
        u["totalTokenCount"] = ans.prompt_tokens + ans.completion_tokens + ans.thought_tokens
        if ans.thought_tokens:
            u["thoughtsTokenCount"] = ans.thought_tokens
    else:
        u["totalTokenCount"] = ans.prompt_tokens
    u["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": ans.prompt_tokens}]
    if final:
        u["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": ans.completion_tokens}]
    return u


def gemini_call_parts(ans):
    parts = []
    for c in ans.calls:
        fc = {"name": c["name"], "args": c["args"]}
        if c.get("id"):
            fc = {"id": c["id"], "name": c["name"], "args": c["args"]}
        part = {"functionCall": fc}
        if ans.thought is not None:
            # every call part signed, so that each can be checked on its own
            part["thoughtSignature"] = thinking_sig("gsig", c["name"] + compact(c["args"]))
        parts.append(part)
    return parts


def gemini_thought_parts(ans):
    if ans.thought is None or not ans.include_thoughts:
        return []
    return [{"text": ans.thought, "thought": True}]


def gemini_body(conv, ans, rid):
    parts = gemini_call_parts(ans) if ans.calls else [{"text": ans.text}]
    if ans.finish == "" and not ans.calls:
        parts = []
    parts = gemini_thought_parts(ans) + parts
    body = {"candidates": [{"content": {"parts": parts, "role": "model"},
                            "finishReason": GEMINI_FINISH[ans.finish], "index": 0}],
            "usageMetadata": gemini_usage(ans), "modelVersion": conv.model, "responseId": rid}
    return (gemini_json(body, True) + "\n").encode("utf-8")


def gemini_chunks(conv, ans, rid, text_chunk=TEXT_CHUNK):
    """List of GenerateContentResponse dicts; the last one carries finishReason."""
    out = []
    if gemini_thought_parts(ans):
        out.append({"candidates": [{"content": {"parts": gemini_thought_parts(ans), "role": "model"}}],
                    "usageMetadata": gemini_usage(ans, False), "modelVersion": conv.model, "responseId": rid})
    if ans.calls:
        out.append({"candidates": [{"content": {"parts": gemini_call_parts(ans), "role": "model"},
                                    "finishReason": GEMINI_FINISH[ans.finish]}],
                    "usageMetadata": gemini_usage(ans), "modelVersion": conv.model, "responseId": rid})
        return out
    pieces = chunks(ans.text, text_chunk)
    for i, piece in enumerate(pieces):
        final = i == len(pieces) - 1
        cand = {"content": {"parts": [{"text": piece}] if ans.finish != "" else [], "role": "model"}}
        if final:
            cand["finishReason"] = GEMINI_FINISH[ans.finish]
        out.append({"candidates": [cand], "usageMetadata": gemini_usage(ans, final),
                    "modelVersion": conv.model, "responseId": rid})
    return out


def gemini_stream(conv, ans, rid, sse, text_chunk=TEXT_CHUNK):
    objs = gemini_chunks(conv, ans, rid, text_chunk)
    if sse:
        frames = [b"data: " + gemini_json(o, False).encode("utf-8") + b"\r\n\r\n" for o in objs]
        return Stream(frames, len(frames) - 1)
    # alt=json (default): a JSON array streamed element by element
    frames = []
    for i, o in enumerate(objs):
        frames.append((b"[" if i == 0 else b",\r\n") + gemini_json(o, True).encode("utf-8"))
    frames.append(b"]")
    return Stream(frames, len(frames) - 2)


# ---- Anthropic ----

ANTHROPIC_FINISH = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "": ""}


def anthropic_usage(ans, output_tokens=None):
    return {"input_tokens": ans.prompt_tokens - ans.cache_read - ans.cache_write,
            "cache_creation_input_tokens": ans.cache_write,
            "cache_read_input_tokens": ans.cache_read,
            "output_tokens": ans.completion_tokens if output_tokens is None else output_tokens,
            "service_tier": "standard"}


def anthropic_body(conv, ans, rid):
    if ans.calls:
        content = [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in ans.calls]
    else:
        content = [{"type": "text", "text": ans.text}]
    content = anthropic_thinking_blocks(ans) + content
    body = {"id": rid, "type": "message", "role": "assistant", "model": conv.model, "content": content,
            "stop_reason": ANTHROPIC_FINISH[ans.finish], "stop_sequence": None, "usage": anthropic_usage(ans)}
    return compact(body).encode("utf-8")


def anthropic_thinking_blocks(ans):
    if ans.thought is None:
        return []
    out = [{"type": "thinking", "thinking": ans.thought, "signature": thinking_sig("sig", ans.thought)}]
    if ans.redacted:
        out.append({"type": "redacted_thinking", "data": thinking_sig("redacted", ans.thought)})
    return out


def anthropic_event(name, data, raw=None):
    payload = raw if raw is not None else compact(data)
    return ("event: %s\ndata: %s\n\n" % (name, payload)).encode("utf-8")


def anthropic_stream(conv, ans, rid, text_chunk=TEXT_CHUNK):
    frames = []
    msg = {"id": rid, "type": "message", "role": "assistant", "model": conv.model, "content": [],
           "stop_reason": None, "stop_sequence": None, "usage": anthropic_usage(ans, 1)}
    frames.append(anthropic_event("message_start", {"type": "message_start", "message": msg}))
    blocks = []
    for b in anthropic_thinking_blocks(ans):
        if b["type"] == "thinking":
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""},
                           [{"type": "thinking_delta", "thinking": p} for p in chunks(b["thinking"], text_chunk)] +
                           [{"type": "signature_delta", "signature": b["signature"]}]))
        else:
            blocks.append((b, []))
    if ans.calls:
        for c in ans.calls:
            blocks.append(({"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}},
                           [{"type": "input_json_delta", "partial_json": ""}] +
                           [{"type": "input_json_delta", "partial_json": f}
                            for f in chunks(args_text(c["args"], ensure_ascii=False), ARGS_CHUNK)]))
    else:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": p} for p in chunks(ans.text, text_chunk)]))
    for idx, (start, deltas) in enumerate(blocks):
        frames.append(anthropic_event("content_block_start",
                                      {"type": "content_block_start", "index": idx, "content_block": start}))
        if idx == 0:
            frames.append(anthropic_event("ping", None, raw='{"type": "ping"}'))
        for d in deltas:
            frames.append(anthropic_event("content_block_delta",
                                          {"type": "content_block_delta", "index": idx, "delta": d}))
        frames.append(anthropic_event("content_block_stop", {"type": "content_block_stop", "index": idx}))
    n_safe = len(frames)
    frames.append(anthropic_event("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": ANTHROPIC_FINISH[ans.finish], "stop_sequence": None},
        "usage": {"output_tokens": ans.completion_tokens}}))
    frames.append(anthropic_event("message_stop", {"type": "message_stop"}))
    return Stream(frames, n_safe)


# ---- errors, per provider ----

OPENAI_ERR_TYPE = {"invalid_request": "invalid_request_error", "auth": "invalid_request_error",
                   "rate_limit": "requests", "server": "server_error", "overloaded": "server_error",
                   "not_found": "invalid_request_error"}
ANTHROPIC_ERR_TYPE = {"invalid_request": "invalid_request_error", "auth": "authentication_error",
                      "rate_limit": "rate_limit_error", "server": "api_error", "overloaded": "overloaded_error",
                      "not_found": "not_found_error"}
GEMINI_ERR_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                     404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def error_obj(provider, status, kind, message, param=None, code=None, details=None):
    if provider == "openai":
        return {"error": {"message": message, "type": OPENAI_ERR_TYPE.get(kind, "invalid_request_error"),
                          "param": param, "code": code}}
    if provider == "gemini":
        e = {"code": status, "message": message, "status": GEMINI_ERR_STATUS.get(status, "UNKNOWN")}
        if details:
            e["details"] = details
        return {"error": e}
    return {"type": "error", "error": {"type": ANTHROPIC_ERR_TYPE.get(kind, "api_error"), "message": message},
            "request_id": "req_011" + rand_str(21)}


def error_bytes(provider, obj):
    if provider == "openai":
        return (json.dumps(obj, ensure_ascii=False, indent=4) + "\n").encode("utf-8")
    if provider == "gemini":
        return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return compact(obj).encode("utf-8")


def stream_error_frame(provider, sse=True, empty=False):
    if empty:
        o = stream_error_frame_obj(provider)
        if provider == "anthropic":
            return anthropic_event("error", o)
        if provider == "gemini" and not sse:
            return b",\r\n" + gemini_json(o, False).encode() + b"]"
        return b"data: " + compact(o).encode() + (b"\r\n\r\n" if provider == "gemini" else b"\n\n")
    if provider == "openai":
        return b"data: " + compact(error_obj("openai", 500, "server",
                                             "The server had an error while processing your request. "
                                             "Sorry about that!")).encode() + b"\n\n"
    if provider == "gemini":
        o = gemini_json(error_obj("gemini", 500, "server", "An internal error has occurred. Please retry or "
                                  "report in https://developers.generativeai.google/guide/troubleshooting"),
                        False)
        return (b"data: " + o.encode() + b"\r\n\r\n") if sse else (b",\r\n" + o.encode() + b"]")
    return anthropic_event("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def stream_error_frame_obj(provider):
    """The error body of stream-error-empty, non-streamed: empty type and message."""
    return {"openai": {"error": {"message": "", "type": "", "param": None, "code": None}},
            "gemini": {"error": {"code": 500, "message": "", "status": ""}},
            "anthropic": {"type": "error", "error": {"type": "", "message": ""}}}[provider]


CANNED = {
    # fault -> (status, kind, {provider: message})
    "500": (500, "server", {
        "openai": "The server had an error while processing your request. Sorry about that!",
        "gemini": "An internal error has occurred. Please retry or report in "
                  "https://developers.generativeai.google/guide/troubleshooting",
        "anthropic": "Internal server error"}),
    "429": (429, "rate_limit", {
        "openai": "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
                  "Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.",
        "gemini": "You exceeded your current quota, please check your plan and billing details. For more "
                  "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
        "anthropic": "This request would exceed the rate limit for your organization of 50 requests per "
                     "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. "
                     "You can see the response headers for current usage. Please reduce the prompt length or "
                     "the maximum tokens requested, or try again later."}),
    "400": (400, "invalid_request", {
        "openai": "Invalid value for 'messages': the request was rejected.",
        "gemini": "Invalid JSON payload received. The request was rejected.",
        "anthropic": "messages: the request was rejected"}),
    "overloaded": (503, "overloaded", {
        "openai": "The server is overloaded or not ready yet.",
        "gemini": "The model is overloaded. Please try again later.",
        "anthropic": "Overloaded"}),
}


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------

class ClientGone(Exception):
    pass



# -- embeddings: a 64-dimensional bag of words, L2-normalised.  Each word
# (lower-case letters and digits) adds 1 to the dimension its SHA-256
# picks; a few synonyms count as the same word, so that "canine" is close
# to "dog" without sharing a word with it (what semantic search adds to
# full-text search).
EMBED_DIMS = 64
EMBED_SYNONYMS = {"canine": "dog", "puppy": "dog", "hound": "dog", "kitten": "cat", "feline": "cat",
                  "automobile": "car", "vehicle": "car", "ocean": "sea"}


def embed_text(content):
    if not isinstance(content, dict):
        return None
    texts = [p.get("text") for p in (content.get("parts") or []) if isinstance(p, dict)]
    if not all(isinstance(t, str) for t in texts):
        return None
    return " ".join(texts)


def embedding_vector(text):
    v = [0.0] * EMBED_DIMS
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        w = EMBED_SYNONYMS.get(w, w)
        v[hashlib.sha256(w.encode()).digest()[0] % EMBED_DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [round(x / norm, 6) for x in v]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-model-server/" + VERSION
    sys_version = ""
    disable_nagle_algorithm = True
    timeout = 900                      # idle keep-alive connections are dropped after 15 min

    # -- logging: never the request line verbatim (it may carry ?key=) --
    def log_message(self, fmt, *args):
        STATE.log("%s http %s" % (now_iso(), fmt % args))

    def log_request(self, code="-", size="-"):
        pass

    def log_access(self, status, model="-", extra=""):
        ms = int((time.monotonic() - self._t0) * 1000)
        STATE.log("%s %s %s model=%s status=%s latency_ms=%d%s" % (
            now_iso(), self.command, redact_query(self.path), model or "-", status, ms, extra))

    # -- low level writing --
    def _head(self, status, headers):
        reason = self.responses.get(status, ("Unknown",))[0]
        lines = ["HTTP/1.1 %d %s" % (status, reason),
                 "Date: " + self.date_time_string(),
                 "Server: " + self.version_string()]
        for k, v in headers:
            lines.append("%s: %s" % (k, v))
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _write(self, data):
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError) as e:
            self.close_connection = True
            raise ClientGone() from e

    def send_full(self, status, body, ctype, headers=()):
        h = [("Content-Type", ctype), ("Content-Length", str(len(body)))] + list(headers)
        self._write(self._head(status, h) + body)
        return status

    def start_stream(self, status, ctype, headers=()):
        self._chunked = self.request_version != "HTTP/1.0"
        h = [("Content-Type", ctype), ("Cache-Control", "no-cache")] + list(headers)
        if self._chunked:
            h.append(("Transfer-Encoding", "chunked"))
        else:
            self.close_connection = True
        self._write(self._head(status, h))

    def stream_write(self, data):
        if not data:
            return
        if self._chunked:
            self._write(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            self._write(data)

    def end_stream(self):
        if self._chunked:
            self._write(b"0\r\n\r\n")

    def send_json(self, status, obj):
        return self.send_full(status, (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8"),
                              "application/json")

    # -- request body --
    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            parts = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ValueError("truncated chunked body")
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while True:      # trailers
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(3)
            return b"".join(parts)
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        n = int(cl)
        if n < 0:
            raise ValueError("negative Content-Length")
        data = self.rfile.read(n)
        if len(data) != n:
            raise ValueError("short body")
        return data

    # -- dispatch --
    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        self._t0 = time.monotonic()
        path = self.path.split("?", 1)[0]
        query = urllib.parse.parse_qs(self.path.split("?", 1)[1]) if "?" in self.path else {}
        try:
            try:
                body = self.read_body() if method in ("POST", "PUT") else b""
            except ValueError:
                self.close_connection = True
                self.send_full(400, b"bad request body\n", "text/plain")
                self.log_access(400)
                return
            route = None
            gm = re.match(r"^(?:.*/)?models/([^/]+?):(generateContent|streamGenerateContent)$", path)
            em = re.match(r"^(?:.*/)?models/([^/]+?):(embedContent|batchEmbedContents)$", path)
            if method == "POST" and (path.endswith("/embeddings") or em):
                self.handle_embeddings("openai" if not em else "gemini",
                                       "openai.embeddings" if not em else "gemini." + em.group(2),
                                       urllib.parse.unquote(em.group(1)) if em else None, body, query)
                return
            if path.endswith("/chat/completions"):
                route = ("openai", "openai.chat_completions", None)
            elif gm:
                route = ("gemini", "gemini." + gm.group(2), urllib.parse.unquote(gm.group(1)))
            elif path == "/v1/messages" or path.endswith("/v1/messages"):
                route = ("anthropic", "anthropic.messages", None)
            if route:
                if method != "POST":
                    self.send_full(405, b"method not allowed\n", "text/plain", [("Allow", "POST")])
                    self.log_access(405)
                    return
                if BODY_LOG:
                    with STATE.lock, open(BODY_LOG, "ab") as f:
                        f.write(body + b"\n")
                self.handle_provider(route[0], route[1], route[2], body, query)
                return
            with STATE.lock:
                STATE.routes[path] += 1
            if method == "GET" and path == "/_health":
                self.send_full(200, b"ok", "text/plain; charset=utf-8")
                self.log_access(200)
            elif method == "GET" and path == "/_last":
                with STATE.lock:
                    data = json.dumps(STATE.last or {}, ensure_ascii=False, indent=2)
                self.send_full(200, (data + "\n").encode("utf-8"), "application/json")
                self.log_access(200)
            elif method == "GET" and path == "/_requests":
                with STATE.lock:
                    data = json.dumps(list(STATE.recent), ensure_ascii=False, indent=2)
                self.send_full(200, (data + "\n").encode("utf-8"), "application/json")
                self.log_access(200)
            elif method == "GET" and path == "/_stats":
                with STATE.lock:
                    stats = {"total": STATE.total, "streams": STATE.streams, "in_flight": STATE.in_flight,
                             "routes": dict(STATE.routes), "status": {str(k): v for k, v in STATE.statuses.items()},
                             "models": dict(STATE.models), "faults": dict(STATE.faults),
                             "latency_ms": STATE.latency_ms, "uptime_s": round(time.time() - STATE.started, 3)}
                self.send_json(200, stats)
                self.log_access(200)
            elif method == "POST" and path == "/_config":
                try:
                    cfg = json.loads(body or b"{}")
                    if not isinstance(cfg, dict):
                        raise ValueError("object expected")
                    if "latency_ms" in cfg:
                        v = _as_int(cfg["latency_ms"])
                        if v is None or v < 0:
                            raise ValueError("latency_ms must be a non-negative integer")
                        with STATE.lock:
                            STATE.latency_ms = v
                except ValueError as e:
                    self.send_json(400, {"error": str(e)})
                    self.log_access(400)
                    return
                with STATE.lock:
                    out = {"latency_ms": STATE.latency_ms}
                self.send_json(200, out)
                self.log_access(200)
            elif method == "POST" and path == "/_reset":
                STATE.reset()
                self.send_json(200, {"reset": True})
                self.log_access(200)
            else:
                self.send_json(404, {"error": {"message": "Invalid URL (%s %s)" % (method, path),
                                               "type": "invalid_request_error", "param": None, "code": None}})
                self.log_access(404)
        except ClientGone:
            self.close_connection = True

    # -- providers --
    def _record(self, provider, route, model, body_bytes, parsed):
        headers = {}
        for k, v in self.headers.items():
            if k.lower() in SECRET_HEADERS:
                v = "<redacted len=%d>" % len(v)
            headers[k] = v if k not in headers else headers[k] + ", " + v
        rec = {"time": now_iso(), "method": self.command, "path": redact_query(self.path),
               "route": route, "provider": provider, "model": model, "headers": headers,
               "body": parsed if parsed is not None else body_bytes.decode("utf-8", "replace")}
        return rec

    def _publish(self, rec):
        with STATE.lock:
            STATE.last = rec
            STATE.recent.append(rec)

    def _update(self, rec, **kw):
        with STATE.lock:
            new = dict(rec)
            new.update(kw)
            if STATE.last is rec:
                STATE.last = new
            for i, r in enumerate(STATE.recent):
                if r is rec:
                    STATE.recent[i] = new
        return new

    def _auth(self, provider, query):
        """Returns None when authorised, else (status, kind, message, code, details)."""
        key = None
        if provider == "openai":
            a = self.headers.get("Authorization")
            if a:
                key = a[7:].strip() if a[:7].lower() == "bearer " else ""
            if not key:
                return (401, "auth", "You didn't provide an API key. You need to provide your API key in an "
                        "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the "
                        "password field (with blank username) if you're accessing the API from your browser and "
                        "are prompted for a username and password. You can obtain an API key from "
                        "https://platform.openai.com/account/api-keys.", None, None)
        elif provider == "gemini":
            key = self.headers.get("x-goog-api-key") or (query.get("key") or [None])[0]
            if not key:
                st = 403 if STATE.gemini_real_auth else 401
                return (st, "auth", "Method doesn't allow unregistered callers (callers without established "
                        "identity). Please use API Key or other form of API consumer identity to call this API.",
                        None, None)
        else:
            key = self.headers.get("x-api-key")
            if not key:
                return (401, "auth", "x-api-key header is required", None, None)
        STATE.remember_secret(key)
        self.api_key = key
        if STATE.require_key is not None and not hmac.compare_digest(key.encode("utf-8", "replace"),
                                                                     STATE.require_key.encode("utf-8")):
            if provider == "openai":
                return (401, "auth", "Incorrect API key provided. You can find your API key at "
                        "https://platform.openai.com/account/api-keys.", "invalid_api_key", None)
            if provider == "gemini":
                st = 400 if STATE.gemini_real_auth else 401
                return (st, "auth", "API key not valid. Please pass a valid API key.", None,
                        [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                          "domain": "googleapis.com",
                          "metadata": {"service": "generativelanguage.googleapis.com"}},
                         {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
                          "message": "API key not valid. Please pass a valid API key."}])
            return (401, "auth", "invalid x-api-key", None, None)
        if provider == "anthropic" and not self.headers.get("anthropic-version"):
            return (400, "invalid_request", "anthropic-version: header is required", None, None)
        return None

    def _provider_headers(self, provider, rid):
        if provider == "openai":
            return [("x-request-id", "req_" + rand_str(32, "0123456789abcdef")),
                    ("openai-processing-ms", "1"), ("openai-version", "2020-10-01")]
        if provider == "anthropic":
            return [("request-id", "req_011" + rand_str(21))]
        return [("Vary", "Origin"), ("Vary", "X-Origin"), ("Vary", "Referer"),
                ("X-Content-Type-Options", "nosniff")]

    def send_provider_error(self, provider, status, kind, message, param=None, code=None, details=None,
                            extra=()):
        obj = error_obj(provider, status, kind, message, param, code, details)
        ctype = "application/json; charset=UTF-8" if provider == "gemini" else "application/json"
        self.send_full(status, error_bytes(provider, obj), ctype,
                       self._provider_headers(provider, None) + list(extra))
        return status

    def handle_embeddings(self, provider, route, path_model, body_bytes, query):
        """OpenAI POST .../embeddings, Gemini models/{m}:embedContent and
        :batchEmbedContents: each text's embedding_vector (see there)."""
        model = path_model
        try:
            parsed = json.loads(body_bytes.decode("utf-8")) if body_bytes else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        if provider == "openai" and isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
            model = parsed["model"]
        rec = self._record(provider, route, model, body_bytes, parsed)
        self._publish(rec)
        with STATE.lock:
            STATE.total += 1
            STATE.routes[route] += 1
            STATE.models[model or "-"] += 1
        status = "-"
        try:
            # latency: only a per-model token (e.g. emb-latency-3000), so the
            # default latency of chat calls leaves embeddings instant
            m = LATENCY_RE.search(model or "")
            if m and int(m.group(1)) > 0:
                time.sleep(int(m.group(1)) / 1000.0)
            denied = self._auth(provider, query)
            if denied:
                st, kind, msg, code, details = denied
                status = self.send_provider_error(provider, st, kind, msg, code=code, details=details)
                return
            if FAULT_MODEL_RE.search((model or "").lower()):
                st, kind, msgs = CANNED["500"]
                status = self.send_provider_error(provider, st, kind, msgs[provider])
                return
            texts = None
            if provider == "openai" and isinstance(parsed, dict):
                inp = parsed.get("input")
                texts = [inp] if isinstance(inp, str) else inp
            elif isinstance(parsed, dict) and route.endswith("batchEmbedContents"):
                texts = [embed_text(r.get("content")) for r in (parsed.get("requests") or [])
                         if isinstance(r, dict)]
            elif isinstance(parsed, dict):
                texts = [embed_text(parsed.get("content"))]
            if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                status = self.send_provider_error(provider, 400, "invalid_request",
                                                  "the request needs the texts to embed")
                return
            vectors = [embedding_vector(t) for t in texts]
            if provider == "openai":
                out = {"object": "list", "model": model,
                       "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                       "usage": {"prompt_tokens": sum(len(t) // 4 + 1 for t in texts),
                                 "total_tokens": sum(len(t) // 4 + 1 for t in texts)}}
            elif route.endswith("batchEmbedContents"):
                out = {"embeddings": [{"values": v} for v in vectors]}
            else:
                out = {"embedding": {"values": vectors[0]}}
            self.send_json(200, out)
            status = 200
        finally:
            self._update(rec, status=status)
            with STATE.lock:
                STATE.statuses[status] += 1
            self.log_access(status, model, " embeddings=1")

    def handle_provider(self, provider, route, path_model, body_bytes, query):
        model = path_model
        parsed = None
        bad_json = False
        try:
            parsed = json.loads(body_bytes.decode("utf-8")) if body_bytes else None
        except (ValueError, UnicodeDecodeError):
            bad_json = True
        if provider != "gemini" and isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
            model = parsed["model"]
        rec = self._record(provider, route, model, body_bytes, parsed)
        self._publish(rec)
        with STATE.lock:
            STATE.total += 1
            STATE.in_flight += 1
            STATE.routes[route] += 1
            STATE.models[model or "-"] += 1
        status = "-"
        fault = None
        streaming = False
        try:
            # latency: per-model token > /_config > --latency-ms
            with STATE.lock:
                latency = STATE.latency_ms
            m = LATENCY_RE.search(model or "")
            if m:
                latency = int(m.group(1))
            if latency > 0:
                time.sleep(latency / 1000.0)

            denied = self._auth(provider, query)
            if denied:
                st, kind, msg, code, details = denied
                status = self.send_provider_error(provider, st, kind, msg, code=code, details=details)
                return
            if bad_json or (parsed is None):
                if provider == "openai":
                    msg = ("We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                           "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
                           "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
                           "contact us through our help center at help.openai.com.)")
                elif provider == "gemini":
                    msg = "Invalid JSON payload received. Unexpected token.\n"
                else:
                    msg = "There was an error parsing the body of your request. Please check that it is valid JSON."
                status = self.send_provider_error(provider, 400, "invalid_request", msg)
                return
            try:
                if provider == "openai":
                    conv = parse_openai(parsed)
                elif provider == "gemini":
                    conv = parse_gemini(parsed, path_model)
                    conv.stream = route.endswith("streamGenerateContent")
                else:
                    conv = parse_anthropic(parsed)
                conv.cache = prompt_cache(provider, parsed, path_model if provider == "gemini" else conv.model)
            except BadRequest as e:
                status = self.send_provider_error(provider, 400, "invalid_request", e.message, e.param, e.code)
                return
            streaming = conv.stream
            sse = provider != "gemini" or (query.get("alt") or [""])[0] == "sse"

            fm = FAULT_MODEL_RE.search((conv.model or "").lower())
            fault = fm.group(1) if fm else None
            if not fault:
                tm = FAULT_TEXT_RE.search(conv.last_user_text())
                fault = tm.group(1).lower() if tm else None
            if fault == "429":
                h = hashlib.sha256(route.encode() + b"\0" + body_bytes).hexdigest()
                with STATE.lock:
                    first = h not in STATE.seen_429
                    STATE.seen_429.add(h)
                if not first:
                    fault = None       # the retry succeeds
            elif fault in ("reset-once", "hang-once"):
                h = hashlib.sha256(fault.encode() + b"\0" + route.encode() + b"\0" + body_bytes).hexdigest()
                with STATE.lock:
                    first = h not in STATE.seen_429
                    STATE.seen_429.add(h)
                fault = fault[:-len("-once")] if first else None
            if fault:
                with STATE.lock:
                    STATE.faults[fault] += 1

            ans = script(conv)
            rec = self._update(rec, system=conv.system, tools=conv.tools, stream=conv.stream, fault=fault,
                         messages=conv.messages, answer=ans.summary())
            if ECHO_KEY_MARK in conv.last_user_text():
                echo_key(ans, self.api_key)
            status = self.respond(provider, conv, ans, fault, sse)
        except ClientGone:
            status = "client-gone"
        finally:
            self._update(rec, status=status)
            with STATE.lock:
                STATE.in_flight -= 1
                STATE.statuses[status] += 1
                if streaming:
                    STATE.streams += 1
            self.log_access(status, model, " stream=%d fault=%s" % (1 if streaming else 0, fault or "-"))

    # -- the response, with faults --
    def respond(self, provider, conv, ans, fault, sse):
        rid = {"openai": "chatcmpl-" + rand_str(29),
               "gemini": rand_str(23, string.ascii_letters + string.digits + "_-"),
               "anthropic": "msg_01" + rand_str(22)}[provider]
        created = int(time.time())
        hdrs = self._provider_headers(provider, rid)

        if fault == "reset":
            # no answer: the connection is reset (RST, SO_LINGER 0)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return "reset"
        if fault == "hang":
            STATE.log("%s %s %s model=%s status=hang (sleeping %ds)" % (
                now_iso(), self.command, redact_query(self.path), conv.model, HANG_SECONDS))
            time.sleep(HANG_SECONDS)
            self.close_connection = True
            return "hang"
        if fault in ("500", "400", "429", "429-always", "overloaded") or (fault == "stream-error" and not conv.stream):
            key = {"429-always": "429", "stream-error": "overloaded"}.get(fault, fault)
            st, kind, msgs = CANNED[key]
            if key == "overloaded" and provider == "anthropic":
                st = 529
            extra, details = [], None
            if st == 429:
                extra = [("Retry-After", "1")]
                if provider == "openai":
                    extra += [("x-ratelimit-limit-requests", "3"), ("x-ratelimit-remaining-requests", "0"),
                              ("x-ratelimit-reset-requests", "1s")]
                if provider == "anthropic":
                    extra += [("anthropic-ratelimit-requests-limit", "50"),
                              ("anthropic-ratelimit-requests-remaining", "0")]
                if provider == "gemini":
                    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
            code = "rate_limit_exceeded" if (st == 429 and provider == "openai") else None
            return self.send_provider_error(provider, st, kind, msgs[provider], code=code, details=details,
                                            extra=extra)

        if fault == "key-error":
            # an auth error that quotes the key in full
            return self.send_provider_error(provider, 401, "auth",
                                            "Incorrect API key provided: %s." % self.api_key,
                                            code="invalid_api_key" if provider == "openai" else None)
        if fault == "redirect":
            self._write(self._head(302, [("Location", REDIRECT_LOCATION), ("Content-Length", "0")]))
            return 302
        if fault == "stream-error-empty" and not conv.stream:
            body = error_bytes(provider, stream_error_frame_obj(provider))
            self.send_full(500, body, "application/json", hdrs)
            return 500
        if fault == "huge-usage":
            ans.prompt_tokens, ans.completion_tokens = HUGE_TOKENS
        if fault == "empty-finish":
            ans.text = ""
            ans.calls = []
            ans.finish = ""
        if fault == "oversized":
            filler = "The quick brown fox jumps over the lazy dog. "
            ans.text = (filler * (OVERSIZED_CHARS // len(filler) + 1))[:OVERSIZED_CHARS]
            ans.calls = []
            ans.finish = "stop"
            ans.completion_tokens = len(ans.text) // 4 + 1
        if fault == "badutf8":
            ans.text = "bad bytes: " + BADUTF8_MARK + " end"
            ans.calls = []
            ans.finish = "stop"

        text_chunk = TEXT_CHUNK
        if fault == "oversized":
            text_chunk = OVERSIZED_STREAM_CHUNK
        elif fault == "badutf8":
            text_chunk = 1 << 30

        def fix(b):
            b = RAW_NUM_BYTES_RE.sub(rb"\1", b)
            return b.replace(BADUTF8_MARK.encode(), b"\xff\xfe") if fault == "badutf8" else b

        if not conv.stream:
            if provider == "openai":
                body, ctype = openai_body(conv, ans, rid, created), "application/json"
            elif provider == "gemini":
                body, ctype = gemini_body(conv, ans, rid), "application/json; charset=UTF-8"
            else:
                body, ctype = anthropic_body(conv, ans, rid), "application/json"
            body = fix(body)
            if fault == "malformed":
                body = {"openai": b'{"choices": [',
                        "gemini": b'{\n  "candidates": [\n',
                        "anthropic": b'{"id":"' + rid.encode() + b'","type":"message","content":['}[provider]
            elif fault == "truncated":
                body = body[:max(1, len(body) // 2)]
            elif fault == "stall":
                self._write(self._head(200, [("Content-Type", ctype), ("Content-Length", str(len(body)))] + hdrs)
                            + body[:len(body) // 2])
                time.sleep(HANG_SECONDS)
                self.close_connection = True
                return "stall"
            return self.send_full(200, body, ctype, hdrs)

        # streaming
        if provider == "openai":
            st = openai_stream(conv, ans, rid, created, text_chunk)
            ctype = "text/event-stream; charset=utf-8"
        elif provider == "gemini":
            st = gemini_stream(conv, ans, rid, sse, text_chunk)
            ctype = "text/event-stream" if sse else "application/json; charset=UTF-8"
        else:
            st = anthropic_stream(conv, ans, rid, text_chunk)
            ctype = "text/event-stream; charset=utf-8"
        frames = [fix(f) for f in st.frames]
        delay = 0.0
        dm = STREAM_DELAY_RE.search(conv.model or "")
        if dm:
            delay = int(dm.group(1)) / 1000.0
        self.start_stream(200, ctype, hdrs)

        def send(fs):
            for i, f in enumerate(fs):
                if delay and i:
                    time.sleep(delay)
                self.stream_write(f)

        if fault == "truncated":
            send(frames[:max(0, min(4, st.n_safe))])
            self.close_connection = True        # no terminator, no final chunk: connection just drops
            return "200-truncated"
        if fault == "stall":
            send(frames[:max(0, min(4, st.n_safe))])
            time.sleep(HANG_SECONDS)
            self.close_connection = True
            return "200-stall"
        if fault in ("stream-error", "stream-error-empty"):
            send(frames[:max(0, min(3, st.n_safe))])
            self.stream_write(stream_error_frame(provider, sse, fault == "stream-error-empty"))
            self.end_stream()
            return "200-stream-error"
        if fault == "malformed":
            send(frames[:1])
            bad = {"openai": b'data: {"choices": [\n\n', "gemini": b'data: {"candidates": [\r\n\r\n',
                   "anthropic": b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
                                b'"delta": {\n\n'}[provider]
            if provider == "gemini" and not sse:
                bad = b',\r\n{"candidates": ['
            self.stream_write(bad)
            if provider == "openai":
                self.stream_write(b"data: [DONE]\n\n")
            self.end_stream()
            return "200-malformed"
        send(frames)
        self.end_stream()
        return 200


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 512

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, ClientGone)):
            return
        STATE.log("%s error %s: %s" % (now_iso(), type(exc).__name__, str(exc)[:300]))


def main(argv=None):
    global STATE, BODY_LOG
    ap = argparse.ArgumentParser(description="Mock OpenAI / Gemini / Anthropic model server (stdlib only).")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (0 = pick a free one)")
    ap.add_argument("--port-file", help="write the chosen port here (atomically) once listening")
    ap.add_argument("--latency-ms", type=int, default=0, help="default delay before each provider response")
    ap.add_argument("--log", help="append one line per request to this file (default: stderr)")
    ap.add_argument("--body-log", help="append each provider request's body, byte for byte, and a newline "
                                       "to this file (for comparing what builds send; bodies are compact JSON)")
    ap.add_argument("--require-key", help="only this API key is accepted (others get 401)")
    ap.add_argument("--require-key-env", metavar="VAR",
                    help="like --require-key, but read the key from environment variable VAR")
    ap.add_argument("--gemini-real-auth-codes", action="store_true",
                    help="Gemini auth failures use the real codes (403 missing key, 400 invalid key) "
                         "instead of 401")
    args = ap.parse_args(argv)

    key = args.require_key
    if args.require_key_env:
        key = os.environ.get(args.require_key_env)
        if not key:
            ap.error("environment variable %s is empty or unset" % args.require_key_env)
    STATE = State(max(0, args.latency_ms), args.log, key, args.gemini_real_auth_codes)
    BODY_LOG = args.body_log

    server = Server(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]
    if args.port_file:
        tmp = "%s.tmp.%d" % (args.port_file, os.getpid())
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    STATE.log("%s model_server %s listening on 127.0.0.1:%d (pid %d)" % (now_iso(), VERSION, port, os.getpid()))

    def on_term(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        STATE.log("%s model_server stopped" % now_iso())
    return 0


if __name__ == "__main__":
    sys.exit(main())
