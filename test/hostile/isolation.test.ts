import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { build } from '../support/helper.js';

/**
 * Randomized multi-user traffic over every route that reads or deletes: users whose ids look
 * alike (case, trailing space, slash, the same folder slug) write memories from one shared
 * vocabulary, so a leak would rank high. Each memory carries a unique marker, so any item in
 * any answer can be traced to its owner; no route may return or delete another user's memory.
 */

const USERS = ['alice', 'Alice', 'alice ', 'alice/', 'alice2', 'a/b', 'a?b', 'default', 'team-a/bob'];
const VOCABULARY = ['garden', 'violin', 'harbor', 'pottery', 'marathon', 'lantern', 'orchid', 'glacier', 'Caroline', 'Melanie', 'May', 'yesterday'];
const KINDS = ['add', 'mem-add', 'invoke-add', 'search', 'mem-search', 'invoke-search', 'list', 'invoke-list', 'get', 'invoke-get', 'delete', 'invoke-delete', 'stats', 'invoke-stats'] as const;

const step = fc.record({
  kind: fc.constantFrom(...KINDS),
  user: fc.nat({ max: USERS.length - 1 }),
  words: fc.array(fc.nat({ max: VOCABULARY.length - 1 }), { minLength: 1, maxLength: 4 }),
  pick: fc.nat(),
  omitUser: fc.boolean(),
});

interface Ledger {
  /** marker → owner, for every memory ever written. */
  owner: Map<string, string>;
  /** Markers of memories not deleted. */
  alive: Set<string>;
  /** Memory id → marker, as learned from answers. */
  markerOf: Map<string, string>;
}

const MARKER = /\bmk(\d+)x\b/;

function markerIn(text: string): string {
  const match = MARKER.exec(text);
  expect(match, `no marker in ${JSON.stringify(text)}`).not.toBeNull();
  return match![0];
}

describe('user isolation', () => {
  it('no route ever returns or deletes another user\'s memory', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 70, maxLength: 70 }), async (steps) => {
        const { app, service } = await build();
        const ledger: Ledger = { owner: new Map(), alive: new Set(), markerOf: new Map() };
        let counter = 0;
        const newText = (words: number[]) => {
          const marker = `mk${counter++}x`;
          return { marker, text: `${words.map((w) => VOCABULARY[w]).join(' ')} ${marker}` };
        };
        const inject = async (options: InjectOptions) => {
          const response = await app.inject(options);
          expect(response.statusCode, response.body.slice(0, 300)).toBeLessThan(500);
          return response;
        };
        /** Every memory object an answer holds must be the requester's, by user_id and by marker. */
        const ownedBy = (userId: string, memories: Array<{ id: string; user_id: string; text: string }>) => {
          for (const memory of memories) {
            expect(memory.user_id).toBe(userId);
            const marker = markerIn(memory.text);
            expect(ledger.owner.get(marker), `${marker} answered to ${JSON.stringify(userId)}`).toBe(userId);
            expect(ledger.alive.has(marker), `${marker} was deleted`).toBe(true);
            ledger.markerOf.set(memory.id, marker);
          }
        };
        const q = (userId: string) => encodeURIComponent(userId);

        for (const { kind, user, words, pick, omitUser } of steps) {
          const userId = USERS[user];
          // Half the time one of this user's own memories, else anyone's (mostly another user's).
          const knownIds = [...ledger.markerOf.keys()];
          const ownIds = knownIds.filter((id) => ledger.owner.get(ledger.markerOf.get(id)!) === userId && ledger.alive.has(ledger.markerOf.get(id)!));
          const candidates = pick % 2 === 0 && ownIds.length > 0 ? ownIds : knownIds;
          const someId = candidates.length > 0 ? candidates[(pick >> 1) % candidates.length] : 'no-such-id';
          const query = words.map((w) => VOCABULARY[w]).join(' ');
          switch (kind) {
            case 'add': {
              const messages = [newText(words), newText([...words].reverse())];
              const response = await inject({ method: 'POST', url: '/add', payload: { request_id: `req-${counter}`, user_id: userId, session_id: 's', messages: messages.map(({ text }) => ({ role: 'Caroline', content: text })) } });
              expect(response.statusCode).toBe(200);
              for (const { marker } of messages) {
                ledger.owner.set(marker, userId);
                ledger.alive.add(marker);
              }
              break;
            }
            case 'mem-add':
            case 'invoke-add': {
              const { marker, text } = newText(words);
              const owner = kind === 'mem-add' && omitUser ? 'default' : userId;
              const response =
                kind === 'mem-add'
                  ? await inject({ method: 'POST', url: '/mem', payload: omitUser ? { text } : { text, user_id: userId } })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'add', text, user_id: userId } } });
              expect(response.statusCode).toBeLessThan(300);
              ledger.owner.set(marker, owner);
              ledger.alive.add(marker);
              ownedBy(owner, [response.json()]);
              break;
            }
            case 'search': {
              const response = await inject({ method: 'POST', url: '/search', payload: { query, user_id: userId, top_k: 100 } });
              for (const hit of response.json().data as Array<{ id: string; content: string }>) {
                const marker = markerIn(hit.content);
                expect(ledger.owner.get(marker), `${marker} found for ${JSON.stringify(userId)}`).toBe(userId);
                expect(ledger.alive.has(marker)).toBe(true);
                ledger.markerOf.set(hit.id, marker);
              }
              break;
            }
            case 'mem-search':
            case 'invoke-search': {
              const owner = kind === 'mem-search' && omitUser ? 'default' : userId;
              const response =
                kind === 'mem-search'
                  ? await inject({ method: 'GET', url: `/mem/search?query=${encodeURIComponent(query)}&limit=1000${omitUser ? '' : `&user_id=${q(userId)}`}` })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'search', query, limit: 1000, user_id: userId } } });
              ownedBy(owner, response.json());
              break;
            }
            case 'list':
            case 'invoke-list': {
              const response =
                kind === 'list'
                  ? await inject({ method: 'GET', url: `/mem/list?limit=1000&user_id=${q(userId)}` })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'list', limit: 1000, user_id: userId } } });
              ownedBy(userId, response.json());
              break;
            }
            case 'get':
            case 'invoke-get': {
              const response =
                kind === 'get'
                  ? await inject({ method: 'GET', url: `/mem/${encodeURIComponent(someId)}?user_id=${q(userId)}` })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'get', id: someId, user_id: userId } } });
              const marker = ledger.markerOf.get(someId);
              const mine = marker !== undefined && ledger.owner.get(marker) === userId && ledger.alive.has(marker);
              expect(response.statusCode).toBe(mine ? 200 : 404);
              if (mine) ownedBy(userId, [response.json()]);
              break;
            }
            case 'delete':
            case 'invoke-delete': {
              const response =
                kind === 'delete'
                  ? await inject({ method: 'DELETE', url: `/mem/${encodeURIComponent(someId)}?user_id=${q(userId)}` })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'delete', id: someId, user_id: userId } } });
              const marker = ledger.markerOf.get(someId);
              const mine = marker !== undefined && ledger.owner.get(marker) === userId && ledger.alive.has(marker);
              expect(response.statusCode).toBe(mine ? 200 : 404);
              if (mine) ledger.alive.delete(marker);
              break;
            }
            case 'stats':
            case 'invoke-stats': {
              const response =
                kind === 'stats'
                  ? await inject({ method: 'GET', url: `/mem/stats?user_id=${q(userId)}` })
                  : await inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'stats', user_id: userId } } });
              const stats = response.json() as { count: number; per_user: Array<{ user_id: string; count: number }> };
              const expected = [...ledger.alive].filter((marker) => ledger.owner.get(marker) === userId).length;
              expect(stats.per_user.every((entry) => entry.user_id === userId)).toBe(true);
              expect(stats.per_user.reduce((sum, entry) => sum + entry.count, 0)).toBe(expected);
              break;
            }
          }
        }

        // In the end each user holds exactly their own surviving memories: nothing lost, leaked or deleted across.
        for (const userId of USERS) {
          const listed = (await inject({ method: 'GET', url: `/mem/list?limit=1000&user_id=${q(userId)}` })).json() as Array<{ id: string; user_id: string; text: string }>;
          ownedBy(userId, listed);
          const expected = [...ledger.alive].filter((marker) => ledger.owner.get(marker) === userId).sort();
          expect(listed.map((memory) => markerIn(memory.text)).sort()).toEqual(expected);
        }
        await app.close();
        await service.close();
      }),
      { numRuns: 6, interruptAfterTimeLimit: 30_000, markInterruptAsFailure: true },
    );
  });
});
