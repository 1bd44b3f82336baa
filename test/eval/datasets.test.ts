import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitBenchmark, mergeUsers, type Benchmark } from '../../eval/benchmark.js';
import { loadLocomo, locomoTurnContent, parseLocomoDate, parseLocomoEvidence } from '../../eval/datasets/locomo.js';
import { loadLongMemEval, parseLongMemEvalDate } from '../../eval/datasets/longmemeval.js';

describe('LoCoMo parsing', () => {
  it('parses session dates as UTC', () => {
    expect(parseLocomoDate('1:56 pm on 8 May, 2023')).toBe(Date.UTC(2023, 4, 8, 13, 56));
    expect(parseLocomoDate('12:09 am on 13 September, 2023')).toBe(Date.UTC(2023, 8, 13, 0, 9));
    expect(parseLocomoDate('12:30 pm on 1 Jan, 2024')).toBe(Date.UTC(2024, 0, 1, 12, 30));
    expect(parseLocomoDate('yesterday')).toBeUndefined();
  });

  it('splits, normalises and drops malformed evidence', () => {
    expect(parseLocomoEvidence(['D8:6; D9:17'])).toEqual(['D8:6', 'D9:17']);
    expect(parseLocomoEvidence(['D:11:26', 'D', 'D1:3', 'D1:3'])).toEqual(['D11:26', 'D1:3']);
    expect(parseLocomoEvidence([])).toEqual([]);
    expect(parseLocomoEvidence(undefined)).toEqual([]);
  });

  it('appends a shared photo caption', () => {
    expect(locomoTurnContent({ speaker: 'A', dia_id: 'D1:1', text: 'Look!', blip_caption: 'a photo of a dog' })).toBe(
      'Look! [shares a photo: a photo of a dog]',
    );
    expect(locomoTurnContent({ speaker: 'A', dia_id: 'D1:1', text: 'Hi' })).toBe('Hi');
  });
});

describe('LongMemEval parsing', () => {
  it('parses haystack dates as UTC', () => {
    expect(parseLongMemEvalDate('2023/05/23 (Tue) 06:47')).toBe(Date.UTC(2023, 4, 23, 6, 47));
    expect(parseLongMemEvalDate('nope')).toBeUndefined();
  });
});

describe('loaders on hand-made files', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-datasets-'));
    const locomo = [
      {
        sample_id: 'conv-x',
        conversation: {
          speaker_a: 'Ann',
          speaker_b: 'Bob',
          session_2_date_time: '2:00 pm on 9 May, 2023',
          session_2: [{ speaker: 'Bob', dia_id: 'D2:1', text: 'Later.' }],
          session_1_date_time: '1:56 pm on 8 May, 2023',
          session_1: [
            { speaker: 'Ann', dia_id: 'D1:1', text: 'Hi Bob.' },
            { speaker: 'Bob', dia_id: 'D1:2', text: 'Hi Ann.' },
          ],
        },
        qa: [
          { question: 'q0', answer: 2022, evidence: ['D1:2; D2:1'], category: 1 },
          { question: 'q1', answer: 'a', evidence: [], category: 2 },
          { question: 'q2', adversarial_answer: 'a', evidence: ['D'], category: 5 },
          { question: 'q3', answer: 'a', evidence: ['D:1:1', 'D9:9'], category: 4 },
        ],
      },
    ];
    await writeFile(join(dir, 'locomo.json'), JSON.stringify(locomo));
    const question = (id: string, hasAnswer: boolean) => ({
      question_id: id,
      question_type: 'single-session-user',
      question: `where? ${id}`,
      answer: 'x',
      question_date: '2023/05/30 (Tue) 22:40',
      haystack_dates: ['2023/05/20 (Sat) 00:59', '2023/05/21 (Sun) 01:00', '2023/05/22 (Mon) 01:00'],
      haystack_session_ids: ['s1', 'answer_1', 's1'],
      haystack_sessions: [
        [{ role: 'user', content: 'hello' }],
        [
          { role: 'user', content: 'I went to Rome', has_answer: hasAnswer },
          { role: 'assistant', content: 'Nice' },
        ],
        [{ role: 'user', content: 'hello' }],
      ],
      answer_session_ids: ['answer_1'],
    });
    await writeFile(join(dir, 'lme-array.json'), JSON.stringify([question('q1', true), question('q2_abs', false)]));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads LoCoMo sessions in order and skips questions without evidence', async () => {
    const benchmark = await loadLocomo(join(dir, 'locomo.json'));
    expect(benchmark.users).toHaveLength(1);
    const [user] = benchmark.users;
    expect(user.userId).toBe('conv-x');
    expect(user.sessions.map((s) => s.sessionId)).toEqual(['session_1', 'session_2']);
    expect(user.sessions[0].turns[1]).toEqual({ turnId: 'D1:2', role: 'Bob', content: 'Hi Ann.', timestamp: Date.UTC(2023, 4, 8, 13, 56) });
    expect(benchmark.questions.map((q) => [q.questionId, q.category, q.evidenceTurns, q.evidenceSessions])).toEqual([
      ['conv-x#0', '1', ['D1:2', 'D2:1'], ['session_1', 'session_2']],
      ['conv-x#3', '4', ['D1:1'], ['session_1']],
    ]);
    expect(benchmark.skipped).toEqual([
      { reason: 'questions without usable evidence', count: 2 },
      { reason: 'evidence ids not found in the conversation (dropped)', count: 1 },
    ]);
    expect(limitBenchmark(benchmark, 1).questions).toHaveLength(1);
    expect(benchmark.questions.map((q) => q.answer)).toEqual(['2022', 'a']);
  });

  it('loads LongMemEval, skipping abstentions and keeping repeated sessions apart', async () => {
    const benchmark = await loadLongMemEval(join(dir, 'lme-array.json'));
    expect(benchmark.questions).toHaveLength(1);
    const [question] = benchmark.questions;
    expect(question.evidenceTurns).toEqual(['answer_1:0']);
    expect(question.evidenceSessions).toEqual(['answer_1']);
    // The QA score's gold answer and the date the question is asked on.
    expect([question.answer, question.askedAt]).toEqual(['x', '2023/05/30 (Tue) 22:40']);
    const [user] = benchmark.users;
    expect(user.sessions.map((s) => [s.sessionId, s.sessionKey])).toEqual([
      ['s1', 's1'],
      ['answer_1', 'answer_1'],
      ['s1~2', 's1'],
    ]);
    expect(benchmark.skipped[0].count).toBe(1);
  });
});

describe('mergeUsers (--one-user)', () => {
  const benchmark: Benchmark = {
    name: 'locomo',
    users: ['a', 'b'].map((userId) => ({
      userId,
      sessions: [{ sessionId: 'session_1', sessionKey: 'session_1', turns: [{ turnId: 'D1:1', role: userId.toUpperCase(), content: `hello from ${userId}` }] }],
    })),
    questions: ['a', 'b'].map((userId) => ({ questionId: `${userId}#0`, userId, query: 'who said hello?', category: '1', evidenceTurns: ['D1:1'], evidenceSessions: ['session_1'] })),
    categories: [{ id: '1', label: 'one', headline: true }],
    headlineLabel: 'all',
    skipped: [],
    notes: [],
  };

  it("stores every user's sessions as one user's, each question's evidence still its own conversation's turns", () => {
    const merged = mergeUsers(benchmark);
    expect(merged.users).toHaveLength(1);
    const [user] = merged.users;
    expect(user.sessions.map((session) => session.sessionId)).toEqual(['a/session_1', 'b/session_1']);
    expect(user.sessions.flatMap((session) => session.turns.map((turn) => turn.turnId))).toEqual(['a/D1:1', 'b/D1:1']);
    expect(merged.questions.map((q) => [q.userId, q.evidenceTurns, q.evidenceSessions, q.foldGroup])).toEqual([
      [user.userId, ['a/D1:1'], ['a/session_1'], 'a'],
      [user.userId, ['b/D1:1'], ['b/session_1'], 'b'],
    ]);
    // The evidence ids name turns of the merged user.
    const turnIds = new Set(user.sessions.flatMap((session) => session.turns.map((turn) => turn.turnId)));
    expect(merged.questions.every((q) => q.evidenceTurns.every((turn) => turnIds.has(turn)))).toBe(true);
    expect(benchmark.users).toHaveLength(2); // the input is left as it was
  });
});
