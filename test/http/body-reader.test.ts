import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../bench/workload.js';
import { isAppError } from '../../src/errors.js';
import { readJsonBody, readJsonBodyInSlices, SLICED_BODY_BYTES } from '../../src/http/body-reader.js';
import { parseJson, StopFreeRuns } from '../../src/http/json-body.js';
import { writtenAsNonInteger } from '../../src/protocol/number-literals.js';

/** What a reader gives: the value, or the error's code and detail. */
async function outcome(read: () => unknown): Promise<{ value?: unknown; marks?: string; error?: string }> {
  try {
    const value = await read();
    return { value, marks: literalMarks(value) };
  } catch (error) {
    if (!isAppError(error)) throw error;
    return { error: `${error.code}: ${error.message}` };
  }
}

/** Which numbers were written with a fraction or an exponent, everywhere in the value. */
function literalMarks(value: unknown, path = '$'): string {
  if (Array.isArray(value)) return value.map((item, i) => `${i}:${writtenAsNonInteger(value, i)}` + literalMarks(item, `${path}[${i}]`)).join(',');
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).map(([key, item]) => `${key}:${writtenAsNonInteger(value as object, key)}` + literalMarks(item, `${path}.${key}`)).join(',');
  }
  return '';
}

const FRAGMENTS = ['a', 'word ', 'é', '😀', '漢', '\\n', '\\"', '\\\\', '\\u00e9', '\\ud83d\\ude00', '\t', '\n', '\u0001', '"', '\\x', '\\', '1.5', '{', ']'];

/** A body of long strings, escapes and multi-byte characters, and (when `broken`) the faults a client makes. */
function body(next: () => number, broken: boolean): Buffer {
  const text = (length: number) => {
    let out = '';
    while (out.length < length) {
      const r = next();
      if (r < 0.9) out += 'x'.repeat(1 + Math.floor(next() * 3000));
      else out += FRAGMENTS[Math.floor(next() * (broken ? FRAGMENTS.length : 10))];
    }
    return out;
  };
  const parts: string[] = [];
  const fields = 1 + Math.floor(next() * 6);
  for (let i = 0; i < fields; i++) {
    const kind = next();
    if (kind < 0.6) parts.push(`"f${i}":"${text(Math.floor(next() * 300_000))}"`);
    else if (kind < 0.8) parts.push(`"f${i}":[${Array.from({ length: 1 + Math.floor(next() * 50) }, () => `"${text(Math.floor(next() * 40))}"`).join(',\n ')}]`);
    else parts.push(`"f${i}":${next() < 0.5 ? '100.0' : '7'}`);
  }
  const json = `{\n${parts.join(',\n')}\n}`;
  const bytes = Buffer.from(json, 'utf8');
  if (broken && next() < 0.3) bytes[Math.floor(next() * bytes.length)] = 0xff;
  return bytes;
}

describe('readJsonBodyInSlices', () => {
  it('reads every body as readJsonBody does: the same value and marks, or the same error at the same place', async () => {
    const next = mulberry32(20261207);
    let sliced = 0;
    let failed = 0;
    for (let i = 0; i < 60; i++) {
      const bytes = body(next, i % 2 === 1);
      if (bytes.length >= SLICED_BODY_BYTES) sliced++;
      const expected = await outcome(() => readJsonBody(bytes));
      if (expected.error) failed++;
      expect(await outcome(() => readJsonBodyInSlices(bytes)), `body ${i}`).toEqual(expected);
    }
    // The generator made both kinds, large bodies among them.
    expect(sliced).toBeGreaterThan(20);
    expect(failed).toBeGreaterThan(10);
    expect(failed).toBeLessThan(50);
  });

  it('decodes a character cut by a slice boundary, and refuses bytes that are not UTF-8 in any slice', async () => {
    // '😀' is 4 bytes: every offset of it across the first 64 KB boundary.
    for (let shift = 0; shift < 4; shift++) {
      const text = JSON.stringify({ a: 'x'.repeat(64 * 1024 - 8 - shift) + '😀é漢'.repeat(50_000) });
      const bytes = Buffer.from(text, 'utf8');
      expect(await readJsonBodyInSlices(bytes)).toEqual(JSON.parse(text));
    }
    const large = Buffer.from(JSON.stringify({ a: 'é'.repeat(200_000) }), 'utf8');
    for (const at of [10, 70_000, large.length - 3]) {
      const bad = Buffer.from(large);
      bad[at] = 0xff;
      await expect(readJsonBodyInSlices(bad)).rejects.toMatchObject({ code: 'MALFORMED_JSON', message: 'Request body is not valid UTF-8' });
    }
    // A sequence left unfinished at the very end.
    await expect(readJsonBodyInSlices(large.subarray(0, large.length - 3))).rejects.toMatchObject({ message: 'Request body is not valid UTF-8' });
  });

  it('takes off a byte order mark as readJsonBody does, and places errors after it alike', async () => {
    const value = { a: 'é'.repeat(100_000) };
    for (const marks of ['\ufeff', '\ufeff\ufeff']) {
      const good = Buffer.from(marks + JSON.stringify(value), 'utf8');
      expect(await outcome(() => readJsonBodyInSlices(good))).toEqual(await outcome(() => readJsonBody(good)));
      const bad = Buffer.from(`${marks}{"a":"${'y'.repeat(200_000)}\u0002"}`, 'utf8');
      const expected = await outcome(() => readJsonBody(bad));
      expect(expected.error).toMatch(/at position \d+/);
      expect(await outcome(() => readJsonBodyInSlices(bad))).toEqual(expected);
    }
  });

  it('lets other work run between its slices', async () => {
    const bytes = Buffer.from(JSON.stringify({ a: 'z'.repeat(2 * 1024 * 1024) }), 'latin1');
    let turns = 0;
    let reading = true;
    const count = () => {
      turns++;
      if (reading) setImmediate(count);
    };
    setImmediate(count);
    const value = (await readJsonBodyInSlices(bytes)) as { a: string };
    reading = false;
    expect(value.a.length).toBe(2 * 1024 * 1024);
    // 32 slices of 64 KB: the counter ran between them. Read at once, it could not have run at all.
    expect(turns).toBeGreaterThanOrEqual(30);
  });
});

describe('StopFreeRuns', () => {
  const STOPS = /["\\\u0000-\u001f]/g;
  /** The first stop at or after `pos`, or the text's length: what the parse's own scan finds. */
  const firstStop = (text: string, pos: number) => {
    STOPS.lastIndex = pos;
    return STOPS.exec(text)?.index ?? text.length;
  };

  it('answers, for any position a recorded run holds, the first stop after it, whatever the pieces', () => {
    const next = mulberry32(7);
    for (let round = 0; round < 40; round++) {
      let text = '';
      while (text.length < 20_000) text += next() < 0.8 ? 'q'.repeat(Math.floor(next() * 3000)) : '"\\\n\u0000'[Math.floor(next() * 4)];
      const runs = new StopFreeRuns();
      for (let at = 0; at < text.length; ) {
        const end = Math.min(text.length, at + 1 + Math.floor(next() * 5000));
        runs.scan(text.slice(at, end), at);
        at = end;
      }
      runs.finish(text.length);
      let held = 0;
      for (let pos = 0; pos < text.length; pos += 1 + Math.floor(next() * 50)) {
        const end = runs.endAt(pos);
        if (end < 0) continue;
        held++;
        expect(end).toBe(firstStop(text, pos));
      }
      expect(held).toBeGreaterThan(0);
    }
  });

  it('keeps only runs of LONG_RUN characters or more: the parse scans shorter ones itself', () => {
    const short = 'a'.repeat(StopFreeRuns.LONG_RUN - 1);
    const runs = new StopFreeRuns();
    const text = `"${short}"${'b'.repeat(StopFreeRuns.LONG_RUN)}`;
    runs.scan(text, 0);
    runs.finish(text.length);
    expect(runs.endAt(1)).toBe(-1);
    expect(runs.endAt(short.length + 2)).toBe(text.length);
    expect(parseJson(`["${'c'.repeat(5000)}","d"]`, undefined, recorded(`["${'c'.repeat(5000)}","d"]`))).toEqual(['c'.repeat(5000), 'd']);
  });

  it('moves its runs with the text when a byte order mark is taken off its start', () => {
    const text = `\ufeff["${'e'.repeat(3000)}"]`;
    const runs = recorded(text);
    runs.shift(1);
    // In the text without the mark, the string's characters start at 2 and its quote is at 3,002.
    expect(runs.endAt(2)).toBe(3002);
    expect(parseJson(text.slice(1), undefined, runs)).toEqual(['e'.repeat(3000)]);
  });
});

function recorded(text: string): StopFreeRuns {
  const runs = new StopFreeRuns();
  runs.scan(text, 0);
  runs.finish(text.length);
  return runs;
}
