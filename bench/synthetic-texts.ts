/** Deterministic made-up memory texts and the median, shared by the search benchmarks. */
const WORDS = 'deploy key rotated berlin office meeting budget release checklist invoice kettle lantern harbour violin garden train ticket doctor visit coffee tea birthday gift project deadline review server database backup password vacation flight hotel dinner recipe'.split(' ');

/** A reproducible random source (a linear congruential generator): the same seed, the same data. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

export function sentence(random: () => number, words: number): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
}

export function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
