/**
 * A child process for the tests of several processes on one data directory: it opens the
 * service exactly as the CLI's commands and `memorypool mcp` do (`openCommandService`, the hash
 * embedder) and writes to one user, printing each acknowledged write as a JSON line on stdout the
 * moment it is acknowledged (so a test that kills it knows what was acknowledged).
 *
 *   service-worker.ts <data dir> <user> <tag> <rounds>
 *
 * Each round: an Add of one memory (`<tag> m<i>`); every second round a delete of the memory
 * added the round before; every third round an Add of two messages under the request id
 * `shared-<i>`, which every worker sends too (the store keeps one).
 */
import { openCommandService } from '../../src/cli/command-service.js';
import { loadConfig } from '../../src/config.js';

const [dataDir, userId, tag, rounds] = process.argv.slice(2);
const { service, close } = await openCommandService(loadConfig({ dataDir, embedder: 'hash' }));
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + '\n');
let previous: string | null = null;
for (let i = 0; i < Number(rounds); i++) {
  const memory = await service.addMemory({ userId, text: `${tag} m${i}` });
  say({ op: 'added', id: memory.id, text: memory.text });
  if (i % 2 === 1 && previous !== null) {
    await service.delete(userId, previous);
    say({ op: 'deleted', id: previous });
  }
  previous = memory.id;
  if (i % 3 === 0) {
    const requestId = `shared-${i}`;
    const messages = [0, 1].map((part) => ({ role: tag, content: `${requestId} from ${tag} part ${part}` }));
    const outcome = await service.addConversation({ userId, requestId, sessionId: 's', messages });
    say({ op: 'conversation', request: requestId, stored: outcome.stored, units: outcome.units });
  }
}
await close();
say({ op: 'done' });
