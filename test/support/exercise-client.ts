import { BadRequestError, MemoryPoolError, NotFoundError, UnprocessableEntityError, type MemoryPoolApi } from 'memorypool-client';
import { expect } from 'vitest';
import { packageVersion } from '../../src/http/package-files.js';

/** The error a call failed with; fails the test when it succeeded. */
export async function failure(call: Promise<unknown>): Promise<MemoryPoolError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'the call should have failed').toBeInstanceOf(MemoryPoolError);
  return error as MemoryPoolError;
}

/**
 * Every method of the clients' shared surface on a fresh pool, for the HTTP client against a real
 * server and the in-process pool alike: the same calls must give the same answers and errors.
 */
export async function exerciseClient(pool: MemoryPoolApi): Promise<void> {
  expect(await pool.health()).toEqual({ ok: true, service: 'memorypool', version: packageVersion(), count: 0 });

  const dog = await pool.remember({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8, user_id: 'caroline' });
  expect(dog).toMatchObject({ user_id: 'caroline', text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8, source: 'cli' });
  const job = await pool.remember({ text: 'Caroline works as a counsellor at a youth centre', user_id: 'caroline' });

  const hits = await pool.recall({ query: 'dog named Max', user_id: 'caroline', limit: 5 });
  expect(hits[0]).toMatchObject({ id: dog.id, text: dog.text });
  expect(typeof hits[0].score).toBe('number');
  expect(await pool.recall({ query: 'dog', user_id: 'caroline', tag: 'pets' })).toHaveLength(1);
  const explained = await pool.recall({ query: 'dog', user_id: 'caroline', explain: true, limit: 1 });
  expect(explained[0].explanation?.terms.length).toBeGreaterThan(0);

  expect((await pool.list({ user_id: 'caroline' })).map((memory) => memory.id)).toEqual([job.id, dog.id]);
  expect(await pool.list({ user_id: 'caroline', limit: 1 })).toHaveLength(1);
  expect(await pool.get(dog.id, { user_id: 'caroline' })).toEqual(dog);

  expect(await pool.forget(job.id, { user_id: 'caroline' })).toEqual({ deleted: job.id });
  const missing = await failure(pool.get(job.id, { user_id: 'caroline' }));
  expect(missing).toBeInstanceOf(NotFoundError);
  expect(missing.status).toBe(404);

  const empty = await failure(pool.remember({ text: '   ' }));
  expect(empty).toBeInstanceOf(BadRequestError);
  expect(empty).toMatchObject({ status: 400, reason: 'text: text must not be empty' });

  const added = await pool.add({ user_id: 'conv-1', session_id: 's1', messages: [{ role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 }] });
  expect(added).toMatchObject({ success: true, user_id: 'conv-1', session_id: 's1' });
  expect(added.request_id).toMatch(/^[0-9a-f-]{36}$/);
  // The same request id again stores nothing: the platform's idempotency, which the retries rely on.
  await pool.add({ request_id: added.request_id, user_id: 'conv-1', session_id: 's1', messages: [{ role: 'Caroline', content: 'I went to a support group yesterday.' }] });
  const found = await pool.search({ query: 'What did Caroline attend?', user_id: 'conv-1', top_k: 10 });
  expect(found.data).toHaveLength(1);
  expect(found.data[0]).toMatchObject({ content: '[2023-05-08 13:56] Caroline: I went to a support group yesterday.', created_at: '2023-05-08T13:56:00.000Z' });

  const invalid = await failure(pool.search({ query: 'x', user_id: 'conv-1', top_k: 0 }));
  expect(invalid).toBeInstanceOf(UnprocessableEntityError);
  expect(invalid.issues).toEqual([{ loc: ['body', 'top_k'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' }]);

  const stats = await pool.stats();
  expect(stats).toMatchObject({ count: 2, users: 2 });
  expect((await pool.stats({ user_id: 'conv-1' })).per_user.map((entry) => entry.user_id)).toEqual(['conv-1']);

  expect(await pool.invoke({ tool: 'memorypool', params: { action: 'get', id: dog.id, user_id: 'caroline' } })).toEqual(dog);
  const unknown = await failure(pool.invoke({ tool: 'memorypool', params: { action: 'dance' } }));
  expect(unknown).toMatchObject({ status: 400 });

  expect(await pool.deleteUser('conv-1')).toEqual({ deleted_user: 'conv-1', deleted: 1 });
  expect(await pool.health()).toEqual({ ok: true, service: 'memorypool', version: packageVersion(), count: 1 });
}
