import type { CorpusUnit } from './corpus-types.js';

/** A unit's place among the others: its neighbours in its session, and where its vector is held. */
export interface UnitLinks {
  unit: CorpusUnit;
  /** Adjacent units in the session (a sibling part of the same message, or another message). */
  previous: CorpusUnit | null;
  next: CorpusUnit | null;
  /** Nearest units of the neighbouring messages: the turn before and the turn after. */
  previousTurn: CorpusUnit | null;
  nextTurn: CorpusUnit | null;
  /** v·p with the previous unit's vector, for the context blend. */
  selfDotPrevious: number | undefined;
  /** The unit's row in the int8 slab once the corpus holds its vectors compactly; -1 before, or without a vector. */
  row: number;
}

/** A unit's links before its session is linked: none. */
export function unlinked(unit: CorpusUnit): UnitLinks {
  return { unit, previous: null, next: null, previousTurn: null, nextTurn: null, selfDotPrevious: undefined, row: -1 };
}

/**
 * Each session's units in time order, and the links that make a turn's neighbours its own
 * session's turns. `dotOfUnits` gives v·p for the context blend (undefined while a vector is
 * missing); it is asked only when a unit's previous unit changes.
 */
export class Sessions {
  private readonly bySession = new Map<string, CorpusUnit[]>();

  constructor(
    private readonly links: ReadonlyMap<number, UnitLinks>,
    private readonly dotOfUnits: (a: CorpusUnit, b: CorpusUnit) => number | undefined,
  ) {}

  /** Adds a unit of a session; the session is linked again by `relink`, once per batch. */
  join(sessionId: string, unit: CorpusUnit): void {
    let session = this.bySession.get(sessionId);
    if (!session) this.bySession.set(sessionId, (session = []));
    session.push(unit);
  }

  /** Takes a unit out of its session and links the rest again. */
  leave(sessionId: string, seq: number): void {
    const session = this.bySession.get(sessionId);
    if (!session) return;
    const remaining = session.filter((member) => member.seq !== seq);
    if (remaining.length === 0) this.bySession.delete(sessionId);
    else this.bySession.set(sessionId, remaining);
    this.relink(sessionId);
  }

  /** The session's units (in time order once linked). */
  units(sessionId: string): readonly CorpusUnit[] {
    return this.bySession.get(sessionId) ?? [];
  }

  /** Sorts a session by time (then seq) and sets each unit's neighbours and turn neighbours. */
  relink(sessionId: string): void {
    const session = this.bySession.get(sessionId);
    if (!session) return;
    session.sort((a, b) => a.timeMs - b.timeMs || a.seq - b.seq);
    let previousTurn: CorpusUnit | null = null;
    for (let i = 0; i < session.length; i++) {
      const link = this.links.get(session[i].seq);
      if (!link) continue;
      const previous = i > 0 ? session[i - 1] : null;
      const next = i + 1 < session.length ? session[i + 1] : null;
      if (link.previous !== previous) link.selfDotPrevious = previous ? this.dotOfUnits(link.unit, previous) : undefined;
      link.previous = previous;
      link.next = next;
      if (previous && !sameMessage(previous, link.unit)) previousTurn = previous;
      link.previousTurn = previousTurn;
    }
    let nextTurn: CorpusUnit | null = null;
    for (let i = session.length - 1; i >= 0; i--) {
      const link = this.links.get(session[i].seq);
      if (!link) continue;
      const next = i + 1 < session.length ? session[i + 1] : null;
      if (next && !sameMessage(next, link.unit)) nextTurn = next;
      link.nextTurn = nextTurn;
    }
  }
}

function sameMessage(a: CorpusUnit, b: CorpusUnit): boolean {
  return a.messageKey !== null && a.messageKey === b.messageKey;
}
