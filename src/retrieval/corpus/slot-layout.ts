import type { CorpusUnit } from './corpus-types.js';
import type { Sessions, UnitLinks } from './sessions.js';

/**
 * The units in slots 0..n-1 with their neighbours as slot numbers (-1: none), so that a search
 * scores in typed arrays. Derived from `links`, and dropped whenever they change.
 */
export interface SlotLayout {
  units: CorpusUnit[];
  slotOfSeq: Map<number, number>;
  previous: Int32Array;
  next: Int32Array;
  previousTurn: Int32Array;
  nextTurn: Int32Array;
  /** v·p with the previous unit's vector; NaN when there is none. */
  selfDotPrevious: Float64Array;
  /** Units split from one message share an id; -1 for a unit that is a whole memory. */
  message: Int32Array;
  messageCount: number;
  /** 1 for a unit of the first two turns of its session (see `timeCue`). */
  catchUpTurn: Uint8Array;
  /** Units of the same `textKey` share an id. */
  text: Int32Array;
  /** The unit's row in the corpus's int8 slab (-1: none); unused while the corpus holds floats. */
  row: Int32Array;
  textCount: number;
  /** The ids given so far, kept so an append gives a new unit the id its key already has. */
  messageIds: Map<string, number>;
  textIds: Map<string, number>;
}

/** The layout of every unit, in the order of `links` (its insertion order). */
export function buildLayout(links: ReadonlyMap<number, UnitLinks>): SlotLayout {
  const layout = emptyLayout(links.size);
  for (const { unit } of links.values()) placeUnit(layout, unit);
  for (let slot = 0; slot < layout.units.length; slot++) linkSlot(layout, slot, links);
  for (let slot = 0; slot < layout.units.length; slot++) setCatchUp(layout, slot);
  return layout;
}

/**
 * The layout after an append: the new units take the next slots (where a rebuild would put
 * them: the end of `links`), and only the units of the sessions the append touched are linked
 * again, so a write into a user of a million units costs what it writes, not the million. A new
 * object, so that a search prepared before the append sees its layout changed (see `rank`).
 */
export function extendLayout(layout: SlotLayout, added: readonly CorpusUnit[], touched: ReadonlySet<string>, sessions: Sessions, links: ReadonlyMap<number, UnitLinks>): SlotLayout {
  const next: SlotLayout = { ...layout };
  const first = next.units.length;
  grow(next, first + added.length);
  for (const unit of added) placeUnit(next, unit);
  const relinked: number[] = [];
  for (let slot = first; slot < next.units.length; slot++) if (next.units[slot].sessionId === null) relinked.push(slot);
  for (const sessionId of touched) for (const unit of sessions.units(sessionId)) relinked.push(next.slotOfSeq.get(unit.seq)!);
  for (const slot of relinked) linkSlot(next, slot, links);
  for (const slot of relinked) setCatchUp(next, slot);
  return next;
}

/** A slot's neighbours, previous-unit dot and slab row, from `links`. */
function linkSlot(layout: SlotLayout, slot: number, links: ReadonlyMap<number, UnitLinks>): void {
  const link = links.get(layout.units[slot].seq)!;
  layout.row[slot] = link.row;
  const slotOf = (unit: CorpusUnit | null): number => (unit === null ? -1 : (layout.slotOfSeq.get(unit.seq) ?? -1));
  layout.previous[slot] = slotOf(link.previous);
  layout.next[slot] = slotOf(link.next);
  layout.previousTurn[slot] = slotOf(link.previousTurn);
  layout.nextTurn[slot] = slotOf(link.nextTurn);
  layout.selfDotPrevious[slot] = link.selfDotPrevious ?? Number.NaN;
}

/** A layout with room for `capacity` units and none placed. */
function emptyLayout(capacity: number): SlotLayout {
  const layout: SlotLayout = {
    units: [],
    slotOfSeq: new Map(),
    previous: new Int32Array(0),
    next: new Int32Array(0),
    previousTurn: new Int32Array(0),
    nextTurn: new Int32Array(0),
    selfDotPrevious: new Float64Array(0),
    message: new Int32Array(0),
    messageCount: 0,
    catchUpTurn: new Uint8Array(0),
    text: new Int32Array(0),
    row: new Int32Array(0),
    textCount: 0,
    messageIds: new Map(),
    textIds: new Map(),
  };
  grow(layout, capacity);
  return layout;
}

/**
 * Room for `wanted` slots: the columns are longer than the units (by half again when they grow,
 * so appends copy them rarely); every reader goes by `units.length`.
 */
function grow(layout: SlotLayout, wanted: number): void {
  if (layout.previous.length >= wanted) return;
  const capacity = Math.max(wanted, Math.ceil(layout.previous.length * 1.5));
  const widened = <T extends Int32Array | Float64Array | Uint8Array>(column: T, make: (n: number) => T): T => {
    const out = make(capacity);
    out.set(column);
    return out;
  };
  layout.previous = widened(layout.previous, (n) => new Int32Array(n));
  layout.next = widened(layout.next, (n) => new Int32Array(n));
  layout.previousTurn = widened(layout.previousTurn, (n) => new Int32Array(n));
  layout.nextTurn = widened(layout.nextTurn, (n) => new Int32Array(n));
  layout.selfDotPrevious = widened(layout.selfDotPrevious, (n) => new Float64Array(n));
  layout.message = widened(layout.message, (n) => new Int32Array(n));
  layout.catchUpTurn = widened(layout.catchUpTurn, (n) => new Uint8Array(n));
  layout.text = widened(layout.text, (n) => new Int32Array(n));
  layout.row = widened(layout.row, (n) => new Int32Array(n));
}

/** Gives a unit the next slot, with its message and text ids (a key seen before keeps its id). */
function placeUnit(layout: SlotLayout, unit: CorpusUnit): void {
  const slot = layout.units.length;
  layout.slotOfSeq.set(unit.seq, slot);
  layout.units.push(unit);
  const key = unit.messageKey;
  if (key === null) {
    layout.message[slot] = -1;
  } else {
    let id = layout.messageIds.get(key);
    if (id === undefined) layout.messageIds.set(key, (id = layout.messageIds.size));
    layout.message[slot] = id;
  }
  let textId = layout.textIds.get(unit.textKey);
  if (textId === undefined) layout.textIds.set(unit.textKey, (textId = layout.textIds.size));
  layout.text[slot] = textId;
  layout.messageCount = layout.messageIds.size;
  layout.textCount = layout.textIds.size;
}

/** 1 for a unit of the first two turns of its session (see `timeCue`); its own and its previous turn's links must be set. */
function setCatchUp(layout: SlotLayout, slot: number): void {
  const before = layout.previousTurn[slot];
  layout.catchUpTurn[slot] = layout.units[slot].sessionId !== null && (before < 0 || layout.previousTurn[before] < 0) ? 1 : 0;
}

/** The slots of the units passing a filter, in slot order. */
export function matchingSlots(layout: SlotLayout, filter: (unit: CorpusUnit) => boolean): Int32Array {
  const slots = new Int32Array(layout.units.length);
  let count = 0;
  for (let slot = 0; slot < layout.units.length; slot++) if (filter(layout.units[slot])) slots[count++] = slot;
  return slots.subarray(0, count);
}

/** Slots 0..n-1: the candidates of a user scored exhaustively. */
export function everySlot(layout: SlotLayout): Int32Array {
  const slots = new Int32Array(layout.units.length);
  for (let slot = 0; slot < slots.length; slot++) slots[slot] = slot;
  return slots;
}
