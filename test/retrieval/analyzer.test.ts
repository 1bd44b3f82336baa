import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import winkNLP, { type ItsFunction } from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import { analyze, splitSentences, ANALYZER_VERSION, WINK_STOP_WORDS_WITHOUT_MAY } from '../../src/retrieval/analyzer.js';
import { assertBuilt, COMPILED_MAIN } from '../support/compiled.js';

describe('analyze', () => {
  it('lowercases, stems, and drops stop words and punctuation', () => {
    expect(analyze('The Quick, brown foxes were JUMPING!!!')).toEqual(['quick', 'brown', 'fox', 'jump']);
  });

  it('gives inflections of a word the same stem', () => {
    const [running, runs, run] = ['running', 'runs', 'run'].map((word) => analyze(word));
    expect(running).toEqual(['run']);
    expect(runs).toEqual(['run']);
    expect(run).toEqual(['run']);
  });

  it('keeps repeats and order so callers can count term frequency', () => {
    expect(analyze('pottery class, then more pottery')).toEqual(['potteri', 'class', 'potteri']);
  });

  it('returns nothing for empty, blank, punctuation-only or stop-word-only text', () => {
    expect(analyze('')).toEqual([]);
    expect(analyze('   \n\t ')).toEqual([]);
    expect(analyze('?! ... :) 😀 — ❤️')).toEqual([]);
    expect(analyze('and the of it was')).toEqual([]);
  });

  it('keeps numbers verbatim instead of letting Porter2 mangle them', () => {
    expect(analyze('In 2023 she ran 3.5 km')).toEqual(['2023', 'ran', '3.5', 'km']);
    expect(analyze('at 13:56 on 5/12 or 2022-05-08')).toEqual(['13:56', '5/12', '2022-05-08']);
    expect(analyze('the 1990s, the 3rd and the 22nd')).toEqual(['1990s', '3rd', '22nd']);
  });

  it('keeps a decimal time in one piece, however am/pm is written', () => {
    expect(analyze('at 3.5pm')).toEqual(['3.5']);
    expect(analyze('at 3.5 pm')).toEqual(['3.5']);
    expect(analyze('at 3.5 p.m.')).toEqual(['3.5']);
    expect(analyze('1:56 pm on 8 May, 2023')).toEqual(['1:56', '8', 'may', '2023']);
  });

  it('splits numbers from glued units and normalises thousands separators', () => {
    expect(analyze('2.5km and 100k')).toEqual(['2.5', 'km', '100', 'k']);
    expect(analyze('$5,000 or 1,2,3')).toEqual(['5000', '1', '2', '3']);
    expect(analyze("the '90s and 90's")).toEqual(['90s', '90s']);
  });

  it('keeps tokens that mix letters and digits verbatim', () => {
    expect(analyze('Q3 with v2.0 and mp3s')).toEqual(['q3', 'v2.0', 'mp3s']);
    expect(analyze('covid-19')).toEqual(['covid', '19']);
  });

  it('keeps "May" the month and drops "may" the modal', () => {
    expect(analyze('We met on 8 May 2023')).toEqual(['met', '8', 'may', '2023']);
    expect(analyze('What did she do in May?')).toEqual(['may']);
    expect(analyze('what did she do in may?')).toEqual(['may']);
    expect(analyze('May was lovely')).toEqual(['may', 'love']);
    expect(analyze('She may come')).toEqual(['come']);
    expect(analyze('May I ask something?')).toEqual(['ask']);
    expect(analyze('This may be hard')).toEqual(['hard']);
    expect(analyze('May 5')).toEqual(['may', '5']);
  });

  it('keeps other month names, which wink does not treat as stop words', () => {
    expect(analyze('January June July August March')).toEqual(['januari', 'june', 'juli', 'august', 'march']);
  });

  it('maps month and weekday abbreviations to the full name only in a date context', () => {
    expect(analyze('Jan 5')).toEqual(analyze('January 5'));
    expect(analyze('in Sept')).toEqual(analyze('September'));
    expect(analyze('2023/05/23 (Tue) 06:47')).toEqual(['2023/05/23', 'tuesday', '06:47']);
    expect(analyze('Jan said hi')).toEqual(['jan', 'said', 'hi']);
    expect(analyze('I sat in the sun')).toEqual(['sat', 'sun']);
  });

  it('drops clitics and contractions of stop words', () => {
    expect(analyze("I'm sure you're fine, don't worry")).toEqual(['sure', 'fine', 'worri']);
    expect(analyze("can't won't shouldn't've I'd've")).toEqual([]);
    expect(analyze("Caroline's and Caroline’s")).toEqual(['carolin', 'carolin']);
    expect(analyze("needn't")).toEqual(['need']);
  });

  it('treats an apostrophe without a clitic as spelling', () => {
    expect(analyze("five o'clock")).toEqual(['oclock']);
  });

  it('splits hyphenated words and dotted acronyms lose their dots', () => {
    expect(analyze('self-care')).toEqual(['self', 'care']);
    expect(analyze('e.g. the U.S.A.')).toEqual(['eg', 'usa']);
  });

  it('keeps hashtag and mention words, and URLs and addresses verbatim', () => {
    expect(analyze('#LGBTQ @Mel')).toEqual(['lgbtq', 'mel']);
    expect(analyze('Mail Jo@Example.com or see https://example.com/a?b=1.')).toEqual([
      'mail',
      'jo@example.com',
      'https://example.com/a?b=1',
    ]);
  });

  it('treats words that are Object.prototype properties as ordinary words', () => {
    expect(analyze('constructor toString')).toEqual(['constructor', 'tostr']);
  });

  it('gives the same terms for a token whatever context it was first seen in', () => {
    const first = analyze('She may come in May');
    const again = analyze('She may come in May');
    expect(again).toEqual(first);
    expect(first).toEqual(['come', 'may']);
  });

  it('uses wink-nlp Porter2 stems and stop words', () => {
    const nlp = winkNLP(model, []);
    const words = ['running', 'economy', 'quoted', 'studies', 'generously', 'caroline', 'powerful'];
    const doc = nlp.readDoc(words.join(' '));
    // wink's declarations type its.stem with a signature its own out() does not accept.
    const stem = nlp.its.stem as unknown as ItsFunction<string>;
    const winkStems = doc.tokens().out(stem) as string[];
    expect(words.flatMap((word) => analyze(word))).toEqual(winkStems);
  });

  it("loads wink's model only to split sentences: a process that analyzes and searches never does", async () => {
    await assertBuilt();
    const analyzer = pathToFileURL(path.join(path.dirname(COMPILED_MAIN), 'retrieval/analyzer.js')).href;
    // In a process of its own, whose module cache no other test has filled.
    const probe = `
      import { createRequire } from 'node:module';
      const { analyze, splitSentences } = await import(${JSON.stringify(analyzer)});
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((file) => file.endsWith('wink-eng-lite-web-model/dist/model.js'));
      const terms = analyze('Caroline went running with her studies');
      const before = loaded();
      const sentences = splitSentences('One sentence. And another one!');
      console.log(JSON.stringify({ terms, before, sentences, after: loaded() }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toEqual({ terms: ['carolin', 'went', 'run', 'studi'], before: false, sentences: ['One sentence.', 'And another one!'], after: true });
  });

  it('has a version string for index caches', () => {
    expect(ANALYZER_VERSION).toMatch(/\S/);
  });

  it('analyzes 20k chat turns quickly', () => {
    const texts = Array.from(
      { length: 20_000 },
      (_, i) => `[${1 + (i % 28)} May, 2023] Caroline: I went to a support group #${i} yesterday at 3.5pm and it was so powerful!`,
    );
    const started = performance.now();
    for (const text of texts) analyze(text);
    // Measured at about 0.2 s on two loaded cores; the bound only catches an order-of-magnitude slip.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('stop words', () => {
  it('match what wink-nlp flags across the whole model lexicon, except "may"', () => {
    const nlp = winkNLP(model, []);
    const core = (model.core as unknown as () => { features: { lexeme: { list: string[]; intrinsicSize: number } } })();
    const lexicon = core.features.lexeme.list.slice(0, core.features.lexeme.intrinsicSize);
    const words = [...new Set(lexicon.map((word) => word.toLowerCase()).filter((word) => /^[a-z]+$/.test(word)))];
    const doc = nlp.readDoc(words.join(' '));
    const values = doc.tokens().out() as string[];
    const flags = doc.tokens().out(nlp.its.stopWordFlag) as unknown as boolean[];
    const winkStopWords = new Set(values.filter((_, i) => flags[i]));
    winkStopWords.delete('may');
    expect([...WINK_STOP_WORDS_WITHOUT_MAY].sort()).toEqual([...winkStopWords].sort());
  });
});

describe('splitSentences', () => {
  it('splits on sentence boundaries and trims', () => {
    expect(splitSentences('  Hi there!  How are you?   Fine.  ')).toEqual(['Hi there!', 'How are you?', 'Fine.']);
  });

  it('rejoins a sentence wink splits inside a decimal number', () => {
    expect(splitSentences('We met at 3.5pm yesterday. It was fun!')).toEqual([
      'We met at 3.5pm yesterday.',
      'It was fun!',
    ]);
  });

  it('keeps a real boundary between a number and the next sentence', () => {
    expect(splitSentences('I was born in 1990. 5 years later we moved.')).toEqual([
      'I was born in 1990.',
      '5 years later we moved.',
    ]);
  });

  it('leaves abbreviations and version numbers alone', () => {
    expect(splitSentences('Dr. Smith came too. Version 2.0 is out. I paid $3.50 for it.')).toEqual([
      'Dr. Smith came too.',
      'Version 2.0 is out.',
      'I paid $3.50 for it.',
    ]);
  });

  it('never returns empty strings', () => {
    expect(splitSentences('')).toEqual([]);
    expect(splitSentences(' \n\n ')).toEqual([]);
    for (const text of ['ok', 'Hello\n\nworld. New para\nline two', '... !!! ???', 'a. b. c.']) {
      const sentences = splitSentences(text);
      expect(sentences.length).toBeGreaterThan(0);
      for (const sentence of sentences) expect(sentence.trim()).toBe(sentence);
      for (const sentence of sentences) expect(sentence).not.toBe('');
    }
  });
});
