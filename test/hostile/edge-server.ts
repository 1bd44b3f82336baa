import { loadConfig, type ConfigInput } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/main.js';
import { register, tempDir } from '../support/helper.js';

/**
 * The real server in this process (main.ts's startServer: the server factory, plugins and all),
 * on an ephemeral loopback port with the hash embedder, closed after the test. The shell's
 * MEMORYPOOL_* variables are ignored: the test says every setting it depends on.
 */
export async function startEdgeServer(settings: Partial<ConfigInput> = {}): Promise<RunningServer> {
  const config = loadConfig({ host: '127.0.0.1', port: 0, embedder: 'hash', logLevel: 'silent', dataDir: await tempDir(), ...settings }, {});
  const server = await startServer(config);
  register(() => server.close());
  return server;
}
