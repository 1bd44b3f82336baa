import type { FeedEvent } from '../memory/change-feed.js';
import { withSpan } from '../telemetry/tracing.js';
import { SIGNATURE_HEADER, signatureHeader } from './signature.js';
import type { WebhookSpec } from './webhooks-file.js';

/** A receiver that has not answered in this long has failed the attempt (it is retried). */
export const DELIVERY_TIMEOUT_MS = 5_000;

export const DELIVERY_SPAN = 'memorypool.webhook.deliver';

/** What a delivery POSTs: the event as GET /mem/changes answers it, and an id to deduplicate on. */
export type DeliveryBody = FeedEvent & { id: string };

export type DeliveryOutcome = { ok: true } | { ok: false; error: string };

/** The same id for every attempt at one event, so a receiver that saw it once can drop a retry. */
export function deliveryId(hookId: string, seq: number): string {
  return `${hookId}:${seq}`;
}

/**
 * One attempt: POST the event signed, under a span of its own. Succeeds on a 2xx answer; any other
 * status, a redirect (not followed: the signature is for this URL's owner), a network error or no
 * answer within the timeout is a failure, returned as a short reason for GET /mem/webhooks.
 */
export function postEvent(hook: WebhookSpec, event: FeedEvent, attempt: number, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<DeliveryOutcome> {
  const body = JSON.stringify({ id: deliveryId(hook.id, event.seq), ...event } satisfies DeliveryBody);
  const attributes = { 'memorypool.webhook.id': hook.id, 'memorypool.change.seq': event.seq, 'memorypool.change.type': event.type, 'memorypool.webhook.attempt': attempt };
  return withSpan(DELIVERY_SPAN, attributes, async (span): Promise<DeliveryOutcome> => {
    try {
      const { url, authorization } = target(hook.url);
      const response = await fetch(url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'memorypool-webhooks',
          [SIGNATURE_HEADER]: signatureHeader(hook.secret, body, Math.floor(Date.now() / 1000)),
          ...(authorization === undefined ? {} : { authorization }),
        },
        body,
      });
      // Read to the end, so the connection is reused (the receiver's words are not kept).
      await response.arrayBuffer().catch(() => undefined);
      span.setAttribute('http.response.status_code', response.status);
      if (response.status >= 200 && response.status < 300) return { ok: true };
      const error = `the receiver answered ${response.status}`;
      span.fail(new Error(error));
      return { ok: false, error };
    } catch (error) {
      const name = (error as Error).name;
      const reason = name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : `cannot reach the receiver (${causeOf(error)})`;
      span.fail(new Error(reason));
      return { ok: false, error: reason };
    }
  });
}

/** fetch refuses a URL with credentials in it: they go as basic authentication, as a browser or curl sends them. */
function target(hookUrl: string): { url: string; authorization?: string } {
  const parsed = new URL(hookUrl);
  if (parsed.username === '' && parsed.password === '') return { url: hookUrl };
  const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), authorization: `Basic ${Buffer.from(credentials).toString('base64')}` };
}

/** fetch's "fetch failed" hides the reason in its cause (ECONNREFUSED, ...). */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
