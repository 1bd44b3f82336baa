import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { incompleteAddStart, parseLines, readRecordLines, recordLine, type LineFault, type RecordLine } from '../../../src/store/jsonl/record-lines.js';
import { encodeVector, type StoredRecord } from '../../../src/store/stored-record.js';

function record(seq: number, extra: Partial<StoredRecord> = {}): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text: `memory ${seq}`, tags: [], importance: 0.5, source: 'add', created_at: '2024-01-01T00:00:00.000Z', seq, ...extra };
}

const lines = (...items: Array<StoredRecord | string>): Buffer =>
  Buffer.from(items.map((item) => (typeof item === 'string' ? item : recordLine(item))).join(''), 'utf8');

interface Walk {
  records: RecordLine[];
  rejects: Array<{ fault: LineFault; text: string; line: number | undefined }>;
  finished: boolean;
}

function walk(content: Buffer, cutVectors: boolean, from = 0, to = content.length, stopAfter = Infinity): Walk {
  const seen: Walk = { records: [], rejects: [], finished: false };
  seen.finished = readRecordLines(content, from, to, 'u', cutVectors, {
    record: (line) => seen.records.push(line) < stopAfter,
    reject: (fault, start, end, line) => seen.rejects.push({ fault, text: content.toString('utf8', start, end), line }) < stopAfter,
  });
  return seen;
}

describe('readRecordLines (the one reading of a memory line, for every load path)', () => {
  it('reads each line as a record with where it starts, skipping blank lines', () => {
    const content = lines(record(0), '\n', '   \n', record(1));
    const seen = walk(content, false);
    expect(seen.finished).toBe(true);
    expect(seen.rejects).toEqual([]);
    expect(seen.records.map(({ record: r }) => r.seq)).toEqual([0, 1]);
    expect(seen.records.map(({ start }) => start)).toEqual([0, content.indexOf('{', 1)]);
    expect(seen.records.every(({ vec }) => vec === null)).toBe(true);
  });

  it('calls a last line without its newline torn, and anything that is not a memory of the user malformed, with 1-based line numbers', () => {
    const content = lines(record(0), 'not json\n', '{"id":"x"}\n', record(1, { user_id: 'someone else' }), '[1,2]\n', record(2), '{"id":"m3","user_');
    const seen = walk(content, false);
    expect(seen.records.map(({ record: r }) => r.seq)).toEqual([0, 2]);
    expect(seen.rejects.map(({ fault, line }) => [fault, line])).toEqual([
      ['malformed', 2],
      ['malformed', 3],
      ['malformed', 4],
      ['malformed', 5],
      ['torn', 7],
    ]);
    expect(seen.rejects.at(-1)!.text).toBe('{"id":"m3","user_');
  });

  it('skips a torn tail that is only blanks, and tears a line whose newline lies past the range', () => {
    expect(walk(lines(record(0), '  '), false).rejects).toEqual([]);
    const content = lines(record(0), record(1));
    const seen = walk(content, false, 0, content.length - 5);
    expect(seen.records).toHaveLength(1);
    expect(seen.rejects.map(({ fault }) => fault)).toEqual(['torn']);
  });

  it('numbers no line when the walk starts inside the file', () => {
    const content = lines(record(0), 'oops\n');
    const seen = walk(content, false, content.indexOf('oops'));
    expect(seen.rejects).toEqual([{ fault: 'malformed', text: 'oops', line: undefined }]);
  });

  it('stops when the sink says so', () => {
    const seen = walk(lines(record(0), record(1), record(2)), false, 0, undefined, 2);
    expect(seen.finished).toBe(false);
    expect(seen.records).toHaveLength(2);
  });

  it('cuts the record\'s own vec out before parsing and says where its base64 is', () => {
    const vec = encodeVector(Float32Array.of(1, -2.5, 3));
    const content = lines(record(0, { vec, metadata: { vec: 'the user\'s own' } }), record(1));
    const seen = walk(content, true);
    const [first, second] = seen.records;
    expect(first.record.vec).toBeUndefined();
    expect(first.record.metadata).toEqual({ vec: 'the user\'s own' });
    expect(content.toString('latin1', first.vec!.value, first.vec!.close)).toBe(vec);
    expect(second.vec).toBeNull();
  });

  it('leaves a nested vec alone and calls a vec it cannot cut malformed when cutting', () => {
    const nested = lines(record(0, { metadata: { vec: 'AAAA' } }));
    expect(walk(nested, true).records[0].vec).toBeNull();
    expect(walk(nested, true).records[0].record.metadata).toEqual({ vec: 'AAAA' });
    // The first member has no comma before it: not where the cut looks, so the walk would build the string.
    const first = Buffer.from(JSON.stringify({ vec: 'AAAA', ...record(0) }) + '\n');
    expect(walk(first, true).rejects.map(({ fault }) => fault)).toEqual(['malformed']);
    expect(walk(first, false).records[0].record.vec).toBe('AAAA');
  });

  it('reads any records the store writes the same with or without cutting the vector', () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    const stored = fc.record({
      text,
      vector: fc.option(fc.float32Array({ minLength: 1, maxLength: 4, noDefaultInfinity: true, noNaN: true }), { nil: undefined }),
      metadata: fc.option(fc.dictionary(fc.constantFrom('vec', 'a', '"', ',"vec":"'), text, { maxKeys: 3 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(stored, { maxLength: 6 }), (items) => {
        const written = items.map((item, seq) => record(seq, { text: item.text, metadata: item.metadata, vec: item.vector && encodeVector(item.vector) }));
        // Lines as this build writes them (the vector last) and as earlier ones did (JSON.stringify: wherever it stands).
        const content = Buffer.from(written.map((r, seq) => (seq % 2 === 0 ? recordLine(r) : `${JSON.stringify({ id: r.id, vec: r.vec, ...r })}\n`)).join(''), 'utf8');
        const plain = walk(content, false);
        const cut = walk(content, true);
        expect(plain.rejects).toEqual([]);
        expect(cut.rejects).toEqual([]);
        expect(plain.records.map(({ record: r }) => r)).toEqual(written);
        expect(cut.records.map(({ record: r }) => r)).toEqual(written.map(({ vec: _vec, ...r }) => r));
        expect(cut.records.map(({ vec }) => (vec ? content.toString('latin1', vec.value, vec.close) : undefined))).toEqual(written.map((r) => r.vec));
      }),
      { numRuns: 60 },
    );
  });
});

describe('recordLine (a memory as the store writes its line)', () => {
  it('is the record as JSON, one line, its base64 vector last and verbatim', () => {
    const vec = encodeVector(Float32Array.from({ length: 512 }, (_, i) => Math.sin(i) * 0.1));
    const stored = record(7, { vec, text: 'she said "hi" \\ then\nleft \u0001 ☃', metadata: { vec: 'AAAA', '"': ',"vec":"' } });
    const line = recordLine(stored);
    expect(line.endsWith(`,"vec":"${vec}"}\n`)).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual(stored);
    expect(recordLine(record(1))).toBe(JSON.stringify(record(1)) + '\n');
  });

  it('stringifies a vec that is not whole base64, so that any string survives', () => {
    const odd = ['AAAA"AAA', 'AAAA\\AAA', 'AAAA\u0001AAA', 'AAAA\ud800AAA', 'AAAA AAA', 'AAAA\nAAA', 'AA==AAAA', 'A=AA', 'AAA', 'AAA\u0000', 'AAA\ud841', 'AAA\u0141', '\ud841\udc41AAAAAA', 'é', '', '-_-_'];
    // Through the bytes a file holds: a lone surrogate written raw would come back as U+FFFD.
    const reread = (line: string): unknown => JSON.parse(Buffer.from(line, 'utf8').toString('utf8'));
    for (const vec of odd) expect(reread(recordLine(record(0, { vec })))).toEqual(record(0, { vec }));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 16 }), fc.string({ unit: fc.constantFrom('A', '=', '+', '\u0000', '\ud841', '\u0141', '"'), maxLength: 12 })), (vec) => {
        const line = recordLine(record(0, { vec }));
        expect(line.indexOf('\n')).toBe(line.length - 1);
        expect(reread(line)).toEqual(record(0, { vec }));
      }),
      { numRuns: 300 },
    );
  });
});

describe('parseLines', () => {
  it('keeps each rejected line\'s text and the warning to log for it', () => {
    const parsed = parseLines(lines(record(0), 'bad\n', record(1), '{"torn'), 0, Infinity, 'u');
    expect(parsed.records.map((r) => r.seq)).toEqual([0, 1]);
    expect(parsed.rejected).toEqual(['bad', '{"torn']);
    expect(parsed.warnings).toEqual([
      { line: 2, msg: 'malformed memory line; quarantined' },
      { line: 4, msg: 'torn last line (no newline: a write was cut short); quarantined' },
    ]);
  });
});

describe('incompleteAddStart', () => {
  const add = (requestId: string, batch: number, ...seqs: number[]) => seqs.map((seq) => record(seq, { request_id: requestId, batch }));

  it('finds where the last Add starts when it holds fewer records than it wrote', () => {
    expect(incompleteAddStart([...add('a', 1, 0), ...add('b', 3, 1, 2)])).toBe(1);
    expect(incompleteAddStart(add('b', 3, 0, 1))).toBe(0);
  });

  it('is -1 for a whole last Add, records without an Add, and none at all', () => {
    expect(incompleteAddStart([...add('a', 2, 0, 1), ...add('b', 1, 2)])).toBe(-1);
    expect(incompleteAddStart([...add('a', 2, 0), record(1)])).toBe(-1);
    expect(incompleteAddStart([])).toBe(-1);
    // A rewrite drops `batch`: what is left of an Add after a delete is no torn Add.
    expect(incompleteAddStart([record(0, { request_id: 'a' })])).toBe(-1);
  });
});
