/**
 * A tiny LoCoMo-shaped conversation for the eval tests: six facts in session 1, small talk in
 * session 2, so each question points at one obvious turn. Each test brings its own questions.
 */
export function tinyLocomo(qa: readonly unknown[], sampleId = 'conv-t'): unknown {
  const facts = [
    ['Caroline', 'I went to the LGBTQ support group yesterday and it was powerful.'],
    ['Melanie', 'We camped by the lake and watched the meteor shower.'],
    ['Caroline', 'I am researching adoption agencies for my future family.'],
    ['Melanie', 'My kids love painting pottery at the studio.'],
    ['Caroline', 'I started learning the violin last month.'],
    ['Melanie', 'Our dog Luna chewed my running shoes.'],
  ];
  const session = (n: number) =>
    facts.map(([speaker, text], i) => ({ speaker, dia_id: `D${n}:${i + 1}`, text: n === 1 ? text : `Small talk ${n} ${i}: how was your week?` }));
  return [
    {
      sample_id: sampleId,
      conversation: {
        speaker_a: 'Caroline',
        speaker_b: 'Melanie',
        session_1_date_time: '1:56 pm on 8 May, 2023',
        session_1: session(1),
        session_2_date_time: '2:00 pm on 20 May, 2023',
        session_2: session(2),
      },
      qa,
    },
  ];
}
