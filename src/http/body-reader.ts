import { isAscii } from 'node:buffer';
import { createError } from '../errors.js';
import { decodeBody, JsonSyntaxError, parseJson, StopFreeRuns } from './json-body.js';

/**
 * A request body's JSON value. A small body is read at once. A large one is decoded and scanned
 * in slices, each a step of the event loop of its own, so that other users' requests run between
 * them: at once, a 1 MB body held the loop for several milliseconds in one piece (its text
 * decoded, every byte of its strings scanned), and an ordinary Search arriving meanwhile waited
 * that long (bench/hostile-load.ts). What is left for the one synchronous step is the parse of
 * its tokens, which crosses the long strings the slices recorded without scanning them again.
 * Read either way, a body gives the same value, or the same error with the same position.
 */

/** Bodies from this size on are read in slices. */
export const SLICED_BODY_BYTES = 128 * 1024;
/** One slice: ~0.1 ms of decoding and scanning on the 2-core dev machine. */
const SLICE_BYTES = 64 * 1024;

const BYTE_ORDER_MARK = 0xfeff;

/** The value of a body read at once; throws MALFORMED_JSON. */
export function readJsonBody(buffer: Buffer): unknown {
  let text: string;
  try {
    text = decodeBody(buffer);
  } catch {
    throw notUtf8();
  }
  return parse(text);
}

/** The same value as readJsonBody's, read in slices with the event loop's other work between them. */
export async function readJsonBodyInSlices(buffer: Buffer): Promise<unknown> {
  // Each slice of an ASCII body read as Latin-1 is a string of its own on V8's heap, where the
  // whole body read at once, past ~1 MB, is an external string, whose memory only a full
  // collection returns: a client sending such bodies back to back made one every ~30 requests.
  const decoder = isAscii(buffer) ? null : new TextDecoder('utf-8', { fatal: true });
  const runs = new StopFreeRuns();
  const pieces: string[] = [];
  let length = 0;
  for (let at = 0; at < buffer.length; at += SLICE_BYTES) {
    if (at > 0) await nextTurn();
    const end = Math.min(buffer.length, at + SLICE_BYTES);
    let piece: string;
    if (decoder === null) {
      piece = buffer.toString('latin1', at, end);
    } else {
      try {
        // A character cut by the slice's end waits in the decoder for the next slice.
        piece = decoder.decode(buffer.subarray(at, end), { stream: end < buffer.length });
      } catch {
        throw notUtf8();
      }
    }
    runs.scan(piece, length);
    length += piece.length;
    pieces.push(piece);
  }
  runs.finish(length);
  await nextTurn();
  return parse(pieces.join(''), runs);
}

/** The body's text parsed, a byte order mark the decoder left at its start taken off (`runs` with it). */
function parse(text: string, runs?: StopFreeRuns): unknown {
  if (text.charCodeAt(0) === BYTE_ORDER_MARK) {
    text = text.slice(1);
    runs?.shift(1);
  }
  try {
    return parseJson(text, undefined, runs);
  } catch (error) {
    const detail = error instanceof JsonSyntaxError ? `Request body is not valid JSON: ${error.message}` : undefined;
    throw createError('MALFORMED_JSON', detail);
  }
}

function notUtf8() {
  return createError('MALFORMED_JSON', 'Request body is not valid UTF-8');
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
