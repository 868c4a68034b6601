// ADK-JS side of test/bench/adkjs.sh: weather turns (two model calls each:
// a get_weather call, then the answer) through ADK-JS 2.0's Runner with an
// in-memory session service, TURNS turns in flight at once in this one
// Node process, against the local model server (Gemini wire format) at the
// latency its model name asks for.  Prints one line: turns, seconds,
// turns/s, and the Node process's CPU seconds.
//
//   node adkjs_weather.mjs BASE_URL TURNS LATENCY_MS
// (run from a directory whose node_modules has @google/adk 2.0.0: the
// script makes one in a temp dir with test/interop/package.json)
import { FunctionTool, Gemini, InMemoryRunner, LlmAgent } from '@google/adk';
import { z } from 'zod';

const [baseUrl, turnsArg, latencyArg] = process.argv.slice(2);
const TURNS = Number(turnsArg || 200);
const LATENCY = Number(latencyArg || 500);

// the model server instead of Google: the SDK's base URL
class LocalGemini extends Gemini {
  getHttpOptions() {
    return { ...super.getHttpOptions(), baseUrl };
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

const cpu0 = process.cpuUsage();
const t0 = performance.now();
const counts = await Promise.all(Array.from({ length: TURNS }, (_, i) => turn(i)));
const secs = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const bad = counts.filter((n) => n < 3).length;
if (bad) throw new Error(`${bad} turns had fewer than 3 events`);
console.log(`${TURNS} ${secs.toFixed(2)} ${(TURNS / secs).toFixed(1)} ${((cpu.user + cpu.system) / 1e6).toFixed(2)}`);
