// test/interop/interop.mjs -- ADK-JS (@google/adk 2.0.0, DatabaseSessionService
// over PostgreSQL through MikroORM 6.6.16) sharing adk_runner's session tables
// in schema adk.  Started by run.sh, which makes the throw-away cluster and
// passes it in ADK_INTEROP_* variables.  Each check prints `ok - name` or
// `not ok - name: why` (details follow as `#` lines); run.sh counts them.
//
//   ADK_INTEROP_PGHOST, ADK_INTEROP_PGPORT, ADK_INTEROP_DB, ADK_INTEROP_PGUSER
//   ADK_INTEROP_PGBIN   directory of pg_dump
//   ADK_INTEROP_PGLOG   the server's log (log_statement=all), to see what
//                       ADK-JS's schema sync ran
//   ADK_INTEROP_MODEL_URL  the local model server (test/model_server/), which
//                       ADK-JS's Runner and adk_run both talk to (section 9:
//                       turns taken in turn and at once, confirmations
//                       answered on the other side, compaction events)
//
// `node interop.mjs --restart-probe APP USER SESSION` is the child process
// used to start ADK-JS in a fresh process (its schema sync runs again).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

import {
  DatabaseSessionService, createEvent, State, Runner, LlmAgent, FunctionTool, Gemini,
  setLogLevel, LogLevel,
} from '@google/adk';
import pg from 'pg';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const env = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (dflt !== undefined) return dflt;
    throw new Error(`${name} is not set (run this through run.sh)`);
  }
  return v;
};
const PGHOST = env('ADK_INTEROP_PGHOST', '127.0.0.1');
const PGPORT = env('ADK_INTEROP_PGPORT');
const DB = env('ADK_INTEROP_DB');
const PGUSER = env('ADK_INTEROP_PGUSER', 'postgres');
const PGBIN = env('ADK_INTEROP_PGBIN', '/usr/lib/postgresql/15/bin');
const PGLOG = process.env.ADK_INTEROP_PGLOG || '';
const MODEL_URL = process.env.ADK_INTEROP_MODEL_URL || '';

// How ADK-JS is pointed at our schema (see shared/ADK_SCHEMA.md).
const ADK_URL = `postgresql://${encodeURIComponent(PGUSER)}@${PGHOST}:${PGPORT}/${DB}?schema=adk`;
const SQL_URL = `postgresql://${encodeURIComponent(PGUSER)}@${PGHOST}:${PGPORT}/${DB}`;

const APP = 'interop_app';
const USER = 'user-1';
const AGENT = 'weather_agent';

// ---------------------------------------------------------------- helpers

function adkService() {
  return new DatabaseSessionService(ADK_URL);
}

async function closeService(svc) {
  // `orm` is private in the .d.ts, but it is the only way to end the pool.
  if (svc && svc.orm) await svc.orm.close(true);
}

// ADK-JS's own snake_case conversion, the one its DatabaseSessionService
// applies to event_data (not exported from the package index, so loaded by
// path; the version is pinned).
const adkEventModule = await import(pathToFileURL(path.join(
  HERE, 'node_modules/@google/adk/dist/esm/events/event.js')).href);
const toSnake = (ev) => JSON.parse(JSON.stringify(adkEventModule.transformToSnakeCaseEvent(ev)));

function stable(v) {
  // JSON with sorted keys, for messages and order-insensitive comparison
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function firstDifference(a, b, where = '$') {
  if (isDeepStrictEqual(a, b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of [...keys].sort()) {
      const d = firstDifference(a[k], b[k], Array.isArray(a) ? `${where}[${k}]` : `${where}.${k}`);
      if (d) return d;
    }
  }
  return `${where}: ${stable(a)} vs ${stable(b)}`;
}

class CheckFailure extends Error {
  constructor(message, details = []) {
    super(message);
    this.details = details;
  }
}
function fail(message, details = []) {
  throw new CheckFailure(message, Array.isArray(details) ? details : String(details).split('\n'));
}
function expect(cond, message, details) {
  if (!cond) fail(message, details);
}
function expectEqual(actual, expected, what) {
  const d = firstDifference(actual, expected);
  if (d) fail(`${what} differs`, [`first difference (actual vs expected): ${d}`]);
}

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    const note = await fn();
    passed++;
    console.log(`ok - ${name}${note ? ` # ${note}` : ''}`);
    return true;
  } catch (e) {
    failed++;
    const msg = (e && e.message ? e.message : String(e)).split('\n');
    console.log(`not ok - ${name}: ${msg[0]}`);
    const details = [...msg.slice(1), ...((e && e.details) || [])];
    if (!(e instanceof CheckFailure) && e && e.stack) {
      details.push(...e.stack.split('\n').slice(1, 6));
    }
    if (e && e.code && !(e instanceof CheckFailure)) details.unshift(`SQLSTATE/code ${e.code}${e.detail ? `: ${e.detail}` : ''}`);
    for (const line of details) console.log(`#   ${line}`);
    return false;
  }
}

function note(line) {
  console.log(`# ${line}`);
}

// -------------------------------------------------------------- SQL side

const sqlPool = new pg.Pool({ connectionString: SQL_URL, max: 8, application_name: 'interop-sql' });
const q = async (text, params) => (await sqlPool.query(text, params)).rows;

async function sqlAppend(sessionId, event) {
  const rows = await q('SELECT adk_append_event($1, $2, $3, $4::jsonb) AS e', [APP, USER, sessionId, JSON.stringify(event)]);
  return rows[0].e;
}
async function sqlGet(sessionId, numRecent = null, afterSeq = null) {
  const rows = await q('SELECT adk_get_session($1, $2, $3, $4, $5) AS s', [APP, USER, sessionId, numRecent, afterSeq]);
  return rows[0].s;
}
async function eventRows(sessionId) {
  return q(`SELECT id, seq, invocation_id,
                   trim_scale(extract(epoch FROM "timestamp") * 1000)::text AS ts_ms,
                   event_data, event_data->>'timestamp' AS data_ts
              FROM adk.events
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             ORDER BY seq`, [APP, USER, sessionId]);
}
async function scopeRows(sessionId) {
  const [app] = await q('SELECT state FROM adk.app_states WHERE app_name = $1', [APP]);
  const [user] = await q('SELECT state FROM adk.user_states WHERE app_name = $1 AND user_id = $2', [APP, USER]);
  const [sess] = await q(`SELECT state, last_seq, update_time,
                                 trim_scale(extract(epoch FROM update_time) * 1000)::text AS update_ms,
                                 trim_scale(extract(epoch FROM last_event_time) * 1000)::text AS last_event_ms
                            FROM adk.sessions WHERE app_name = $1 AND user_id = $2 AND id = $3`,
  [APP, USER, sessionId]);
  return { app: app && app.state, user: user && user.state, session: sess };
}

// ------------------------------------------------------------- pg_dump

function pgDump(extraArgs) {
  const args = ['-h', PGHOST, '-p', String(PGPORT), '-U', PGUSER, '--schema-only', ...extraArgs, DB];
  const r = spawnSync(path.join(PGBIN, 'pg_dump'), args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`pg_dump ${args.join(' ')} failed: ${r.stderr || r.error}`);
  return r.stdout
    .split('\n')
    // per-dump random key of \restrict (pg_dump 15.14+), and the freeze
    // horizon that --binary-upgrade records (vacuum may move it)
    .filter((l) => !/^\\(un)?restrict /.test(l))
    .map((l) => l.replace(/relfrozenxid = '\d+', relminmxid = '\d+'/, "relfrozenxid = 'X', relminmxid = 'X'"))
    .join('\n');
}

function dumps() {
  return {
    // the dump as asked for; it holds no extension member, see below
    adkSchema: pgDump(['--schema=adk']),
    // pg_dump leaves out an extension's member objects (all of schema adk is
    // one); only --binary-upgrade writes them, with ALTER EXTENSION ... ADD
    members: pgDump(['--binary-upgrade']),
  };
}

function unifiedDiff(before, after, label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interop-diff-'));
  const a = path.join(dir, `${label}.before.sql`);
  const b = path.join(dir, `${label}.after.sql`);
  fs.writeFileSync(a, before);
  fs.writeFileSync(b, after);
  const r = spawnSync('diff', ['-u', a, b], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  return (r.stdout || String(r.error || '')).split('\n').filter((l) => l !== '');
}

// Statements that change the schema, from the server log (log_statement=all).
function ddlInLog(fromOffset) {
  if (!PGLOG) return null;
  const text = fs.readFileSync(fs.openSync(PGLOG, 'r')).subarray(fromOffset).toString('utf8');
  // one log entry = its first line plus tab-indented continuation lines; a
  // multi-statement query string (MikroORM sends the sync as one) spans many
  const entries = [];
  for (const line of text.split('\n')) {
    if (/^\t/.test(line) && entries.length) entries[entries.length - 1].push(line);
    else entries.push([line]);
  }
  const ddl = /^\s*(comment|alter|create|drop|truncate|grant|revoke|reindex|cluster|vacuum|security\s+label)\b/i;
  const found = [];
  for (const e of entries) {
    const m = /\bstatement: (.*)$/.exec(e[0]);
    if (!m) continue;
    const stmts = [m[1], ...e.slice(1).map((l) => l.replace(/^\t/, ''))];
    const hits = stmts.filter((s) => ddl.test(s));
    if (hits.length) found.push(`${e[0].slice(0, e[0].indexOf('statement:'))}statement(s):`, ...hits.map((s) => `    ${s}`));
  }
  return found;
}
const logSize = () => (PGLOG && fs.existsSync(PGLOG) ? fs.statSync(PGLOG).size : 0);

// ------------------------------------------------- restart probe (child)

if (process.argv[2] === '--restart-probe') {
  const [, , , app, user, sessionId] = process.argv;
  const svc = adkService();
  try {
    await svc.init();
    const s = await svc.getSession({ appName: app, userId: user, sessionId });
    process.stdout.write(JSON.stringify({ ids: s ? s.events.map((e) => e.id) : null, state: s ? s.state : null }));
  } finally {
    await closeService(svc);
    await sqlPool.end();
  }
  process.exit(0);
}

// ------------------------------------------------------------- the test

const JS_SESSION = 'js-session-1';
const SQL_SESSION = 'sql-session-1';
const DEL_SESSION = 'sql-session-del';
const CONCURRENT = 40;

let before = null;
let svc1 = null;
let svc2 = null;
let logOffset = 0;
let jsSession = null; // the Session object ADK-JS created and keeps appending with
const jsEventIds = [];

async function main() {
  // 1. the schema before ADK-JS has ever started on it
  await check('1 pg_dump --schema-only of adk before ADK-JS starts', async () => {
    before = dumps();
    expect(/CREATE TABLE adk\.events \(/.test(before.members), 'dump holds no CREATE TABLE adk.events');
    return 'binary-upgrade dump: extension members included';
  });

  // 2. two starts; each runs ADK-JS's schema sync
  logOffset = logSize();
  await check('2a ADK-JS DatabaseSessionService first start on ?schema=adk', async () => {
    svc1 = adkService();
    await svc1.init();
  });
  await check('2b ADK-JS DatabaseSessionService second start (schema sync again)', async () => {
    svc2 = adkService();
    await svc2.init();
  });
  await check("2c ADK-JS's schema sync ran no DDL on our tables", async () => {
    const ddl = ddlInLog(logOffset);
    if (ddl === null) fail('no server log (ADK_INTEROP_PGLOG) to read');
    expect(ddl.length === 0, "ADK-JS ran schema-changing statements at start (from the server log)", ddl);
  });
  if (!svc1 || !svc1.initialized || !svc2 || !svc2.initialized) {
    note('ADK-JS did not start; the remaining checks need it');
    return;
  }

  // 3. ADK-JS writes a session of its own
  await check('3a ADK-JS createSession with app:, user:, plain and temp: state', async () => {
    jsSession = await svc1.createSession({
      appName: APP, userId: USER, sessionId: JS_SESSION,
      state: { 'app:greeting': 'hello', 'user:name': 'Ada', topic: 'weather', 'temp:scratch': 1 },
    });
    const rows = await scopeRows(JS_SESSION);
    expect(rows.session, 'no adk.sessions row');
    expectEqual(rows.app, { greeting: 'hello' }, 'adk.app_states.state');
    expectEqual(rows.user, { name: 'Ada' }, 'adk.user_states.state');
    expectEqual(rows.session.state, { topic: 'weather' }, 'adk.sessions.state');
    expect(Number(rows.session.last_seq) === 0, `last_seq is ${rows.session.last_seq}, want 0`);
    const viaSql = await sqlGet(JS_SESSION);
    expectEqual(viaSql.state, { 'app:greeting': 'hello', 'user:name': 'Ada', topic: 'weather' }, 'adk_get_session state');
  });

  const jsEvents = [
    createEvent({
      invocationId: 'inv-js-1', author: 'user',
      content: { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] },
    }),
    createEvent({
      invocationId: 'inv-js-1', author: AGENT,
      content: { role: 'model', parts: [{ functionCall: { id: 'adk-call-paris', name: 'get_weather', args: { city_name: 'Paris', unitSystem: 'metric' } } }] },
    }),
    createEvent({
      invocationId: 'inv-js-1', author: AGENT,
      content: { role: 'user', parts: [{ functionResponse: { id: 'adk-call-paris', name: 'get_weather', response: { temp_c: 21, skyState: 'clear' } } }] },
    }),
    createEvent({
      invocationId: 'inv-js-1', author: AGENT,
      content: { role: 'model', parts: [{ text: 'It is 21 °C and clear in Paris.' }] },
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 9, totalTokenCount: 21 },
      turnComplete: true,
    }),
    createEvent({
      invocationId: 'inv-js-1', author: AGENT,
      actions: { stateDelta: { 'app:js_app_key': 'a1', 'user:js_user_key': 'u1', js_plain: 1, 'temp:js_temp': 'x' } },
    }),
  ];
  await check('3b ADK-JS appendEvent: user text, function_call, function_response, final text, state_delta', async () => {
    for (const ev of jsEvents) {
      await svc1.appendEvent({ session: jsSession, event: ev });
      jsEventIds.push(ev.id);
    }
    const rows = await eventRows(JS_SESSION);
    expectEqual(rows.map((r) => r.id), jsEventIds, 'stored event ids in seq order');
    expectEqual(rows.map((r) => Number(r.seq)), [1, 2, 3, 4, 5], 'seq');
  });

  await check('3c ADK-JS event_data is ADK snake_case JSON', async () => {
    const d = (await eventRows(JS_SESSION)).map((r) => r.event_data);
    expect(d.length === 5, `${d.length} events stored`);
    const problems = [];
    d.forEach((e, i) => {
      for (const k of ['id', 'invocation_id', 'author', 'actions', 'long_running_tool_ids', 'timestamp']) {
        if (!(k in e)) problems.push(`event ${i + 1}: no "${k}"`);
      }
      for (const k of ['invocationId', 'longRunningToolIds', 'usageMetadata', 'turnComplete']) {
        if (k in e) problems.push(`event ${i + 1}: camelCase key "${k}"`);
      }
      for (const k of ['state_delta', 'artifact_delta', 'requested_auth_configs', 'requested_tool_confirmations']) {
        if (!(e.actions && k in e.actions)) problems.push(`event ${i + 1}: actions.${k} missing`);
      }
    });
    const fc = d[1].content.parts[0].function_call;
    if (!isDeepStrictEqual(fc, { id: 'adk-call-paris', name: 'get_weather', args: { city_name: 'Paris', unitSystem: 'metric' } })) {
      problems.push(`event 2 function_call: ${stable(d[1].content.parts[0])}`);
    }
    const fr = d[2].content.parts[0].function_response;
    if (!isDeepStrictEqual(fr, { id: 'adk-call-paris', name: 'get_weather', response: { temp_c: 21, skyState: 'clear' } })) {
      problems.push(`event 3 function_response: ${stable(d[2].content.parts[0])}`);
    }
    if (!(d[3].usage_metadata && d[3].usage_metadata.prompt_token_count === 12)) {
      problems.push(`event 4 usage_metadata: ${stable(d[3].usage_metadata)}`);
    }
    if (d[4].actions.state_delta['temp:js_temp'] !== undefined) problems.push('event 5 kept temp: key in state_delta');
    expect(problems.length === 0, `${problems.length} problem(s)`, problems);
  });

  await check('3d ADK-JS state_delta lands by scope (app/user/session, temp: not stored)', async () => {
    const rows = await scopeRows(JS_SESSION);
    expectEqual(rows.app, { greeting: 'hello', js_app_key: 'a1' }, 'adk.app_states.state');
    expectEqual(rows.user, { name: 'Ada', js_user_key: 'u1' }, 'adk.user_states.state');
    expectEqual(rows.session.state, { topic: 'weather', js_plain: 1 }, 'adk.sessions.state');
    expect(Number(rows.session.last_seq) === 5, `sessions.last_seq is ${rows.session.last_seq}, want 5`);
  });

  // 4. SQL appends to the session ADK-JS created
  const sqlEvents = [
    { id: 'sql-ev-1', author: 'user', invocation_id: 'inv-sql-1', content: { role: 'user', parts: [{ text: 'And in Berlin?' }] } },
    { id: 'sql-ev-2', author: AGENT, invocation_id: 'inv-sql-1', content: { role: 'model', parts: [{ function_call: { id: 'sql-call-berlin', name: 'get_weather', args: { city_name: 'Berlin' } } }] } },
    { id: 'sql-ev-3', author: AGENT, invocation_id: 'inv-sql-1', content: { role: 'user', parts: [{ function_response: { id: 'sql-call-berlin', name: 'get_weather', response: { temp_c: 15 } } }] } },
    {
      id: 'sql-ev-4', author: AGENT, invocation_id: 'inv-sql-1',
      content: { role: 'model', parts: [{ text: 'It is 15 °C in Berlin.' }] },
      actions: { state_delta: { 'app:sql_app_key': 'a2', 'user:sql_user_key': 'u2', sql_plain: 2, 'temp:sql_temp': 't' } },
    },
  ];
  await check('4a SQL adk_append_event to the ADK-JS session (state_delta app:/user:/plain/temp:)', async () => {
    const returned = [];
    for (const ev of sqlEvents) returned.push(await sqlAppend(JS_SESSION, ev));
    const problems = [];
    returned.forEach((r, i) => {
      if (!Number.isInteger(r.timestamp)) problems.push(`returned event ${i + 1} timestamp ${stable(r.timestamp)} is not integer ms`);
    });
    const last = returned[3];
    if (last.actions.state_delta['temp:sql_temp'] !== undefined) problems.push(`returned event keeps temp: key: ${stable(last.actions.state_delta)}`);
    const rows = await eventRows(JS_SESSION);
    expectEqual(rows.map((r) => Number(r.seq)), [1, 2, 3, 4, 5, 6, 7, 8, 9], 'seq');
    if (rows[8].event_data.actions.state_delta['temp:sql_temp'] !== undefined) problems.push('stored event keeps temp: key');
    const st = await scopeRows(JS_SESSION);
    if (!isDeepStrictEqual(st.app, { greeting: 'hello', js_app_key: 'a1', sql_app_key: 'a2' })) problems.push(`app_states.state ${stable(st.app)}`);
    if (!isDeepStrictEqual(st.user, { name: 'Ada', js_user_key: 'u1', sql_user_key: 'u2' })) problems.push(`user_states.state ${stable(st.user)}`);
    if (!isDeepStrictEqual(st.session.state, { topic: 'weather', js_plain: 1, sql_plain: 2 })) problems.push(`sessions.state ${stable(st.session.state)}`);
    expect(problems.length === 0, `${problems.length} problem(s)`, problems);
  });

  await check('4b ADK-JS getSession reads the SQL-appended events and state', async () => {
    const s = await svc2.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    expect(s, 'getSession returned undefined');
    expectEqual(s.events.map((e) => e.id), [...jsEventIds, ...sqlEvents.map((e) => e.id)], 'event ids');
    const fc = s.events[6].content.parts[0].functionCall;
    expectEqual(fc, { id: 'sql-call-berlin', name: 'get_weather', args: { city_name: 'Berlin' } }, 'functionCall of SQL event 2');
    const fr = s.events[7].content.parts[0].functionResponse;
    expectEqual(fr, { id: 'sql-call-berlin', name: 'get_weather', response: { temp_c: 15 } }, 'functionResponse of SQL event 3');
    expect(s.events[5].invocationId === 'inv-sql-1' && s.events[5].author === 'user', `event 6: ${stable(s.events[5])}`);
    expectEqual(s.state, {
      'app:greeting': 'hello', 'app:js_app_key': 'a1', 'app:sql_app_key': 'a2',
      'user:name': 'Ada', 'user:js_user_key': 'u1', 'user:sql_user_key': 'u2',
      topic: 'weather', js_plain: 1, sql_plain: 2,
    }, 'merged state');
  });

  await check('4c ADK-JS appends with its stale Session object after SQL writes (reload path)', async () => {
    const ev = createEvent({
      invocationId: 'inv-js-2', author: 'user',
      content: { role: 'user', parts: [{ text: 'Thanks!' }] },
      actions: { stateDelta: { js_plain: 3 } },
    });
    await svc1.appendEvent({ session: jsSession, event: ev });
    jsEventIds.push(ev.id);
    const rows = await eventRows(JS_SESSION);
    expectEqual(rows.map((r) => r.id), [...jsEventIds.slice(0, 5), ...sqlEvents.map((e) => e.id), ev.id], 'stored ids in seq order');
    // ADK-JS reloaded the events it had not seen before appending
    expectEqual(jsSession.events.map((e) => e.id), rows.map((r) => r.id), "ids in ADK-JS's in-memory session");
    expect(jsSession.state.sql_plain === 2 && jsSession.state.js_plain === 3 && jsSession.state['app:sql_app_key'] === 'a2',
      `in-memory state after reload: ${stable(jsSession.state)}`);
  });

  // 5. both sides append to one session at the same time
  let concurrentIds = [];
  await check(`5 concurrent appends: ${CONCURRENT} ADK-JS (two service instances) + ${CONCURRENT} SQL to one session`, async () => {
    const a = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const b = await svc2.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const tasks = [];
    const errors = [];
    for (let i = 0; i < CONCURRENT; i++) {
      const jsEv = createEvent({
        invocationId: `inv-js-c${i}`, author: i % 2 ? AGENT : 'user',
        content: { role: i % 2 ? 'model' : 'user', parts: [{ text: `js ${i}` }] },
        actions: { stateDelta: { [`js_c${i}`]: i, 'temp:t': i } },
      });
      const sqlEv = {
        id: `sql-c${i}`, author: i % 2 ? AGENT : 'user', invocation_id: `inv-sql-c${i}`,
        content: { role: i % 2 ? 'model' : 'user', parts: [{ text: `sql ${i}` }] },
        // app:/user: keys only from this side: ADK-JS rewrites those rows
        // whole from an unlocked read (its limitation), so both sides
        // writing them at once could lose updates
        actions: { state_delta: { [`sql_c${i}`]: i, [`user:sql_c${i}`]: i, [`app:sql_c${i}`]: i, 'temp:t': i } },
      };
      concurrentIds.push(jsEv.id, sqlEv.id);
      const svc = i % 2 ? svc2 : svc1;
      const sess = i % 2 ? b : a;
      tasks.push(svc.appendEvent({ session: sess, event: jsEv }).catch((e) => errors.push(`ADK-JS ${i}: ${e.message}`)));
      tasks.push(sqlAppend(JS_SESSION, sqlEv).catch((e) => errors.push(`SQL ${i}: ${e.code || ''} ${e.message}`)));
    }
    await Promise.all(tasks);
    expect(errors.length === 0, `${errors.length} append(s) failed`, errors.slice(0, 20));
    const rows = await eventRows(JS_SESSION);
    const stored = new Set(rows.map((r) => r.id));
    const missing = concurrentIds.filter((id) => !stored.has(id));
    expect(missing.length === 0, `${missing.length} event(s) not stored`, missing);
    const jsFirst = rows.findIndex((r) => concurrentIds.includes(r.id));
    const order = rows.slice(jsFirst).map((r) => (r.id.startsWith('sql-c') ? 'S' : 'J')).join('');
    return `stored order ${order}`;
  });

  // 6. the two readers agree, and the order is sound
  const totalJs = 5 + 4 + 1 + 2 * CONCURRENT;
  await check('6a ADK-JS getSession and adk_get_session: same event ids in the same order', async () => {
    const s = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const j = await sqlGet(JS_SESSION);
    const a = s.events.map((e) => e.id);
    const b = j.events.map((e) => e.id);
    expect(a.length === totalJs, `ADK-JS read ${a.length} events, want ${totalJs}`);
    expect(b.length === totalJs, `adk_get_session read ${b.length} events, want ${totalJs}`);
    const i = a.findIndex((id, k) => id !== b[k]);
    expect(i < 0, `orders differ first at position ${i + 1}: ADK-JS ${a[i]}, adk_get_session ${b[i]}`,
      [`ADK-JS:          ${a.slice(Math.max(0, i - 2), i + 3).join(' ')}`, `adk_get_session: ${b.slice(Math.max(0, i - 2), i + 3).join(' ')}`]);
  });

  await check('6b ADK-JS getSession and adk_get_session: same event content', async () => {
    const s = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const j = await sqlGet(JS_SESSION);
    const diffs = [];
    s.events.forEach((e, k) => {
      const d = firstDifference(toSnake(e), j.events[k]);
      if (d) diffs.push(`event ${k + 1} (${e.id}): ${d}`);
    });
    expect(diffs.length === 0, `${diffs.length} event(s) differ (ADK-JS re-snake_cased vs adk_get_session)`, diffs.slice(0, 10));
  });

  await check('6c ADK-JS getSession and adk_get_session: same merged state', async () => {
    const s = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const j = await sqlGet(JS_SESSION);
    expectEqual(s.state, j.state, 'merged state (ADK-JS vs adk_get_session)');
    const want = {
      'app:greeting': 'hello', 'app:js_app_key': 'a1', 'app:sql_app_key': 'a2',
      'user:name': 'Ada', 'user:js_user_key': 'u1', 'user:sql_user_key': 'u2',
      topic: 'weather', js_plain: 3, sql_plain: 2,
    };
    for (let i = 0; i < CONCURRENT; i++) {
      want[`js_c${i}`] = i;
      want[`sql_c${i}`] = i;
      want[`user:sql_c${i}`] = i;
      want[`app:sql_c${i}`] = i;
    }
    expectEqual(j.state, want, 'merged state (adk_get_session vs expected)');
  });

  await check(`6d seq is dense 1..${totalJs}`, async () => {
    const rows = await eventRows(JS_SESSION);
    const bad = rows.map((r, k) => [Number(r.seq), k + 1]).filter(([a, b]) => a !== b);
    expect(rows.length === totalJs, `${rows.length} rows`);
    expect(bad.length === 0, `seq not dense: ${bad.slice(0, 5).map(([a, b]) => `${b}th row has seq ${a}`).join(', ')}`);
    const st = await scopeRows(JS_SESSION);
    expect(Number(st.session.last_seq) === totalJs, `sessions.last_seq is ${st.session.last_seq}, want ${totalJs}`);
  });

  await check('6e timestamps strictly increasing in seq order; event_data.timestamp = column in epoch ms', async () => {
    const rows = await eventRows(JS_SESSION);
    const problems = [];
    rows.forEach((r, k) => {
      if (!/^\d+$/.test(r.ts_ms)) problems.push(`seq ${r.seq}: column is not a whole ms (${r.ts_ms})`);
      if (r.data_ts !== r.ts_ms) problems.push(`seq ${r.seq}: event_data.timestamp ${r.data_ts} != column ${r.ts_ms}`);
      if (typeof r.event_data.timestamp !== 'number') problems.push(`seq ${r.seq}: event_data.timestamp is ${typeof r.event_data.timestamp}`);
      if (k > 0 && !(BigInt(r.ts_ms.split('.')[0]) > BigInt(rows[k - 1].ts_ms.split('.')[0]))) {
        problems.push(`seq ${r.seq}: ${r.ts_ms} not after seq ${rows[k - 1].seq}'s ${rows[k - 1].ts_ms}`);
      }
    });
    expect(problems.length === 0, `${problems.length} problem(s)`, problems.slice(0, 10));
    const st = await scopeRows(JS_SESSION);
    const lastMs = rows[rows.length - 1].ts_ms;
    expect(st.session.last_event_ms === lastMs, `sessions.last_event_time ${st.session.last_event_ms} != newest event ${lastMs}`);
    expect(BigInt(st.session.update_ms.split('.')[0]) >= BigInt(lastMs), `sessions.update_time ${st.session.update_ms} before newest event ${lastMs}`);
  });

  await check('6f lastUpdateTime and windows (numRecentEvents/afterTimestamp vs num_recent_events/after_seq) agree', async () => {
    const s = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION });
    const j = await sqlGet(JS_SESSION);
    expect(Math.round(j.last_update_time * 1000) === s.lastUpdateTime,
      `ADK-JS lastUpdateTime ${s.lastUpdateTime} vs adk_get_session last_update_time ${j.last_update_time}`);
    const recentJs = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION, config: { numRecentEvents: 7 } });
    const recentSql = await sqlGet(JS_SESSION, 7);
    expectEqual(recentJs.events.map((e) => e.id), recentSql.events.map((e) => e.id), 'newest 7 events');
    expectEqual(recentSql.events.map((e) => e.id), j.events.slice(-7).map((e) => e.id), 'newest 7 vs tail of all');
    const k = 30;
    const afterJs = await svc1.getSession({ appName: APP, userId: USER, sessionId: JS_SESSION, config: { afterTimestamp: j.events[k - 1].timestamp } });
    const afterSql = await sqlGet(JS_SESSION, null, k);
    expectEqual(afterJs.events.map((e) => e.id), afterSql.events.map((e) => e.id), `events after #${k}`);
  });

  // ADK-JS's appendEvent of an id the session already has UPDATEs the row,
  // setting "timestamp" and event_data from its Event object -- a path the
  // BEFORE INSERT trigger does not see.  A lagging writer clock (the event
  // was bumped on insert) makes it visible.
  await check('6g ADK-JS re-append of an existing event id (its UPDATE path) keeps timestamp order = seq order', async () => {
    const sid = 'js-reappend-1';
    const s = await svc1.createSession({ appName: APP, userId: USER, sessionId: sid });
    const lagging = createEvent({
      invocationId: 'inv-re', author: AGENT, timestamp: Date.now() - 5000,
      content: { role: 'model', parts: [{ text: 'draft' }] },
    });
    await sqlAppend(sid, { id: 'sql-re-1', author: 'user', invocation_id: 'inv-re', content: { role: 'user', parts: [{ text: 'hello' }] } });
    await svc1.appendEvent({ session: s, event: lagging });
    const afterInsert = await eventRows(sid);
    lagging.content = { role: 'model', parts: [{ text: 'final' }] };
    await svc1.appendEvent({ session: s, event: lagging });
    const rows = await eventRows(sid);
    const js = await svc1.getSession({ appName: APP, userId: USER, sessionId: sid });
    const j = await sqlGet(sid);
    const problems = [];
    const orderJs = js.events.map((e) => e.id);
    const orderSql = j.events.map((e) => e.id);
    if (!isDeepStrictEqual(orderJs, orderSql)) problems.push(`ADK-JS order ${orderJs.join(' ')} vs adk_get_session order ${orderSql.join(' ')}`);
    rows.forEach((r, k) => {
      if (r.data_ts !== r.ts_ms) problems.push(`seq ${r.seq}: event_data.timestamp ${r.data_ts} != column ${r.ts_ms}`);
      if (k > 0 && !(Number(r.ts_ms) > Number(rows[k - 1].ts_ms))) problems.push(`seq ${r.seq} (${r.id}) at ${r.ts_ms} ms is not after seq ${rows[k - 1].seq} at ${rows[k - 1].ts_ms} ms`);
    });
    if (rows[1] && afterInsert[1] && rows[1].ts_ms !== afterInsert[1].ts_ms) {
      problems.push(`the UPDATE moved ${rows[1].id}'s time from ${afterInsert[1].ts_ms} (assigned on insert) to ${rows[1].ts_ms} (the writer's Event.timestamp)`);
    }
    if (rows[1] && rows[1].event_data.content.parts[0].text !== 'final') problems.push('re-appended content not stored');
    expect(problems.length === 0, `${problems.length} problem(s)`, problems);
  });

  // 7. a session made and written by SQL, read and continued by ADK-JS
  const sqlSessionEvents = [
    { id: 'sql7-1', author: 'user', invocation_id: 'inv-7', content: { role: 'user', parts: [{ text: 'Weather in Rome?' }] } },
    { id: 'sql7-2', author: AGENT, invocation_id: 'inv-7', content: { role: 'model', parts: [{ function_call: { id: 'call-rome', name: 'get_weather', args: { city_name: 'Rome' } } }] } },
    { id: 'sql7-3', author: AGENT, invocation_id: 'inv-7', content: { role: 'user', parts: [{ function_response: { id: 'call-rome', name: 'get_weather', response: { temp_c: 25 } } }] } },
    { id: 'sql7-4', author: AGENT, invocation_id: 'inv-7', content: { role: 'model', parts: [{ text: 'Sunny, 25 °C.' }] }, actions: { state_delta: { last_city: 'Rome', 'user:cities': 1 } } },
  ];
  let created = null;
  await check('7a SQL adk_create_session + adk_append_event (setup for ADK-JS reads)', async () => {
    [{ s: created }] = await q('SELECT adk_create_session($1, $2, $3, $4::jsonb) AS s',
      [APP, USER, SQL_SESSION, JSON.stringify({ 'app:sql_created': true, 'user:tier': 'gold', mood: 'sunny', 'temp:x': 1 })]);
    for (const ev of sqlSessionEvents) await sqlAppend(SQL_SESSION, ev);
  });
  await check('7b ADK-JS getSession reads a SQL-created session', async () => {
    const s = await svc2.getSession({ appName: APP, userId: USER, sessionId: SQL_SESSION });
    expect(s, 'getSession returned undefined');
    const j = await sqlGet(SQL_SESSION);
    expectEqual(s.events.map((e) => e.id), sqlSessionEvents.map((e) => e.id), 'event ids');
    expectEqual(s.events[1].content.parts[0].functionCall, { id: 'call-rome', name: 'get_weather', args: { city_name: 'Rome' } }, 'functionCall');
    expectEqual(s.events[2].content.parts[0].functionResponse, { id: 'call-rome', name: 'get_weather', response: { temp_c: 25 } }, 'functionResponse');
    expectEqual(s.events[3].actions.stateDelta, { last_city: 'Rome', 'user:cities': 1 }, 'stateDelta');
    expectEqual(s.state, j.state, 'merged state (ADK-JS vs adk_get_session)');
    expect(s.state['app:sql_created'] === true && s.state['user:tier'] === 'gold' && s.state.mood === 'sunny' &&
      s.state.last_city === 'Rome' && s.state['user:cities'] === 1 && !('temp:x' in s.state), `state ${stable(s.state)}`);
    expect(s.lastUpdateTime === Math.round(j.last_update_time * 1000), `lastUpdateTime ${s.lastUpdateTime} vs ${j.last_update_time}`);
  });
  await check('7c ADK-JS listSessions lists SQL- and ADK-JS-created sessions like adk_list_sessions', async () => {
    const r = await svc2.listSessions({ appName: APP, userId: USER });
    const mine = Object.fromEntries(r.sessions.map((s) => [s.id, s]));
    const sqlList = await q('SELECT * FROM adk_list_sessions($1, $2)', [APP, USER]);
    expectEqual(Object.keys(mine).sort(), sqlList.map((x) => x.session_id).sort(), 'listed ids');
    for (const x of sqlList) {
      expectEqual(mine[x.session_id].state, x.state, `state of ${x.session_id}`);
      expect(mine[x.session_id].lastUpdateTime === x.update_time.getTime(), `lastUpdateTime of ${x.session_id}`);
    }
    expect(mine[SQL_SESSION] && mine[JS_SESSION], 'both sessions listed');
    const ordered = await svc2.listSessions({ appName: APP, userId: USER, order: 'desc' });
    expectEqual(ordered.sessions.map((s) => s.id), sqlList.map((x) => x.session_id), 'order by update time desc');
  });
  await check('7d ADK-JS appends to the SQL-created session; adk_get_session reads it back', async () => {
    const s = await svc2.getSession({ appName: APP, userId: USER, sessionId: SQL_SESSION });
    const evs = [
      createEvent({ invocationId: 'inv-7js', author: 'user', content: { role: 'user', parts: [{ text: 'And tomorrow?' }] } }),
      createEvent({
        invocationId: 'inv-7js', author: AGENT,
        content: { role: 'model', parts: [{ text: 'Also sunny.' }] },
        actions: { stateDelta: { last_city: 'Rome (tomorrow)', 'temp:y': 2 } },
      }),
    ];
    for (const ev of evs) await svc2.appendEvent({ session: s, event: ev });
    const j = await sqlGet(SQL_SESSION);
    expectEqual(j.events.map((e) => e.id), [...sqlSessionEvents.map((e) => e.id), ...evs.map((e) => e.id)], 'event ids');
    const rows = await eventRows(SQL_SESSION);
    expectEqual(rows.map((r) => Number(r.seq)), [1, 2, 3, 4, 5, 6], 'seq');
    expect(j.state.last_city === 'Rome (tomorrow)' && !('temp:y' in j.state), `state ${stable(j.state)}`);
    const again = await svc1.getSession({ appName: APP, userId: USER, sessionId: SQL_SESSION });
    expectEqual(again.events.map((e) => e.id), j.events.map((e) => e.id), 'ADK-JS order vs adk_get_session order');
  });
  await check('7e ADK-JS deleteSession removes a SQL-created session and its events', async () => {
    await q('SELECT adk_create_session($1, $2, $3)', [APP, USER, DEL_SESSION]);
    await sqlAppend(DEL_SESSION, { author: 'user', invocation_id: 'inv-del', content: { role: 'user', parts: [{ text: 'bye' }] } });
    await svc1.deleteSession({ appName: APP, userId: USER, sessionId: DEL_SESSION });
    const [{ n }] = await q('SELECT count(*)::int AS n FROM adk.events WHERE session_id = $1', [DEL_SESSION]);
    const [{ m }] = await q('SELECT count(*)::int AS m FROM adk.sessions WHERE id = $1', [DEL_SESSION]);
    expect(n === 0 && m === 0, `${m} session row(s), ${n} event row(s) left`);
    let code = null;
    try { await sqlGet(DEL_SESSION); } catch (e) { code = e.code; }
    expect(code === '42704', `adk_get_session after delete: SQLSTATE ${code}, want 42704`);
  });

  // a third start, in a fresh process, then the schema must be unchanged
  await check('8a ADK-JS started in a new process (third schema sync) reads the shared session', async () => {
    await closeService(svc1);
    await closeService(svc2);
    svc1 = svc2 = null;
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--restart-probe', APP, USER, JS_SESSION],
      { encoding: 'utf8', env: process.env, timeout: 120000 });
    expect(r.status === 0, `child exited ${r.status}`, (r.stderr || '').split('\n').slice(-15));
    const out = JSON.parse(r.stdout);
    const j = await sqlGet(JS_SESSION);
    expectEqual(out.ids, j.events.map((e) => e.id), 'event ids (new process vs adk_get_session)');
    expectEqual(out.state, j.state, 'merged state (new process vs adk_get_session)');
  });
  await check("8b ADK-JS's schema syncs (all starts) ran no DDL on our tables", async () => {
    const ddl = ddlInLog(logOffset);
    if (ddl === null) fail('no server log (ADK_INTEROP_PGLOG) to read');
    expect(ddl.length === 0, "schema-changing statements since ADK-JS first started (from the server log)", ddl);
  });
  const after = dumps();
  await check('8c pg_dump --schema-only --schema=adk after ADK-JS = before', async () => {
    const d = unifiedDiff(before.adkSchema, after.adkSchema, 'adk-schema');
    expect(d.length === 0, 'dumps differ', d);
    return 'this dump omits extension members, so it only shows objects ADK-JS would add; see 8d';
  });
  await check('8d pg_dump --schema-only --binary-upgrade (extension members) after ADK-JS = before', async () => {
    const d = unifiedDiff(before.members, after.members, 'members');
    expect(d.length === 0, 'dumps differ', d);
  });

  await runnerChecks();
}

// ------------------------------------------- 9. ADK-JS's Runner and adk_run

// Both runtimes run the same agent (name, instruction, tools) against the
// local model server, on shared sessions of app RUNNER_APP.  ADK-JS's tools
// are JavaScript, ours SQL; both record each execution in one table, so a
// tool that must run once can be counted whoever ran it.
const RUNNER_APP = 'runner_app';
const RUNNER_AGENT = 'runner_agent';
let duringJsTool = null;

// ADK-JS's Gemini class, pointed at the local model server
class LocalGemini extends Gemini {
  getHttpOptions() {
    return { ...super.getHttpOptions(), baseUrl: MODEL_URL };
  }
}

async function modelServer(pathname, body) {
  const r = await fetch(`${MODEL_URL}${pathname}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`model server ${pathname}: HTTP ${r.status}`);
  return r.json();
}

// Problems with the pairing of calls and responses in a Gemini request:
// a content with function calls must be followed by one with a response
// to each (by name, and by id where ids are sent); a content with function
// responses must follow one with their calls.
function pairingProblems(contents) {
  const problems = [];
  const calls = (c) => (c.parts || []).filter((p) => p.functionCall).map((p) => p.functionCall);
  const responses = (c) => (c.parts || []).filter((p) => p.functionResponse).map((p) => p.functionResponse);
  const key = (f) => `${f.name}${f.id ? `#${f.id}` : ''}`;
  contents.forEach((c, i) => {
    const cs = calls(c);
    const rs = responses(c);
    if (cs.length) {
      const next = contents[i + 1];
      const want = cs.map(key).sort();
      const got = next ? responses(next).map(key).sort() : [];
      if (!isDeepStrictEqual(want, got)) problems.push(`contents[${i}] calls ${want.join(',')} but contents[${i + 1}] answers ${got.join(',') || 'nothing'}`);
    }
    if (rs.length) {
      const prev = contents[i - 1];
      const want = rs.map(key).sort();
      const got = prev ? calls(prev).map(key).sort() : [];
      if (!isDeepStrictEqual(want, got)) problems.push(`contents[${i}] answers ${want.join(',')} but contents[${i - 1}] calls ${got.join(',') || 'nothing'}`);
    }
  });
  return problems;
}

async function requestsSinceReset() {
  return (await modelServer('/_requests')).filter((r) => r.provider === 'gemini' && r.body && r.body.contents);
}

async function runnerChecks() {
  if (!MODEL_URL) {
    await check('9 ADK-JS Runner checks', async () => fail('no ADK_INTEROP_MODEL_URL (run this through run.sh)'));
    return;
  }
  setLogLevel(LogLevel.WARN); // not a line per model request
  const svc = adkService();
  let runner = null;
  await check('9a setup: the same agent for ADK-JS Runner and adk_run, on the local model server', async () => {
    await svc.init();
    await q(`CREATE TABLE IF NOT EXISTS public.runner_tool_runs (tool text, side text, args jsonb)`);
    await q(`CREATE OR REPLACE FUNCTION public.get_weather(city text) RETURNS jsonb LANGUAGE sql AS
               $$ INSERT INTO public.runner_tool_runs VALUES ('get_weather', 'sql', jsonb_build_object('city', city))
                  RETURNING jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$`);
    await q(`COMMENT ON FUNCTION public.get_weather(text) IS 'Get the weather.'`);
    await q(`CREATE OR REPLACE FUNCTION public.transfer_money(amount integer) RETURNS jsonb LANGUAGE sql AS
               $$ INSERT INTO public.runner_tool_runs VALUES ('transfer_money', 'sql', jsonb_build_object('amount', amount))
                  RETURNING jsonb_build_object('paid', amount) $$`);
    await q(`COMMENT ON FUNCTION public.transfer_money(integer) IS 'Transfer money.'`);
    await q(`SELECT adk_set_secret('runner-key', 'sk-runner', ARRAY['127.0.0.1'])`);
    await q(`SELECT adk_define_model('runner_gemini', 'gemini', $1, 'gemini-test', api_key_secret => 'runner-key')`, [MODEL_URL]);
    await q(`SELECT adk_define_tool('public.get_weather(text)'::regprocedure)`);
    await q(`SELECT adk_define_tool('public.transfer_money(integer)'::regprocedure, require_confirmation => true)`);
    await q(`SELECT adk_define_agent($1, model => 'runner_gemini', instruction => 'Be brief.',
                                     tools => ARRAY['get_weather', 'transfer_money'])`, [RUNNER_AGENT]);
    await q(`SELECT adk_define_app($1, $2)`, [RUNNER_APP, RUNNER_AGENT]);
    const jsRun = (tool) => async (args) => {
      await q('INSERT INTO public.runner_tool_runs VALUES ($1, $2, $3::jsonb)', [tool, 'js', JSON.stringify(args)]);
      // a test may act while ADK-JS's call is stored and its response not yet
      if (duringJsTool) await duringJsTool(args);
      return tool === 'get_weather' ? { city: args.city, forecast: 'sunny', temperature_c: 25 } : { paid: args.amount };
    };
    const agent = new LlmAgent({
      name: RUNNER_AGENT,
      model: new LocalGemini({ model: 'gemini-test', apiKey: 'sk-runner' }),
      instruction: 'Be brief.',
      tools: [
        new FunctionTool({
          name: 'get_weather', description: 'Get the weather.',
          parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
          execute: jsRun('get_weather'),
        }),
        new FunctionTool({
          name: 'transfer_money', description: 'Transfer money.', requireConfirmation: true,
          parameters: { type: 'OBJECT', properties: { amount: { type: 'INTEGER' } }, required: ['amount'] },
          execute: jsRun('transfer_money'),
        }),
      ],
    });
    runner = new Runner({ appName: RUNNER_APP, agent, sessionService: svc });
  });
  if (!runner) {
    await closeService(svc);
    return;
  }
  const jsTurn = async (sessionId, message) => {
    const out = [];
    const newMessage = typeof message === 'string' ? { role: 'user', parts: [{ text: message }] } : message;
    for await (const ev of runner.runAsync({ userId: USER, sessionId, newMessage })) out.push(ev);
    return out;
  };
  const sqlTurn = async (sessionId, message) => q('SELECT * FROM adk_run($1, $2, $3, $4::jsonb)',
    [RUNNER_APP, USER, sessionId, JSON.stringify(typeof message === 'string' ? { role: 'user', parts: [{ text: message }] } : message)]);
  const texts = async (sessionId) => (await q(`SELECT event_data ->> 'author' AS author,
         coalesce(event_data #>> '{content,parts,0,text}', event_data #>> '{content,parts,0,function_call,name}',
                  'response ' || (event_data #>> '{content,parts,0,function_response,name}')) AS what
    FROM adk.events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY seq`, [RUNNER_APP, USER, sessionId]));
  const toolRuns = async (tool) => q('SELECT side, args FROM public.runner_tool_runs WHERE tool = $1', [tool]);

  await check('9b taking turns with tool calls: ADK-JS Runner, adk_run, ADK-JS Runner; every request pairs calls and responses', async () => {
    await modelServer('/_reset', {});
    await svc.createSession({ appName: RUNNER_APP, userId: USER, sessionId: 'turns' });
    await jsTurn('turns', 'What is the weather in Paris?');
    await sqlTurn('turns', 'What is the weather in Rome?');
    await jsTurn('turns', 'What is the weather in Oslo?');
    const got = (await texts('turns')).map((r) => `${r.author}: ${r.what}`);
    const want = [];
    for (const city of ['Paris', 'Rome', 'Oslo']) {
      want.push(`user: What is the weather in ${city}?`, `${RUNNER_AGENT}: get_weather`,
        `${RUNNER_AGENT}: response get_weather`, `${RUNNER_AGENT}: The weather in ${city} is sunny, 25°C.`);
    }
    expectEqual(got, want, 'the session, in seq order');
    const reqs = await requestsSinceReset();
    expect(reqs.length === 6, `${reqs.length} model requests, want 6`);
    const problems = reqs.flatMap((r, i) => pairingProblems(r.body.contents).map((p) => `request ${i + 1}: ${p}`));
    expect(problems.length === 0, 'unpaired calls or responses', problems);
    // the last turn's first request (ADK-JS) sees adk_run's turn as its own
    const seen = JSON.stringify(reqs[4].body.contents);
    expect(seen.includes('Rome') && seen.includes('The weather in Rome is sunny'), 'ADK-JS did not see adk_run\'s turn', [seen.slice(0, 400)]);
    expectEqual((await toolRuns('get_weather')).map((r) => r.side), ['js', 'sql', 'js'], 'get_weather ran, by side');
    // prompt parity: the same system instruction paragraphs from both (ADK's
    // identity line included; ADK-JS 2.0 puts it first, ADK Python and we
    // after the agent's instruction); requests 1 and 2 are ADK-JS's, 3 and 4
    // adk_run's
    const system = (r) => ((r.body.systemInstruction || r.body.system_instruction || {}).parts || [])
      .map((p) => p.text).join('\n\n').split('\n\n').sort();
    expectEqual(system(reqs[2]), system(reqs[0]), 'adk_run\'s system instruction paragraphs (vs ADK-JS\'s)');
    expectEqual(system(reqs[0]), ['Be brief.', `You are an agent. Your internal name is "${RUNNER_AGENT}".`], 'ADK-JS\'s system instruction paragraphs');
  });

  await check('9c a confirmation paused by adk_run, approved through ADK-JS: the tool runs exactly once', async () => {
    await svc.createSession({ appName: RUNNER_APP, userId: USER, sessionId: 'confirm-1' });
    await sqlTurn('confirm-1', 'call transfer_money({"amount": 5})');
    const [p] = await q(`SELECT call_id FROM adk.pending_interrupts WHERE app_name = $1 AND session_id = 'confirm-1'`, [RUNNER_APP]);
    expect(p, 'adk_run did not pause on the confirmation');
    const answer = { role: 'user', parts: [{ functionResponse: { id: p.call_id, name: 'adk_request_confirmation', response: { confirmed: true } } }] };
    await jsTurn('confirm-1', answer);
    let runs = await toolRuns('transfer_money');
    expectEqual(runs.map((r) => r.side), ['js'], 'transfer_money ran, by side (after ADK-JS approved)');
    const [{ n: pending }] = await q(`SELECT count(*)::int AS n FROM adk.pending_interrupts WHERE app_name = $1 AND session_id = 'confirm-1'`, [RUNNER_APP]);
    expect(pending === 0, `adk.pending_interrupts still lists ${pending} interrupt(s) after ADK-JS answered`);
    const before = (await texts('confirm-1')).length;
    const rows = await sqlTurn('confirm-1', { role: 'user', parts: [{ function_response: { id: p.call_id, name: 'adk_request_confirmation', response: { confirmed: true } } }] });
    runs = await toolRuns('transfer_money');
    expectEqual(runs.map((r) => r.side), ['js'], 'transfer_money ran, by side (after the same approval sent to adk_run)');
    expect(rows.length === 0, `adk_run returned ${rows.length} row(s) for the repeated approval, want none`);
    expect((await texts('confirm-1')).length === before, 'the repeated approval stored events');
  });

  await check('9d a confirmation paused by ADK-JS, approved through adk_run: the tool runs exactly once', async () => {
    await q('TRUNCATE public.runner_tool_runs');
    await svc.createSession({ appName: RUNNER_APP, userId: USER, sessionId: 'confirm-2' });
    await jsTurn('confirm-2', 'call transfer_money({"amount": 7})');
    const [p] = await q(`SELECT call_id, tool FROM adk.pending_interrupts WHERE app_name = $1 AND session_id = 'confirm-2'`, [RUNNER_APP]);
    expect(p, 'ADK-JS\'s pause is not in adk.pending_interrupts', (await texts('confirm-2')).map((r) => `${r.author}: ${r.what}`));
    expect(p.tool === 'adk_request_confirmation', `pending tool ${p.tool}`);
    await sqlTurn('confirm-2', { role: 'user', parts: [{ function_response: { id: p.call_id, name: 'adk_request_confirmation', response: { confirmed: true } } }] });
    let runs = await toolRuns('transfer_money');
    expectEqual(runs.map((r) => r.side), ['sql'], 'transfer_money ran, by side (after adk_run approved)');
    const answer = { role: 'user', parts: [{ functionResponse: { id: p.call_id, name: 'adk_request_confirmation', response: { confirmed: true } } }] };
    await jsTurn('confirm-2', answer);
    runs = await toolRuns('transfer_money');
    expectEqual(runs.map((r) => r.side), ['sql'], 'transfer_money ran, by side (after the same approval sent to ADK-JS)');
  });

  await check('9e concurrent turns from both sides: every model request pairs calls and responses', async () => {
    await q('TRUNCATE public.runner_tool_runs');
    const TRIALS = 10;
    const problems = [];
    let checked = 0;
    for (let i = 0; i < TRIALS; i++) {
      const sid = `concurrent-${i}`;
      await svc.createSession({ appName: RUNNER_APP, userId: USER, sessionId: sid });
      await modelServer('/_reset', {});
      await jsTurn(sid, 'What is the weather in Lima?');
      await Promise.all([jsTurn(sid, `What is the weather in Bern${i}?`), sqlTurn(sid, `What is the weather in Kyiv${i}?`)]);
      // and an adk_run turn exactly while ADK-JS's turn is half-written:
      // its function call stored, its tool running, its response not yet
      duringJsTool = async (args) => {
        if (args.city === `Minsk${i}`) await sqlTurn(sid, `What is the weather in Riga${i}?`);
      };
      try {
        await jsTurn(sid, `What is the weather in Minsk${i}?`);
      } finally {
        duringJsTool = null;
      }
      await sqlTurn(sid, 'And the weather in Quito?');
      const reqs = await requestsSinceReset();
      checked += reqs.length;
      reqs.forEach((r, n) => pairingProblems(r.body.contents).forEach((pr) => problems.push(`trial ${i}, request ${n + 1}: ${pr}`)));
    }
    expect(problems.length === 0, `unpaired calls or responses in ${problems.length} place(s) of ${checked} requests`, problems.slice(0, 20));
    const runs = await toolRuns('get_weather');
    expect(runs.length === TRIALS * 6, `get_weather ran ${runs.length} times, want ${TRIALS * 6}`);
    return `${checked} requests checked`;
  });

  await check('9f a compaction event written by ADK-JS (its compacted event) and one as ADK Python writes it stand in for the events they cover in adk_run\'s request', async () => {
    const sid = 'compacted';
    const s = await svc.createSession({ appName: RUNNER_APP, userId: USER, sessionId: sid });
    for (const t of ['alpha', 'bravo', 'charlie', 'delta']) {
      await svc.appendEvent({ session: s, event: createEvent({ invocationId: 'inv-c', author: 'user', content: { role: 'user', parts: [{ text: `say ${t}` }] } }) });
      await svc.appendEvent({ session: s, event: createEvent({ invocationId: 'inv-c', author: RUNNER_AGENT, content: { role: 'model', parts: [{ text: `${t}!` }] } }) });
    }
    const evs = await q(`SELECT event_data ->> 'timestamp' AS ms FROM adk.events
                           WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY seq`, [RUNNER_APP, USER, sid]);
    const ms = (i) => Number(evs[i].ms);
    const compactedModule = await import(pathToFileURL(path.join(HERE, 'node_modules/@google/adk/dist/esm/events/compacted_event.js')).href);
    const jsCompacted = compactedModule.createCompactedEvent({
      author: 'system', invocationId: 'inv-c', content: { role: 'model', parts: [{ text: 'SUMMARY-AB' }] },
      startTime: ms(0), endTime: ms(3), compactedContent: 'SUMMARY-AB',
    });
    await svc.appendEvent({ session: s, event: jsCompacted });
    await sqlAppend2(sid, {
      author: 'user', invocation_id: 'inv-py',
      actions: { compaction: { start_timestamp: ms(4) / 1000, end_timestamp: ms(5) / 1000,
        compacted_content: { role: 'model', parts: [{ text: 'SUMMARY-C' }] } } },
    });
    const [{ kinds }] = await q(`SELECT string_agg(from_seq || '..' || to_seq, ' ' ORDER BY seq) AS kinds FROM adk.compactions
                                   WHERE app_name = $1 AND session_id = $2`, [RUNNER_APP, sid]);
    expect(kinds === '1..4 5..6', `compaction ranges ${kinds}, want 1..4 5..6`,
      (await q(`SELECT event_data::text AS e FROM adk.events WHERE app_name = $1 AND session_id = $2 AND seq > 8`, [RUNNER_APP, sid])).map((r) => r.e));
    await modelServer('/_reset', {});
    await sqlTurn(sid, 'say echo');
    const [req] = await requestsSinceReset();
    const sent = (req.body.contents || []).map((c) => (c.parts || []).map((p) => p.text).join(''));
    expectEqual(sent, ['SUMMARY-AB', 'SUMMARY-C', 'say delta', 'delta!', 'say echo'], 'the texts adk_run sent');
  });

  await closeService(svc);
}

async function sqlAppend2(sessionId, event) {
  const rows = await q('SELECT adk_append_event($1, $2, $3, $4::jsonb) AS e', [RUNNER_APP, USER, sessionId, JSON.stringify(event)]);
  return rows[0].e;
}

try {
  await main();
} catch (e) {
  failed++;
  console.log(`not ok - interop.mjs aborted: ${e && e.message}`);
  for (const l of String(e && e.stack).split('\n').slice(1, 8)) console.log(`#   ${l}`);
} finally {
  await closeService(svc1).catch(() => {});
  await closeService(svc2).catch(() => {});
  await sqlPool.end().catch(() => {});
}
console.log(`# interop.mjs: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
