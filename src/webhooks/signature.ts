import { createHmac } from 'node:crypto';

/** The header each delivery carries. */
export const SIGNATURE_HEADER = 'memorypool-signature';

/**
 * `t=<unix seconds>,v1=<hex>`: the HMAC-SHA256 of `<t>.<body>` under the hook's secret, the scheme
 * Stripe documents, so a receiver can use code it already has. The time is signed with the body,
 * so a receiver that refuses old timestamps also refuses a captured delivery replayed later.
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}
