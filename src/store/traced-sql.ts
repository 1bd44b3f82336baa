import type pg from 'pg';
import { tracingEnabled, withSpan } from '../telemetry/tracing.js';

/** What every PostgreSQL span carries (the database semantic conventions). */
export const POSTGRES_SPAN = { 'memorypool.store': 'postgresql', 'db.system.name': 'postgresql' } as const;

/**
 * The connection of a write transaction with each statement a span of its own beneath the
 * write's, named by its operation and carrying its text: the statements are parameterised, so
 * the text holds no user's data (the values are not recorded). The connection as it is while
 * tracing is off.
 */
export function tracedClient(client: pg.PoolClient): pg.PoolClient {
  if (!tracingEnabled()) return client;
  return new Proxy(client, {
    get(target, key) {
      if (key === 'query') {
        return (text: string, values?: unknown[]) =>
          withSpan(operationOf(text), { ...POSTGRES_SPAN, 'db.operation.name': operationOf(text), 'db.query.text': text }, () => target.query(text, values));
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function operationOf(sql: string): string {
  return /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
}
