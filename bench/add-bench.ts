/**
 * The Add phase alone, with the bare encoder before and after it (the same figures as
 * `npm run bench`'s `add`, in a fraction of its time): for working on the write path.
 *
 *   node dist/bench/add-bench.js [--requests 80] [--locomo <file>] [--profile] [--out <dir>]
 *
 * `--profile` writes the server's CPU profile (`--cpu-prof`) under `<dir>/profiles`. Prints a
 * JSON summary on stdout; progress goes to stderr.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ADD_CLIENTS, measureAdd, measureEncoder, summarizeEncoder } from './add-phase.js';
import { checkAdd, LoopbackClient, round } from './http-load.js';
import { serverEncoderStack } from './server-encoder.js';
import { ServerProcess } from './server-process.js';
import { addChunks, DEFAULT_LOCOMO, loadWorkload, strided } from './workload.js';

const PACKAGE_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const ADD_USERS = 128;

const started = performance.now();
function progress(message: string): void {
  process.stderr.write(`[add-bench ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '80' },
      locomo: { type: 'string' },
      profile: { type: 'boolean', default: false },
      out: { type: 'string' },
    },
  });
  const requests = Number(values.requests);
  if (!Number.isInteger(requests) || requests < 1) throw new Error(`--requests: expected a positive integer, got ${values.requests}`);
  const outDir = path.resolve(values.out ?? path.join(PACKAGE_ROOT, '.bench-out'));
  await mkdir(outDir, { recursive: true });
  const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, 'profiles')}`] : [];
  const workload = await loadWorkload(values.locomo ?? DEFAULT_LOCOMO);
  const bodies = addChunks(workload, requests, ADD_USERS);
  const encoderBodies = strided(bodies, ADD_CLIENTS);
  const perAddBodies = Math.min(8, encoderBodies.length);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-add-bench-'));
  const loadAtStart = os.loadavg()[0];
  try {
    const embedder = serverEncoderStack();
    const before = await measureEncoder(embedder, encoderBodies, perAddBodies, progress);
    const server = await ServerProcess.start({ dataDir: path.join(workDir, 'service'), nodeArgs });
    const client = new LoopbackClient(server.url, 256);
    await waitForServer(server, client);
    const add = await measureAdd(server, client, bodies, progress);
    client.close();
    const stop = await server.stop();
    const after = await measureEncoder(embedder, encoderBodies, perAddBodies, progress);
    await embedder.close();
    const encoder = summarizeEncoder(before, after);
    const ratio = add.messages_per_s / encoder.messages_per_s;
    const summary = {
      bench: 'memorypool-add',
      command: `node dist/bench/add-bench.js --requests ${requests}${values.profile ? ' --profile' : ''}`,
      load_avg_1m: { start: round(loadAtStart, 2), end: round(os.loadavg()[0], 2) },
      add_throughput_vs_encoder: round(ratio, 3),
      add_messages_per_s: add.messages_per_s,
      bare_encoder_messages_per_s: encoder.messages_per_s,
      server_cpu_ms_per_message: add.cpu_ms_per_message,
      server_cpu_ms_per_message_by_thread: add.cpu_ms_per_message_by_thread,
      bare_encoder_cpu_ms_per_message: encoder.cpu_ms_per_message,
      add_cpu: add.cpu,
      encoder_copies_up_ms: add.encoder_copies_up_ms,
      add_latency_ms: add.load.latency_ms,
      add_errors: add.load.errors,
      server_exit: stop,
      server_log: server.logLines.slice(0, 20),
      encoder,
    };
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    progress(`Add / bare encoder ${summary.add_throughput_vs_encoder} (${add.messages_per_s} vs ${encoder.messages_per_s} messages/s); server CPU ${add.cpu_ms_per_message} ms/message`);
  } finally {
    await ServerProcess.stopAll();
    await rm(workDir, { recursive: true, force: true });
  }
}

/** Until the server answers an Add (its encoder loaded), to a user the phase does not use. */
async function waitForServer(server: ServerProcess, client: LoopbackClient): Promise<void> {
  const deadline = performance.now() + 120_000;
  const body = JSON.stringify({ request_id: 'ready', user_id: 'add-bench-ready', session_id: 's', messages: [{ role: 'user', content: 'ready?' }] });
  while (performance.now() < deadline) {
    if (!server.running) throw new Error(`server exited: ${server.logLines.slice(-5).join(' | ')}`);
    try {
      if (checkAdd(await client.post('/add', body, 60_000)) === null) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('server did not answer within 120 s');
}

main().catch((error: Error) => {
  process.stderr.write(`add-bench failed: ${error.stack ?? error.message}\n`);
  process.exit(1);
});
