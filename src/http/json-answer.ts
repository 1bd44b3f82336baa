/**
 * How an answer's JSON leaves the server. Fastify would hand the text to Node as a string; past
 * a size, Node's socket write of a string costs more than encoding it once here and writing the
 * bytes: a /mem/stats answer over 100,000 users (17.7 MB) took ~200 ms of CPU after
 * `JSON.stringify` as a string and ~140 ms as a Buffer (a scratch server answering curl, 2-vCPU
 * AMD EPYC, Node 20). Small answers stay strings: for them the copy would be the cost.
 */

/** Answers of at least this many UTF-16 code units are sent as bytes. */
export const BYTES_FROM_LENGTH = 1 << 20;

export function serializeAnswer(payload: unknown): string | Buffer {
  const text = JSON.stringify(payload);
  return text.length >= BYTES_FROM_LENGTH ? Buffer.from(text, 'utf8') : text;
}
