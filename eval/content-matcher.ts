import type { BenchUser } from './benchmark.js';

/**
 * Maps a search hit's `content` back to the benchmark turns it came from, for replays through
 * the HTTP contract, whose hits carry no provenance. Content looks like
 * `[2023-05-08 13:56] Caroline: <text>` and may be one part of a split long message, or (for a
 * unit that spans turns) hold several messages. Matching, most exact first:
 *   1. the text after the date and speaker prefixes equals a turn's text (normalised);
 *   2. it is a piece of a turn's text (a split part), or a turn's text is inside it (a span);
 *   3. failing both, the turn sharing most of its words (at least 80% of the hit's words).
 * Among several candidates the date and the speaker of the prefix narrow the choice; what
 * stays ambiguous (a "Thanks!" said twice on one day) counts for every candidate, and is counted.
 */
export interface MatchStats {
  exact: number;
  piece: number;
  fuzzy: number;
  unmatched: number;
  ambiguous: number;
}

interface IndexedTurn {
  turnId: string;
  role: string;
  text: string;
  day?: string;
  words: Set<string>;
}

/** Fragments shorter than this are too common to place by substring alone. */
const MIN_PIECE_CHARS = 12;
const MIN_FUZZY_SHARE = 0.8;

export class ContentMatcher {
  readonly stats: MatchStats = { exact: 0, piece: 0, fuzzy: 0, unmatched: 0, ambiguous: 0 };
  private readonly turns: IndexedTurn[] = [];
  private readonly byText = new Map<string, IndexedTurn[]>();
  private readonly roles = new Set<string>();
  private readonly cache = new Map<string, string[]>();

  constructor(user: BenchUser) {
    for (const session of user.sessions) {
      for (const turn of session.turns) {
        const text = normalise(turn.content);
        const indexed: IndexedTurn = {
          turnId: turn.turnId,
          role: turn.role.toLowerCase(),
          text,
          day: turn.timestamp === undefined ? undefined : new Date(turn.timestamp).toISOString().slice(0, 10),
          words: new Set(words(text)),
        };
        this.turns.push(indexed);
        this.roles.add(indexed.role);
        const same = this.byText.get(text);
        if (same) same.push(indexed);
        else this.byText.set(text, [indexed]);
      }
    }
  }

  match(content: string): string[] {
    const cached = this.cache.get(content);
    if (cached) return cached;
    const result = this.matchUncached(content);
    this.cache.set(content, result);
    return result;
  }

  private matchUncached(content: string): string[] {
    const { day, speaker, raw, body } = this.parsePrefix(content);
    let candidates = this.byText.get(raw) ?? this.byText.get(body) ?? [];
    let kind: 'exact' | 'piece' | 'fuzzy' = 'exact';
    if (candidates.length === 0 && body.length >= MIN_PIECE_CHARS) {
      kind = 'piece';
      candidates = this.turns.filter(
        (turn) => turn.text.includes(body) || (turn.text.length >= MIN_PIECE_CHARS && body.includes(turn.text)),
      );
    }
    if (candidates.length === 0) {
      kind = 'fuzzy';
      candidates = this.closestByWords(body);
    }
    if (candidates.length === 0) {
      this.stats.unmatched++;
      return [];
    }
    this.stats[kind]++;
    // A span legitimately holds several turns (of several speakers); keep them all.
    const isSpan = kind === 'piece' && candidates.length > 1 && candidates.every((turn) => body.includes(turn.text));
    if (!isSpan) {
      candidates = narrow(candidates, (turn) => day !== undefined && turn.day === day);
      candidates = narrow(candidates, (turn) => speaker !== undefined && turn.role === speaker);
      if (candidates.length > 1) this.stats.ambiguous++;
    }
    return candidates.map((turn) => turn.turnId);
  }

  private parsePrefix(content: string): { day?: string; speaker?: string; raw: string; body: string } {
    let rest = content.trim();
    let day: string | undefined;
    let speaker: string | undefined;
    const date = /^\[([^\]\n]{4,40})\]\s*/.exec(rest);
    if (date) {
      day = /(\d{4}-\d{2}-\d{2})/.exec(date[1])?.[1];
      rest = rest.slice(date[0].length);
    }
    // Only a known speaker name counts as a prefix, so "Note: ..." in a text is left alone.
    const name = /^([^:\n]{1,60}):\s*/.exec(rest);
    if (name && this.roles.has(name[1].trim().toLowerCase())) {
      speaker = name[1].trim().toLowerCase();
      rest = rest.slice(name[0].length);
    }
    const raw = normalise(rest);
    return { day, speaker, raw, body: stripPartMarkers(raw) };
  }

  /** The turns holding the largest share of the hit's words; ties go to the closest in size. */
  private closestByWords(body: string): IndexedTurn[] {
    const bodyWords = [...new Set(words(body))];
    if (bodyWords.length === 0) return [];
    let best: IndexedTurn[] = [];
    let bestScore: [number, number] = [MIN_FUZZY_SHARE, 0];
    for (const turn of this.turns) {
      let shared = 0;
      for (const word of bodyWords) if (turn.words.has(word)) shared++;
      const share = shared / bodyWords.length;
      if (share < MIN_FUZZY_SHARE) continue;
      const jaccard = shared / (bodyWords.length + turn.words.size - shared);
      const order = compare([share, jaccard], bestScore);
      if (order > 0) {
        bestScore = [share, jaccard];
        best = [turn];
      } else if (order === 0) {
        best.push(turn);
      }
    }
    return best;
  }
}

function compare(a: [number, number], b: [number, number]): number {
  const epsilon = 1e-9;
  for (let i = 0; i < a.length; i++) {
    if (a[i] > b[i] + epsilon) return 1;
    if (a[i] < b[i] - epsilon) return -1;
  }
  return 0;
}

/** Applies a filter only when it leaves at least one candidate (the prefix format may differ). */
function narrow(candidates: IndexedTurn[], keep: (turn: IndexedTurn) => boolean): IndexedTurn[] {
  if (candidates.length <= 1) return candidates;
  const kept = candidates.filter(keep);
  return kept.length > 0 ? kept : candidates;
}

export function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Drops what a splitter may add around a part: ellipses and "(part 2/3)" labels. */
function stripPartMarkers(text: string): string {
  return text
    .replace(/^\(?part \d+\s*(?:\/|of)\s*\d+\)?[:\s]*/i, '')
    .replace(/\s*\(?part \d+\s*(?:\/|of)\s*\d+\)?$/i, '')
    .replace(/^(?:\.\.\.|…)\s*/, '')
    .replace(/\s*(?:\.\.\.|…)$/, '')
    .trim();
}

function words(text: string): string[] {
  return text.match(/[\p{L}\p{N}]+/gu) ?? [];
}
