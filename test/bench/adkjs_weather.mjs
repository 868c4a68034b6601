// ADK-JS side of test/bench/adkjs.sh: weather turns (two model calls each:
// a get_weather call, then the answer) through ADK-JS 2.0's Runner with an
// in-memory session service, TURNS turns in flight at once in this one
// Node process, against the local model server (Gemini wire format) at the
// latency its model name asks for.  Prints one line: turns, seconds,
// turns/s, the Node process's CPU seconds, the runner's own time per
// turn in ms (the turns' wall time minus the time spent waiting for the
// model's answers, as test/bench/run.sh reports ours; meaningful with one
// turn in flight), the process's resident memory before the turns and its
// peak (MB).
//
//   node adkjs_weather.mjs BASE_URL TURNS LATENCY_MS [IN_FLIGHT (TURNS)]
// (run from a directory whose node_modules has @google/adk 2.0.0: the
// script makes one in a temp dir with test/interop/package.json)
import { FunctionTool, Gemini, InMemoryRunner, LlmAgent } from '@google/adk';
import { z } from 'zod';

const [baseUrl, turnsArg, latencyArg] = process.argv.slice(2);
const TURNS = Number(turnsArg || 200);
const LATENCY = Number(latencyArg || 500);
const IN_FLIGHT = Math.max(1, Math.min(TURNS, Number(process.argv[5] || TURNS)));

// the model server instead of Google: the SDK's base URL; the time from a
// request to each answer it yields (not the time its caller holds one) is
// the model's
let modelMs = 0;
class LocalGemini extends Gemini {
  getHttpOptions() {
    return { ...super.getHttpOptions(), baseUrl };
  }

  async *generateContentAsync(...args) {
    let t = performance.now();
    for await (const r of super.generateContentAsync(...args)) {
      modelMs += performance.now() - t;
      yield r;
      t = performance.now();
    }
    modelMs += performance.now() - t;
  }
}

const getWeather = new FunctionTool({
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => ({ city, forecast: 'sunny', temperature_c: 25 }),
});
const agent = new LlmAgent({
  name: 'weather_agent',
  model: new LocalGemini({ model: `gemini-latency-${LATENCY}`, apiKey: 'sk-bench' }),
  instruction: 'You answer weather questions.',
  tools: [getWeather],
});
const runner = new InMemoryRunner({ agent, appName: 'weather_app' });

async function turn(i) {
  const session = await runner.sessionService.createSession({ appName: 'weather_app', userId: 'u' });
  let events = 0;
  for await (const e of runner.runAsync({
    userId: 'u',
    sessionId: session.id,
    newMessage: { role: 'user', parts: [{ text: `call get_weather({"city": "City${i}"})` }] },
  })) {
    if (e.errorCode) throw new Error(`turn ${i}: ${e.errorCode} ${e.errorMessage}`);
    events++;
  }
  return events;
}

const rss0 = process.memoryUsage().rss / 1048576;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
// IN_FLIGHT turns at a time, each taking the next turn when it is done
const counts = [];
let next = 0;
async function lane() {
  while (next < TURNS) {
    const i = next++;
    counts[i] = await turn(i);
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
const ms = performance.now() - t0;
const secs = ms / 1000;
const cpu = process.cpuUsage(cpu0);
const bad = counts.filter((n) => n < 3).length;
if (bad) throw new Error(`${bad} turns had fewer than 3 events`);
console.log(`${TURNS} ${secs.toFixed(2)} ${(TURNS / secs).toFixed(1)} ${((cpu.user + cpu.system) / 1e6).toFixed(2)} ${((ms - modelMs) / TURNS).toFixed(3)} ${rss0.toFixed(1)} ${(process.resourceUsage().maxRSS / 1024).toFixed(1)}`);
