// Reads ITF traces with Quint's own reader (the npm package @informalsystems/quint).
//
// Usage: node tools/quint/check_itf.cjs [--self-test] PATH...   (files, or folders searched
// for *.itf.json). `make itf-check` runs it on every counterexample the model writes.
//
// For each trace it checks what the ITF format asks of a trace (vars is a list of names, every
// state carries exactly those variables and its index), then that Quint reads it: `ofItfNormalized`
// turns each state into Quint values (it throws on what it cannot read) and `toItf` writes them
// back. The written-back states must equal ours: then our trace is already in Quint's normal
// form (sets and maps in its order, integers as #bigint) and nothing was lost on the way.
// --self-test first breaks a good trace in four ways and fails unless each is caught.
'use strict';
const fs = require('fs');
const path = require('path');
const { ofItfNormalized, toItf } = require('@informalsystems/quint/dist/src/itf');

function problems(itf) {
  const out = [];
  if (!Array.isArray(itf.vars) || !itf.vars.every(v => typeof v === 'string')) {
    return ['vars: not a list of names'];
  }
  if (!Array.isArray(itf.states) || itf.states.length === 0) return ['states: none'];
  const want = [...itf.vars].sort().join(',');
  itf.states.forEach((s, i) => {
    const have = Object.keys(s).filter(k => k !== '#meta').sort().join(',');
    if (have !== want) out.push(`states[${i}]: variables {${have}}, vars says {${want}}`);
    if (!s['#meta'] || s['#meta'].index !== i) out.push(`states[${i}]: #meta.index is not ${i}`);
  });
  if (out.length) return out;
  let states;
  try {
    states = ofItfNormalized(itf);
  } catch (e) {
    return [`Quint cannot read it: ${e.message}`];
  }
  const back = toItf(itf.vars, states);
  if (back.isLeft()) return [`Quint cannot write it back: ${back.value}`];
  const strip = s => Object.fromEntries(Object.entries(s).filter(([k]) => k !== '#meta'));
  itf.states.forEach((s, i) => {
    const a = JSON.stringify(strip(s));
    const b = JSON.stringify(strip(back.value.states[i]));
    if (a !== b) {
      let j = 0;
      while (a[j] === b[j]) j++;
      out.push(`states[${i}]: Quint reads it back differently near ${JSON.stringify(a.slice(Math.max(0, j - 40), j + 40))}`);
    }
  });
  return out;
}

function traces(p) {
  if (fs.statSync(p).isDirectory()) {
    return fs.readdirSync(p).sort().flatMap(f => traces(path.join(p, f)));
  }
  return p.endsWith('.itf.json') ? [p] : [];
}

function selfTest(file) {
  const good = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (problems(good).length) throw new Error(`self-test: ${file} is not a good trace to start from`);
  const last = good.states.length - 1;
  const breakages = {
    'an integer that is not one': t => { t.states[last].restarts = { '#bigint': '1.5' }; },
    'a set that holds one element twice': t => { t.states[last].violated = { '#set': ['P1', 'P1'] }; },
    'a state without a variable': t => { delete t.states[last].turns; },
    'a state index out of order': t => { t.states[last]['#meta'].index = 0; },
  };
  const missed = [];
  for (const [what, breakIt] of Object.entries(breakages)) {
    const t = JSON.parse(JSON.stringify(good));
    breakIt(t);
    if (!problems(t).length) missed.push(what);
  }
  if (missed.length) {
    console.error(`self-test FAILED: not caught: ${missed.join('; ')}`);
    process.exit(1);
  }
  console.log(`self-test: ${Object.keys(breakages).length} broken copies of ${file}, each caught`);
}

function main(argv) {
  const self = argv.includes('--self-test');
  const roots = argv.filter(a => a !== '--self-test');
  if (!roots.length) {
    console.error('usage: node tools/quint/check_itf.cjs [--self-test] PATH...');
    process.exit(2);
  }
  for (const r of roots) {
    if (!fs.existsSync(r)) {
      console.error(`check_itf: ${r}: no such file or folder`);
      process.exit(2);
    }
  }
  const files = roots.flatMap(traces);
  if (!files.length) {
    console.error(`check_itf: no *.itf.json under ${roots.join(', ')}`);
    process.exit(2);
  }
  if (self) selfTest(files[0]);
  let bad = 0;
  let states = 0;
  for (const f of files) {
    let found;
    try {
      const itf = JSON.parse(fs.readFileSync(f, 'utf8'));
      found = problems(itf);
      states += itf.states.length;
    } catch (e) {
      found = [`not JSON: ${e.message}`];
    }
    if (found.length) {
      bad += 1;
      console.log(`FAIL ${f}`);
      for (const p of found.slice(0, 5)) console.log(`     ${p}`);
    }
  }
  const version = require('@informalsystems/quint/package.json').version;
  console.log(`Quint ${version} read ${files.length - bad} of ${files.length} ITF traces (${states} states) and wrote each back unchanged`);
  process.exit(bad ? 1 : 0);
}

main(process.argv.slice(2));
