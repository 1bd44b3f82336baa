import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Logs are JSON lines on stderr (stdout belongs to the CLI's JSON output). At the default level
 * nothing logs request bodies, queries or memory text: the platform's data serves the evaluation only.
 */
export function createLogger(level: string = 'info'): Logger {
  return pino({ level, base: { service: 'memorypool' } }, pino.destination({ fd: 2, sync: true }));
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
