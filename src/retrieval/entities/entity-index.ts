import type { EntityKind, EntityMention } from './entity-mentions.js';

/**
 * One user's entities → the units that mention them, kept by the corpus on every add and
 * remove (a load, a write of this process or one seen from another), so that it is the same on
 * both stores by construction: nothing of it is stored.
 *
 * An entity is known once some unit mentions it confidently (see `entityMentions`); its units
 * are then every unit mentioning it, a sentence's first word included ("Melanie said…"). A key
 * only ever met at a sentence's start ("Yesterday…", "Honestly…") is no entity.
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
    return entry && isKnown(entry) ? view(entry) : null;
  }

  /** Whether a unit's mention of this key counts (the key is a known entity). */
  knows(key: string): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && isKnown(entry);
  }

  /** How many units mention the key (0 when it is no known entity). */
  count(key: string): number {
    const entry = this.entries.get(key);
    return entry && isKnown(entry) ? entry.seqs.size : 0;
  }

  /** Every known entity, in no particular order. */
  *known(): IterableIterator<EntityEntry> {
    for (const entry of this.entries.values()) if (isKnown(entry)) yield view(entry);
  }
}

function isKnown(entry: Entry): boolean {
  return entry.confident[0] > 0 || entry.confident[1] > 0 || entry.confident[2] > 0;
}

function view(entry: Entry): EntityEntry {
  const kind = KINDS[entry.confident.findIndex((count) => count > 0)];
  return { key: entry.key, surface: entry.surface, kind, seqs: entry.seqs };
}
