/** Everyday sentences of a few lengths, the same for every encoder bench, so their figures compare. */
const SUBJECTS = ['My brother', 'The new manager', 'Alice', 'Our neighbour', 'The kids', 'I', 'We', 'My grandmother'];
const VERBS = ['really enjoys', 'hates', 'is planning', 'just started', 'keeps forgetting about', 'talked about'];
const OBJECTS = ['running marathons', 'the trip to Japan', 'baking sourdough bread', 'learning Spanish', 'the quarterly report', 'a new job offer'];

export function sentence(i: number): string {
  return `${SUBJECTS[i % SUBJECTS.length]} ${VERBS[(i * 7) % VERBS.length]} ${OBJECTS[(i * 13) % OBJECTS.length]} (${i}).`;
}

export function paragraph(i: number): string {
  return Array.from({ length: 4 }, (_, k) => sentence(i * 4 + k)).join(' ');
}
