import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { ChangesRequest } from '../memory/change-feed.js';
import { DOOR_METHODS } from '../memory/memory-api.js';
import type { MemoryService } from '../memory/memory-service.js';
import type { BatchOutcome } from '../memory/types.js';
import { openService } from '../open-service.js';
import { platformSearch } from '../protocol/platform.js';
import { prefixesCover, userCheckOf } from '../protocol/user-scope.js';
import { nameThisThread } from '../telemetry/thread-name.js';
import { continueTrace } from '../telemetry/tracing.js';
import { startTracing } from '../telemetry/tracing-start.js';
import { PortEmbedder, type EmbedderIdentity } from './port-embedder.js';
import { threadOf, toWire, type ThreadCall, type ThreadReply, type ThreadStarted } from './wire.js';

/**
 * A server's service thread (started by service-threads.ts): one MemoryService on the process's
 * data directory or database, answering the calls the main thread sends it for the users it owns
 * (and, on thread 0, the calls that concern the whole pool). Its encoder is the main thread's.
 */

export interface ServiceThreadData {
  config: Config;
  /** This thread's number, and how many there are: the users it owns are those `threadOf` gives it. */
  index: number;
  threads: number;
  embedderPort: MessagePort;
  embedder: EmbedderIdentity;
  /** The package's version, for the spans' resource. */
  serviceVersion: string;
}

/** The methods a call may name: the operations of MemoryApi and the server's own (sweeps, webhooks, drain). */
const CALLABLE = new Set<string>([
  ...DOOR_METHODS.filter((name) => name !== 'embedder'),
  // The main thread's own calls: the counts and sweeps it spreads over the threads, the platform
  // Search answered whole on the user's thread, and shutdown.
  'listUsers',
  'indexesInProgress',
  'sweepExpired',
  'purgeOlderThan',
  'pruneChanges',
  'startWebhooks',
  'endLongPolls',
  'platformSearchAnswer',
  'expiredHeld',
]);

const data = workerData as ServiceThreadData;
const port = parentPort!;
const owns = (userId: string): boolean => threadOf(userId, data.threads) === data.index;

async function run(): Promise<void> {
  nameThisThread(`mp-service-${data.index}`);
  const tracing = data.config.tracing === null ? null : await startTracing({ ...data.config.tracing, serviceVersion: data.serviceVersion });
  const opened = await openService(data.config, {
    role: 'server',
    part: {
      embedder: new PortEmbedder(data.embedderPort, data.embedder),
      owns,
      cacheShare: 1 / data.threads,
    },
  });
  const { service } = opened;

  let closing: Promise<void> | null = null;
  port.on('message', (call: ThreadCall) => {
    if (call.method === 'close') {
      closing ??= (async () => {
        await opened.close();
        await tracing?.shutdown();
      })();
      // The thread then ends by itself, its exit handlers run (the lock owner files it wrote removed).
      closing.then(
        () => reply({ id: call.id, result: null }),
        (error: unknown) => reply({ id: call.id, error: toWire(error) }),
      ).finally(() => setImmediate(() => process.exit(0)));
      return;
    }
    if (!CALLABLE.has(call.method)) {
      reply({ id: call.id, error: toWire(new Error(`No service method ${call.method}`)) });
      return;
    }
    continueTrace(call.trace, () => invoke(service, call)).then(
      (result) => reply({ id: call.id, result }),
      (error: unknown) => reply({ id: call.id, error: toWire(error) }),
    );
  });
  const started: ThreadStarted = { started: true, dataDir: service.dataDir };
  port.postMessage(started);
}

async function invoke(service: MemoryService, call: ThreadCall): Promise<unknown> {
  // A thread describes the users it owns; the main thread puts the threads' parts together.
  if (call.method === 'stats') return service.stats(owns);
  // The platform's Search door, whole, on the caller's scope as data (see PlatformSearchDoor).
  if (call.method === 'platformSearchAnswer') {
    const [input, topKMax, prefixes] = call.args as [unknown, number, readonly string[] | null];
    return platformSearch(service, input, topKMax, userCheckOf(prefixes));
  }
  const args = call.method === 'changes' ? [withAllowed(call.args[0] as ChangesRequest)] : call.args;
  const method = (service as unknown as Record<string, (...args: unknown[]) => unknown>)[call.method];
  const result = await method.apply(service, args);
  // A refused operation of a batch answers its error: as data, since structured clone keeps only an Error's message.
  if (call.method === 'batch') return (result as BatchOutcome[]).map((outcome) => ('error' in outcome ? { error: toWire(outcome.error) } : outcome));
  return result;
}

/** The scope check the door sent as data (`prefixes`), as the function the change feed calls. */
function withAllowed(request: ChangesRequest): ChangesRequest {
  const prefixes = request.prefixes ?? null;
  return { ...request, allowed: (userId) => prefixesCover(prefixes, userId) };
}

function reply(answer: ThreadReply): void {
  try {
    port.postMessage(answer);
  } catch (error) {
    // An answer that structured clone cannot carry is a bug to see, not a call that never ends.
    port.postMessage({ id: answer.id, error: toWire(error) } satisfies ThreadReply);
  }
}

run().catch((error: Error) => {
  const failed: ThreadStarted = { started: false, error: error.message };
  port.postMessage(failed);
});
