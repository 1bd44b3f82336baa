import { cp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { LoopbackClient } from './http-load.js';
import { ServerProcess } from './server-process.js';
import { loadWorkload, sessionAdds } from './workload.js';

/**
 * Servers of several variants measured side by side on cached Searches, for the benches that
 * compare CPU per Search between builds or settings (tracing-cost.ts, heap-outliers.ts). Every
 * server serves a copy of one data directory (LoCoMo's two longest conversations, ~690 memories
 * each, stored once with the real encoder); a round sends each server its Searches in blocks that
 * go round them all, so every server of a round is measured over the same seconds (a shared
 * machine's speed drifts from one second to the next, by 2x between rounds here). CPU is every
 * thread's, from /proc/<pid>/task/<tid>/schedstat: the client's is this process's, not a server's.
 */

export interface Variant {
  name: string;
  /** Another build's server (its dist/src/main.js); this build's by default. */
  entry?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
}

export interface MeasuredServer {
  variant: string;
  server: ServerProcess;
  client: LoopbackClient;
  /** CPU ns per Search, one entry a round. */
  rounds: number[];
  searches: number;
}

/** Nanoseconds on CPU of every thread of the process so far (schedstat's first field). */
export async function cpuNs(pid: number): Promise<number> {
  let total = 0;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '0');
    total += Number(stat.split(' ')[0]);
  }
  return total;
}

/** The memories stored once through a server of this build into `<work>/seed`, and the Search bodies (every LoCoMo question, top_k 10, the two users in turn). */
export async function seedSearchData(work: string, locomo: string | null): Promise<{ seedDir: string; questions: string[] }> {
  const workload = await loadWorkload(locomo);
  const conversations = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length).slice(0, 2);
  const questions = workload.conversations.flatMap((conversation) => conversation.questions).map((query, i) => JSON.stringify({ query, user_id: `cost-${conversations[i % 2].id}`, top_k: 10 }));
  const seedDir = path.join(work, 'seed');
  const seed = await ServerProcess.start({ dataDir: seedDir, env: { MEMORYPOOL_ENCODER_WORKERS: '1' } });
  await waitHealthy(seed.url);
  const seeding = new LoopbackClient(seed.url, 1);
  for (const conversation of conversations) {
    for (const add of sessionAdds(conversation, `cost-${conversation.id}`, 64)) {
      const answer = await seeding.post('/add', JSON.stringify(add), 120_000);
      if (answer.status !== 200) throw new Error(`seeding Add answered ${answer.status}: ${answer.text}`);
    }
  }
  seeding.close();
  await seed.stop();
  return { seedDir, questions };
}

/** `processes` servers of each variant, started alternately (a, b, a, b, ...) so that none starts after all of another's, each on its own copy of the seed. */
export async function startVariants(work: string, seedDir: string, variants: readonly Variant[], processes: number): Promise<MeasuredServer[]> {
  const servers: MeasuredServer[] = [];
  for (let copy = 0; copy < processes; copy++) {
    for (const { name, entry, env, nodeArgs } of variants) {
      const dataDir = path.join(work, `${name}-${copy}`);
      await cp(seedDir, dataDir, { recursive: true });
      const server = await ServerProcess.start({ dataDir, entry, nodeArgs, env: { MEMORYPOOL_ENCODER_WORKERS: '1', ...env } });
      servers.push({ variant: name, server, client: new LoopbackClient(server.url, 1), rounds: [], searches: 0 });
      await waitHealthy(server.url);
    }
  }
  return servers;
}

/**
 * Every question once on each server, so that its query vector is cached, and a round
 * unmeasured, for the JIT; then `rounds` rounds of `perRound` Searches a server in blocks of
 * `block` going round the servers, each round starting at another one.
 */
export async function measureRounds(servers: MeasuredServer[], questions: readonly string[], options: { rounds: number; perRound: number; block: number }): Promise<void> {
  const { rounds, perRound, block } = options;
  for (const measured of servers) {
    for (const body of questions) await search(measured, body);
    for (let i = 0; i < perRound; i++) await search(measured, questions[i % questions.length]);
  }
  let next = 0;
  for (let round = 0; round < rounds; round++) {
    const before = await Promise.all(servers.map((measured) => cpuNs(measured.server.pid)));
    for (let at = 0; at < perRound; at += block) {
      for (let k = 0; k < servers.length; k++) {
        const measured = servers[(round + at / block + k) % servers.length];
        for (let i = at; i < Math.min(at + block, perRound); i++) await search(measured, questions[(next + i) % questions.length]);
      }
    }
    const after = await Promise.all(servers.map((measured) => cpuNs(measured.server.pid)));
    servers.forEach((measured, k) => {
      measured.rounds.push((after[k] - before[k]) / perRound);
      measured.searches += perRound;
    });
    next += perRound;
  }
}

/** A variant's CPU ns per Search in each round: the mean over its processes. */
export function variantRounds(servers: readonly MeasuredServer[], variant: string): number[] | undefined {
  const own = servers.filter((measured) => measured.variant === variant);
  return own.length === 0 ? undefined : own[0].rounds.map((_, i) => own.reduce((sum, measured) => sum + measured.rounds[i], 0) / own.length);
}

/** The median over rounds of a's figure over b's, with the quartiles; undefined when a variant is absent. */
export function roundRatio(servers: readonly MeasuredServer[], a: string, b: string): { median: number; quartiles: [number, number] } | undefined {
  const top = variantRounds(servers, a);
  const bottom = variantRounds(servers, b);
  if (!top || !bottom) return undefined;
  const sorted = top.map((value, i) => value / bottom[i]).sort((x, y) => x - y);
  return { median: +median(sorted).toFixed(4), quartiles: [+sorted[Math.floor(sorted.length / 4)].toFixed(4), +sorted[Math.floor((sorted.length * 3) / 4)].toFixed(4)] };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function search(measured: MeasuredServer, body: string): Promise<void> {
  const answer = await measured.client.post('/search', body, 30_000);
  if (answer.status !== 200) throw new Error(`${measured.variant}: Search answered ${answer.status}: ${answer.text}`);
}

export async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} not healthy within 120 s`);
}
