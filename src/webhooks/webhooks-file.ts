import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ChangeType } from '../store/memory-store.js';

/** The event types a hook may ask for: the change feed's (src/store/memory-store.ts). */
export const HOOK_EVENT_TYPES = ['added', 'updated', 'deleted', 'expired', 'user_deleted'] as const satisfies readonly ChangeType[];

/** One hook as the service runs it. */
export interface WebhookSpec {
  /** Names the hook's progress in the store: the `id` given, else derived from the URL (so reordering the file or changing a secret keeps it). */
  id: string;
  url: string;
  secret: string;
  /** Only these event types; null: every type. */
  events: readonly ChangeType[] | null;
  /** Only these users' events; null: every user. */
  users: readonly string[] | null;
}

const hookSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 letters, digits, dots, dashes or underscores').optional(),
    url: z
      .string({ error: 'must be a string' })
      .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), { error: 'must be an http:// or https:// URL' }),
    secret: z.string({ error: 'must be a string' }).refine((value) => value.trim() !== '', { error: 'must not be empty' }),
    events: z.array(z.enum(HOOK_EVENT_TYPES, { error: `must each be one of ${HOOK_EVENT_TYPES.join(', ')}` })).min(1, 'must name at least one type (or be left out: every type)').optional(),
    users: z.array(z.string().min(1, 'must not be empty')).min(1, 'must name at least one user (or be left out: every user)').optional(),
  })
  .strict();

const fileSchema = z.array(hookSchema, { error: 'must be a JSON list of {url, secret, events?, users?}' });

/**
 * MEMORYPOOL_WEBHOOKS_FILE's hooks, checked at the start so a mistake stops the server with the
 * file and the place named. As with the tokens file, messages never quote the file's text: it
 * holds the secrets.
 */
export function readWebhooksFile(file: string): WebhookSpec[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`Webhooks file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new Error(`Webhooks file ${file} is not valid JSON${position === undefined ? '' : ` (at position ${position})`}`);
  }
  return parseWebhooks(parsed, `Webhooks file ${file}`);
}

/** The hooks of a parsed file; `source` names it in errors. */
export function parseWebhooks(value: unknown, source: string): WebhookSpec[] {
  const result = fileSchema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.length === 0 ? '(top level)' : issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('').replace(/^\./, '')}: ${issue.message}`);
    throw new Error(`${source} is invalid: ${problems.join('; ')}`);
  }
  const hooks = result.data.map((hook) => ({
    id: hook.id ?? `h-${createHash('sha256').update(hook.url).digest('hex').slice(0, 16)}`,
    url: hook.url,
    secret: hook.secret,
    events: hook.events ? [...new Set(hook.events)] : null,
    users: hook.users ? [...new Set(hook.users)] : null,
  }));
  const seen = new Map<string, number>();
  hooks.forEach((hook, index) => {
    const first = seen.get(hook.id);
    if (first !== undefined) throw new Error(`${source} is invalid: [${index}]: the same id as [${first}] (${hook.id}); hooks to one URL need an "id" each`);
    seen.set(hook.id, index);
  });
  return hooks;
}

/** Whether the hook wants an event of this type and user. */
export function hookWants(hook: Pick<WebhookSpec, 'events' | 'users'>, event: { type: ChangeType; user_id: string }): boolean {
  return (hook.events === null || hook.events.includes(event.type)) && (hook.users === null || hook.users.includes(event.user_id));
}
