import { describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embedding/create-embedder.js';
import type { Embedder } from '../../src/embedding/embedder.js';
import { build, register } from '../support/helper.js';

// The same question gets the same answer under any load (issue 31). Two fresh apps on the
// server's own encoder stack (int8 USE-lite, two encoder copies on threads, runs pooled across
// callers, the query-vector cache): one is asked every question alone, the other all of them at
// once while Adds of another user arrive, so its encoder batches queries with each other and with
// ingest texts. The answers must be equal whole: order, contents, times and scores (the memory
// ids are random per server, so they are left out).

const SPEAKERS = ['Caroline', 'Melanie'];
const TOPICS = [
  'I went to a LGBTQ support group yesterday and it was so powerful.',
  'We painted a sunset together at the lake last weekend.',
  'My kids love the new puppy, we named her Luna.',
  'I have been reading a book about adoption agencies.',
  'Running a charity race for mental health was amazing.',
  'I am thinking about a career in counseling.',
  'The pottery class on Friday was relaxing.',
  'We went camping in the mountains and saw the stars.',
  'My grandma gave me a necklace from Sweden.',
  'I started learning the violin this spring.',
];
const QUESTIONS = [
  'When did Caroline go to the LGBTQ support group?',
  'What did Melanie paint?',
  'What is the name of the puppy?',
  'What book is Caroline reading?',
  'What race did Melanie run?',
  'What career is Caroline considering?',
  'When was the pottery class?',
  'Where did they go camping?',
  'Where is the necklace from?',
  'What instrument did Caroline start learning?',
  'Who likes the stars?',
  'What happened last weekend?',
];

function messages(session: number) {
  return TOPICS.map((content, i) => ({
    role: SPEAKERS[(i + session) % 2],
    content: `${content} (session ${session})`,
    timestamp: Date.UTC(2023, 4, 1 + session, 10, i),
  }));
}

async function appWithServerEncoder() {
  const embedder: Embedder = createEmbedder({ embedder: 'onnx', encoderWorkers: 2 });
  register(() => embedder.close());
  // Both copies, as a server has them under ingest: texts then run on either.
  await embedder.loadedAll?.();
  return build({ service: { embedder } });
}

async function ingest(app: Awaited<ReturnType<typeof build>>['app'], userId: string) {
  for (let session = 0; session < 4; session++) {
    const res = await app.inject({ method: 'POST', url: '/add', payload: { user_id: userId, session_id: `s${session}`, messages: messages(session), request_id: `${userId}-${session}` } });
    expect(res.statusCode).toBe(200);
  }
}

const search = (app: Awaited<ReturnType<typeof build>>['app'], query: string) =>
  app.inject({ method: 'POST', url: '/search', payload: { user_id: 'u1', query, top_k: 10 } }).then((res) => {
    expect(res.statusCode).toBe(200);
    // Memory ids are random per server; everything else of the answer is compared.
    return (res.json() as { data: { id: string }[] }).data.map(({ id: _id, ...hit }) => hit);
  });

describe('a Search under load', () => {
  it('answers exactly as it does alone, among concurrent Searches and Adds', async () => {
    const [quiet, busy] = await Promise.all([appWithServerEncoder(), appWithServerEncoder()]);
    // The same Adds, but on the busy app split otherwise (one session per Add there as well, and
    // concurrently with another user's), so ingest batching differs too.
    await ingest(quiet.app, 'u1');
    await Promise.all([ingest(busy.app, 'u1'), ingest(busy.app, 'other')]);

    const alone: unknown[] = [];
    for (const q of QUESTIONS) alone.push(await search(quiet.app, q));
    const concurrent = await Promise.all([
      ...QUESTIONS.map((q) => search(busy.app, q)),
      ...[4, 5, 6].map((session) =>
        busy.app.inject({ method: 'POST', url: '/add', payload: { user_id: 'other', session_id: `s${session}`, messages: messages(session), request_id: `other-${session}` } }),
      ),
    ]);
    expect(concurrent.slice(0, QUESTIONS.length)).toEqual(alone);
    // Asked again, now from the query-vector cache, still the same.
    expect(await Promise.all(QUESTIONS.map((q) => search(busy.app, q)))).toEqual(alone);
  });
});
