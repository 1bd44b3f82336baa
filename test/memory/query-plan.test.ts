import { describe, expect, it } from 'vitest';
import { planQuery, queryTexts } from '../../src/memory/query-plan.js';
import { PLATFORM_SEARCH_OVERRIDES, resolveWeights } from '../../src/retrieval/retrieval-config.js';

const defaults = resolveWeights({});
const corpus = { speakers: ['caroline', 'melanie'], newestTimeMs: Date.parse('2023-05-20T12:00:00Z') };

describe('queryTexts', () => {
  it('keeps the query trimmed (as sent when only white space), then each non-blank option trimmed', () => {
    expect(queryTexts({ query: '  where?  ', options: [' a ', '  ', 'b'] })).toEqual(['where?', 'a', 'b']);
    expect(queryTexts({ query: '   ' })).toEqual(['   ']);
  });
});

describe('planQuery', () => {
  it('reads the cues of the query: speaker, when-question, wanted tags, the filter tag', () => {
    const request = { userId: 'u', query: 'When did Caroline go hiking?', limit: 5, filter: { tag: 'Trips' } };
    const { query, weights } = planQuery(request, queryTexts(request), corpus, defaults);
    expect(weights).toBe(defaults);
    expect(query.speaker).toBe('caroline');
    expect(query.whenQuestion).toBe(true);
    expect([...query.wantedTags]).toEqual(['when', 'did', 'caroline', 'go', 'hiking', 'trips']);
    expect(query.main.terms.length).toBeGreaterThan(0);
    expect(query.options).toEqual([]);
    expect(query.collapseDuplicates).toBe(false);
    expect(query.explain).toBe(false);
  });

  it('takes the platform profile and the overrides over the defaults', () => {
    const request = { userId: 'u', query: 'what hobby', limit: 5, profile: 'platform' as const, collapseDuplicates: true };
    const plain = planQuery(request, ['what hobby'], corpus, defaults);
    expect(plain.weights).toEqual(resolveWeights({ ...defaults, ...PLATFORM_SEARCH_OVERRIDES }));
    expect(plain.query.collapseDuplicates).toBe(true);
    expect(plain.query.whenQuestion).toBe(false);
    expect(plain.query.speaker).toBeNull();
    const ablated = planQuery(request, ['what hobby', 'chess'], corpus, defaults, { collapseDuplicates: false, weights: { denseWeight: 0.25 } });
    expect(ablated.query.collapseDuplicates).toBe(false);
    expect(ablated.weights.denseWeight).toBe(0.25);
    expect(ablated.query.options).toHaveLength(1);
  });
});
