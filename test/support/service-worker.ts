/**
 * A child process for the tests of several processes on one data directory: it opens the
 * service exactly as the CLI's commands and `memorypool mcp` do (`openService`, the hash
 * embedder) and writes to one user, printing each acknowledged write as a JSON line on stdout the
 * moment it is acknowledged (so a test that kills it knows what was acknowledged).
 *
 *   service-worker.ts <data dir> <user[,user...]> <tag> <rounds>
 *
 * Each round, for each user in turn: an Add of one memory (`<tag> m<i>`); every second round a
 * delete of the memory added the round before; every third round an Add of two messages under
 * the request id `shared-<i>`, which every worker sends too (the store keeps one).
 */
import { openService } from '../../src/open-service.js';
import { loadConfig } from '../../src/config.js';

const [dataDir, userList, tag, rounds] = process.argv.slice(2);
const users = userList.split(',');
const { service, close } = await openService(loadConfig({ dataDir, embedder: 'hash' }), { role: 'command' });
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + '\n');
const previous = new Map<string, string>();
for (let i = 0; i < Number(rounds); i++) {
  for (const userId of users) {
    const memory = await service.addMemory({ userId, text: `${tag} m${i}` });
    say({ op: 'added', user: userId, id: memory.id, text: memory.text });
    const before = previous.get(userId);
    if (i % 2 === 1 && before !== undefined) {
      await service.delete(userId, before);
      say({ op: 'deleted', user: userId, id: before });
    }
    previous.set(userId, memory.id);
    if (i % 3 === 0) {
      const requestId = `shared-${i}`;
      const messages = [0, 1].map((part) => ({ role: tag, content: `${requestId} from ${tag} part ${part}` }));
      const outcome = await service.addConversation({ userId, requestId, sessionId: 's', messages });
      say({ op: 'conversation', user: userId, request: requestId, stored: outcome.stored, units: outcome.units });
    }
  }
}
await close();
say({ op: 'done' });
