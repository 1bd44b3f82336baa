/**
 * The setup of the phases that also run on their own (hostile-load.ts, freshness-check.ts): a
 * server on a data directory, answering once its model is loaded, with the longest conversation
 * of the workload ingested as one user (whole sessions per Add).
 */
import { checkAdd, LoopbackClient, runLoad } from './http-load.js';
import { ServerProcess } from './server-process.js';
import { sessionAdds, type Conversation, type Workload } from './workload.js';

export async function serveLongestConversation(
  dataDir: string,
  workload: Workload,
  userPrefix: string,
  log: (line: string) => void,
): Promise<{ server: ServerProcess; userId: string; conversation: Conversation }> {
  const server = await ServerProcess.start({ dataDir });
  const setup = new LoopbackClient(server.url, 8);
  try {
    for (let attempt = 0; ; attempt++) {
      const answer = await setup.get('/health', 5_000).catch(() => null);
      if (answer?.status === 200) break;
      if (attempt > 600 || !server.running) throw new Error('the server did not start');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const conversation = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length)[0];
    const userId = `${userPrefix}-${conversation.id}`;
    const adds = sessionAdds(conversation, userId, 64);
    let next = 0;
    log(`ingesting ${conversation.turns.length} turns as ${userId}`);
    const ingest = await runLoad({ client: setup, path: '/add', concurrency: 4, nextBody: () => adds[next++], check: checkAdd, timeoutMs: 300_000 });
    if (ingest.errors > 0) throw new Error(`ingest failed: ${JSON.stringify(ingest.error_samples)}`);
    return { server, userId, conversation };
  } finally {
    setup.close();
  }
}
