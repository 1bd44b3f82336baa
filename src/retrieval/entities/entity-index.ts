import type { EntityKind, EntityMention } from './entity-mentions.js';

/**
 * One user's entities → the units that mention them, kept by the corpus on every add and
 * remove (a load, a write of this process or one seen from another), so that it is the same on
 * both stores by construction: nothing of it is stored.
 *
 * An entity is known once some unit mentions it confidently (see `entityMentions`), or when a
 * word only ever met capitalised at a sentence's start is never written in lowercase by any unit
 * ("Caroline adopted a dog" makes Caroline known; "Painting is my thing" does not, beside "I
 * paint"): `unitsWithWord` counts the units whose text holds the word in any case (the BM25
 * index's document frequency of its term). Its units are then every unit mentioning it, a
 * sentence's first word included ("Melanie said…").
 */
export interface EntityEntry {
  key: string;
  /** As first written by a unit still held. */
  surface: string;
  kind: EntityKind;
  /** Seqs of the units mentioning it. */
  seqs: ReadonlySet<number>;
}

interface Entry {
  key: string;
  surface: string;
  seqs: Set<number>;
  /** Confident mentions per kind: person, title, name. */
  confident: [number, number, number];
}

const KINDS: readonly EntityKind[] = ['person', 'title', 'name'];

export class EntityIndex {
  private readonly entries = new Map<string, Entry>();

  /** `unitsWithWord(key)`: how many units hold the one-word key in any case (Infinity for a key that is no index term). */
  constructor(private readonly unitsWithWord: (key: string) => number = () => Infinity) {}

  add(seq: number, mentions: readonly EntityMention[]): void {
    for (const mention of mentions) {
      let entry = this.entries.get(mention.key);
      if (!entry) this.entries.set(mention.key, (entry = { key: mention.key, surface: mention.surface, seqs: new Set(), confident: [0, 0, 0] }));
      entry.seqs.add(seq);
      if (mention.confident) entry.confident[KINDS.indexOf(mention.kind)]++;
    }
  }

  remove(seq: number, mentions: readonly EntityMention[]): void {
    for (const mention of mentions) {
      const entry = this.entries.get(mention.key);
      if (!entry || !entry.seqs.delete(seq)) continue;
      if (mention.confident) entry.confident[KINDS.indexOf(mention.kind)]--;
      if (entry.seqs.size === 0) this.entries.delete(mention.key);
    }
  }

  /** The known entity of this key (already an entity key: see `entityKey`), or null. */
  get(key: string): EntityEntry | null {
    const entry = this.entries.get(key);
    return entry !== undefined && this.isKnown(entry) ? view(entry) : null;
  }

  /** Whether a unit's mention of this key counts (the key is a known entity). */
  knows(key: string): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && this.isKnown(entry);
  }

  /** How many units mention the key (0 when it is no known entity). */
  count(key: string): number {
    const entry = this.entries.get(key);
    return entry !== undefined && this.isKnown(entry) ? entry.seqs.size : 0;
  }

  /** Every known entity, in no particular order. */
  *known(): IterableIterator<EntityEntry> {
    for (const entry of this.entries.values()) if (this.isKnown(entry)) yield view(entry);
  }

  private isKnown(entry: Entry): boolean {
    if (entry.confident[0] > 0 || entry.confident[1] > 0 || entry.confident[2] > 0) return true;
    return this.unitsWithWord(entry.key) <= entry.seqs.size;
  }
}


function view(entry: Entry): EntityEntry {
  const kind = KINDS[entry.confident.findIndex((count) => count > 0)] ?? 'name';
  return { key: entry.key, surface: entry.surface, kind, seqs: entry.seqs };
}
