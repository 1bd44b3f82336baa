import { analyze } from './analyzer.js';
import type { QueryText } from './corpus/corpus-types.js';
import type { Synset, WordNetReader } from './lexicon/wordnet-reader.js';

/**
 * A query's words widened through WordNet into the BM25 side: a question's words are often not
 * the turn's ("canine" for "dog", "painter" for "paint", "clayware" for "pottery"), and no
 * stronger encoder is installable here to bridge them. Each content word's first sense gives its
 * synonyms and derivationally related forms, and its direct hypernyms; their terms join the query
 * after its own, each at a weight below 1 (its idf's multiplier), so the words the query said
 * always count most and a common expansion (low idf) counts for little.
 */

export interface ExpansionWeights {
  /** Weight of synonyms and derivations (0 = none). */
  expansionWeight: number;
  /** Weight of direct hypernyms (0 = none). */
  hypernymWeight: number;
}

/** Senses of each query word followed, most frequent first: later senses are mostly other meanings. */
const SENSES_FOLLOWED = 1;
/** Words of fewer letters are left alone: "go", "do", "art" have too many unrelated senses. */
const MIN_WORD_LENGTH = 4;
const WORD = /\p{L}+(?:['’]\p{L}+)?/gu;
/** Words whose expansion terms are kept (a query's words repeat across questions); cleared when full. */
const CACHED_WORDS = 20_000;

export interface RelatedWords {
  /** Synonyms and derivations. */
  close: string[];
  hypernyms: string[];
}

/** The single-word lemmas WordNet relates to a word (lowercase), the word itself excluded. */
export function relatedWords(reader: WordNetReader, word: string): RelatedWords {
  const close = new Set<string>();
  const hypernyms = new Set<string>();
  for (const { pos, lemma } of reader.lookup(word)) {
    for (const offset of reader.senses(lemma, pos).slice(0, SENSES_FOLLOWED)) {
      const synset = reader.synset(pos, offset);
      const position = synset.words.indexOf(lemma) + 1;
      for (const synonym of synset.words) close.add(synonym);
      for (const pointer of synset.pointers) {
        // A lexical pointer (source > 0) belongs to one word of the synset: follow only the lemma's own.
        if (pointer.source !== 0 && pointer.source !== position) continue;
        if (pointer.symbol === '+') addTargets(close, reader.synset(pointer.pos, pointer.offset), pointer.target);
        else if (pointer.symbol === '@' || pointer.symbol === '@i') addTargets(hypernyms, reader.synset(pointer.pos, pointer.offset), 0);
      }
    }
  }
  const single = (words: Set<string>) => [...words].filter((w) => w !== word && !w.includes(' ') && !w.includes('-'));
  return { close: single(close), hypernyms: single(hypernyms).filter((w) => !close.has(w)) };
}

function addTargets(into: Set<string>, synset: Synset, target: number): void {
  if (target > 0) {
    const word = synset.words[target - 1];
    if (word !== undefined) into.add(word);
  } else {
    for (const word of synset.words) into.add(word);
  }
}

interface RelatedTerms {
  close: readonly string[];
  hypernyms: readonly string[];
}

const NOTHING: RelatedTerms = Object.freeze({ close: [], hypernyms: [] });
const termsByReader = new WeakMap<WordNetReader, Map<string, RelatedTerms>>();

/**
 * A query token's related words as index terms, kept per reader and token (a query's words repeat
 * across questions): NOTHING for a token left alone (short, a stop word, a name after the first word).
 */
function relatedTerms(reader: WordNetReader, token: string, first: boolean): RelatedTerms {
  let cache = termsByReader.get(reader);
  if (!cache) termsByReader.set(reader, (cache = new Map()));
  const key = first ? token.toLowerCase() : token;
  const known = cache.get(key);
  if (known) return known;
  let terms = NOTHING;
  const word = token.toLowerCase();
  const name = !first && token !== word && token[0] !== word[0];
  if (!name && word.length >= MIN_WORD_LENGTH && analyze(word).length > 0) {
    const related = relatedWords(reader, word);
    terms = { close: related.close.flatMap((w) => analyze(w)), hypernyms: related.hypernyms.flatMap((w) => analyze(w)) };
  }
  if (cache.size >= CACHED_WORDS) cache.clear();
  cache.set(key, terms);
  return terms;
}

/**
 * The query's terms followed by its expansion terms, with their weights; the query text unchanged
 * (no weights at all) when both weights are 0 or no word expands. Capitalised words after the
 * first are left alone: they are names, and WordNet's senses of "Rose" or "Max" are not the person's.
 * Expansion terms most units hold are left out by the index itself (`EXPANSION_MAX_SHARE`).
 */
export function expandQuery(text: string, own: QueryText, reader: WordNetReader, weights: ExpansionWeights): QueryText {
  if (weights.expansionWeight <= 0 && weights.hypernymWeight <= 0) return own;
  const tokens = text.match(WORD);
  if (tokens === null) return own;
  let terms: string[] | undefined;
  let termWeights: number[] | undefined;
  let seen: Set<string> | undefined;
  const add = (related: readonly string[], weight: number) => {
    if (weight <= 0) return;
    for (const term of related) {
      if (!seen) {
        seen = new Set(own.terms);
        terms = [...own.terms];
        termWeights = own.terms.map(() => 1);
      }
      if (seen.has(term)) continue;
      seen.add(term);
      terms!.push(term);
      termWeights!.push(weight);
    }
  };
  for (let i = 0; i < tokens.length; i++) {
    const related = relatedTerms(reader, tokens[i]!, i === 0);
    if (related === NOTHING) continue;
    add(related.close, weights.expansionWeight);
    add(related.hypernyms, weights.hypernymWeight);
  }
  return terms === undefined || terms.length === own.terms.length ? own : { terms, termWeights };
}
