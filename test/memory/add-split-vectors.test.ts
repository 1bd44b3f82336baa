import { describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embedding/create-embedder.js';
import type { ConversationMessage } from '../../src/memory/types.js';
import { openService, register } from '../support/helper.js';

// A session's stored vectors do not depend on how a client split its messages into Adds (issue
// 31): the index, an export and its re-import are then the same whatever the client's chunking.

const TEXTS = [
  'I went to a LGBTQ support group yesterday and it was so powerful.',
  'That sounds inspiring! How did it go?',
  'We painted a sunset together at the lake last weekend, the kids loved it.',
  'ok',
  'My grandma gave me a necklace from Sweden when I was ten; it reminds me of her every day.',
  'Running a charity race for mental health was amazing.',
  'Wow!',
  'I have been reading a book about adoption agencies and what they ask of parents.',
  'The pottery class on Friday was relaxing.',
  'We went camping in the mountains and saw so many stars that night.',
  'I started learning the violin this spring.',
  'Nice, keep going.',
];
const MESSAGES: ConversationMessage[] = TEXTS.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: Date.UTC(2023, 4, 8, 13, i) }));

async function storedVectors(splits: number[]): Promise<Map<string, number[]>> {
  const embedder = createEmbedder({ embedder: 'onnx', encoderWorkers: 2 });
  register(() => embedder.close());
  // Both copies, as a server has them under ingest: texts then run on either.
  await embedder.loadedAll?.();
  const service = await openService({ embedder });
  let start = 0;
  for (const [i, size] of splits.entries()) {
    await service.addConversation({ requestId: `r${i}`, userId: 'u', sessionId: 's1', messages: MESSAGES.slice(start, start + size) });
    start += size;
  }
  expect(start).toBe(MESSAGES.length);
  const units = await service.exportUnits('u');
  return new Map(units.map((u) => [u.denseText, Array.from(u.vector)]));
}

describe('stored vectors', () => {
  it('are the same however a session was split into Adds', async () => {
    const whole = await storedVectors([12]);
    expect(whole.size).toBe(MESSAGES.length);
    for (const splits of [[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [5, 7], [2, 9, 1]]) {
      const split = await storedVectors(splits);
      expect([...split.keys()].sort()).toEqual([...whole.keys()].sort());
      for (const [text, vector] of whole) expect(split.get(text), text).toEqual(vector);
    }
  });
});
