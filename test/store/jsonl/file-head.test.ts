import { describe, expect, it } from 'vitest';
import { admitToHead, moveHead, newHead } from '../../../src/store/jsonl/file-head.js';
import type { FileStamp } from '../../../src/store/jsonl/file-stamp.js';
import type { StoredRecord } from '../../../src/store/stored-record.js';

function record(seq: number, requestId?: string): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text: 't', tags: [], importance: 0.5, source: 'add', created_at: '2024-01-01T00:00:00.000Z', seq, ...(requestId ? { request_id: requestId } : {}) };
}

const stamp = (size: number): FileStamp => ({ regular: true, dev: 1n, ino: 2n, birth: 3n, size: BigInt(size), mtime: 4n, ctime: 5n });

describe('file heads', () => {
  it('start after the highest seq read or the floor, whichever is later, with the request ids seen', () => {
    const head = newHead([record(4, 'a'), record(2), record(7, 'b')], 1, stamp(100), 100, 3);
    expect(head).toMatchObject({ nextSeq: 8, count: 3, version: 1, covered: 100 });
    expect([...head.requestIds]).toEqual(['a', 'b']);
    expect([...head.offsets]).toEqual([[8, 100]]);
    expect(newHead([record(1)], 1, stamp(10), 10, 50).nextSeq).toBe(50);
  });

  it('take in appended records and remember where each point it moved through begins, the last 64 only', () => {
    const head = newHead([], 1, stamp(0), 0, 0);
    for (let seq = 0; seq < 70; seq++) {
      admitToHead(head, [record(seq, `r${seq}`)], seq + 2);
      moveHead(head, stamp((seq + 1) * 10), (seq + 1) * 10);
    }
    expect(head).toMatchObject({ nextSeq: 70, count: 70, version: 71, covered: 700 });
    expect(head.file.size).toBe(700n);
    expect(head.requestIds.size).toBe(70);
    expect(head.offsets.size).toBe(64);
    expect(head.offsets.get(70)).toBe(700);
    expect(head.offsets.has(6)).toBe(false);
    expect(head.offsets.get(7)).toBe(70);
  });
});
