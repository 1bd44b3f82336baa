import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { openService } from '../open-service.js';
import type { Config } from '../config.js';
import { createMcpServer } from './memory-tools.js';
import { packageVersion } from '../http/package-files.js';
import { startTracing } from '../telemetry/tracing-start.js';

/**
 * `memorypool mcp`: the tools over stdin/stdout for a client that starts this process. stdout
 * belongs to the protocol, so logs go to stderr (as every CLI log does). Runs until the client
 * closes stdin or sends SIGTERM/SIGINT, then closes the service so pending index caches are written.
 */
export async function serveMcpStdio(config: Config): Promise<void> {
  // Each tool call a trace of its own (no HTTP request around it), when an OTLP endpoint is set.
  const tracing = config.tracing === null ? null : await startTracing({ ...config.tracing, serviceVersion: packageVersion() });
  // On the data directory or the database, like the CLI's other data commands.
  const { service, close } = await openService(config, { role: 'command' });
  const pending = new Set<Promise<unknown>>();
  const server = createMcpServer(service, () => undefined, pending);
  const transport = new StdioServerTransport();

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // A client may send its last call and close stdin at once: answer what was asked first.
      await Promise.allSettled([...pending]);
      await new Promise((resolve) => setImmediate(resolve));
      await server.close();
      await close();
      await tracing?.shutdown();
    })();
    return stopping;
  };
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, resolve);
  });
  await server.connect(transport);
  await closed;
  await stop();
}
