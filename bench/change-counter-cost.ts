#!/usr/bin/env node
import { loadavg, cpus } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { silentLogger } from '../src/logger.js';
import type { UnitDraft } from '../src/store/memory-store.js';
import * as postgresStore from '../src/store/postgres-store.js';
import { round } from './http-load.js';
import { median } from './interleaved-servers.js';
import { startThrowawayPostgres } from './throwaway-postgres.js';

/**
 * `node dist/bench/change-counter-cost.js [--against <other checkout>] [--writers 32] [--seconds 4] [--rounds 4] [--busy 1]`:
 * how many writes a second PostgreSQL takes from many users at once through the store, where
 * every write's change events are numbered by one counter row whose lock is held to COMMIT
 * (src/store/postgres-changes.ts). `--writers` concurrent appends of one memory, each to a user
 * of its own, for `--seconds`, through this build's `PostgresStore` and, with `--against`, the
 * compiled store of another checkout (its `dist`), each on a database of its own in one throwaway
 * PostgreSQL (fsync on), round by round in turn, in this one process. `--busy <ms>` keeps this
 * process's event loop busy that long in every 2 ms (0: idle), as a serving replica's is: the
 * client's turn between two statements then waits its turn. A benchmark: it prints, it never fails.
 */

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    writers: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '4' },
    busy: { type: 'string', default: '1' },
  },
});
const writers = Number(values.writers);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const busyMs = Number(values.busy);

type StoreModule = typeof postgresStore;
interface Build {
  name: string;
  store: postgresStore.PostgresStore;
  perSecond: number[];
}

let written = 0;
function draft(userId: string): UnitDraft {
  written++;
  return {
    record: { id: `w-${written}`, user_id: userId, text: `a memory of ${userId}, number ${written}`, tags: [], importance: 0.5, source: 'add', created_at: new Date().toISOString(), session_id: 's1', model: 'bench-model' },
    vector: new Float32Array(512).fill(written % 7),
  };
}

async function open(name: string, module: StoreModule, url: string): Promise<Build> {
  const store = new module.PostgresStore({ url, logger: silentLogger() });
  await store.init();
  return { name, store, perSecond: [] };
}

/** Appends/s of `writers` concurrent writers, each to users of its own, for `seconds`. */
async function race(build: Build, roundIndex: number): Promise<number> {
  let done = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      for (let n = 0; performance.now() < until; n++) {
        const userId = `${build.name}-r${roundIndex}-w${writer}-${n}`;
        await build.store.append(userId, [draft(userId)]);
        done++;
      }
    }),
  );
  return done / seconds;
}

const postgres = await startThrowawayPostgres();
const busy = busyMs > 0 ? setInterval(() => {
  const started = performance.now();
  while (performance.now() - started < busyMs) {
    // the event loop held, as a serving replica's is by HTTP, encoding results and scoring
  }
}, 2) : null;
try {
  const builds = [await open('this', postgresStore, await postgres.createDatabase('counter_this'))];
  if (values.against) {
    const module = (await import(pathToFileURL(path.resolve(values.against, 'dist/src/store/postgres-store.js')).href)) as StoreModule;
    builds.push(await open('against', module, await postgres.createDatabase('counter_against')));
  }
  // One unmeasured round each: connections opened, statements and the JIT warm.
  for (const build of builds) await race(build, -1);
  for (let r = 0; r < rounds; r++) for (const build of r % 2 === 0 ? builds : [...builds].reverse()) build.perSecond.push(await race(build, r));
  const summary = Object.fromEntries(builds.map((build) => [build.name, { appends_per_s: build.perSecond.map((v) => round(v, 1)), p50: round(median(build.perSecond), 1) }]));
  const result = {
    writers,
    seconds,
    rounds,
    busy_ms_per_2ms: busyMs,
    cpu: cpus()[0]?.model,
    load: loadavg().map((v) => round(v, 2)),
    ...summary,
    ...(builds.length === 2 ? { this_over_against: round(median(builds[0].perSecond) / median(builds[1].perSecond), 3) } : {}),
  };
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  for (const build of builds) await build.store.close();
} finally {
  if (busy) clearInterval(busy);
  await postgres.destroy();
}
