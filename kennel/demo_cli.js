#!/usr/bin/env node
// The demo harness's stand-in coding CLI, for the Docker kennel: the image has Node, not
// the host's Python. Same behaviour and output as harnesses/demo_cli.py (one JSON event
// per line); tests/kennel_image checks the two agree.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPOS = {
  teh: 'the', helo: 'hello', wrold: 'world', recieve: 'receive',
  seperate: 'separate', occured: 'occurred', adn: 'and', definately: 'definitely',
  untill: 'until', wich: 'which', becuase: 'because', thier: 'their',
  accomodate: 'accommodate', enviroment: 'environment', langauge: 'language',
};
const WORD = new RegExp('\\b(' + Object.keys(TYPOS).join('|') + ')\\b', 'gi');

function emit(type, text) {
  process.stdout.write(JSON.stringify({ type, text }) + '\n');
}

function fix(word) {
  const fixed = TYPOS[word.toLowerCase()];
  return word[0] === word[0].toUpperCase() && word[0] !== word[0].toLowerCase()
    ? fixed[0].toUpperCase() + fixed.slice(1) : fixed;
}

function isFile(p) {
  try { return fs.statSync(p).isFile(); } catch { return false; }
}

function inside(root, p) {
  let real;
  try { real = fs.realpathSync(p); } catch { return false; }
  return real.startsWith(root + path.sep);
}

const MEMBER = /^# Fetch pack member: (\S+)/m;

// The pack member named by the user-level instructions (harnesses/instructions.py).
function member() {
  let text;
  try {
    text = fs.readFileSync(path.join(process.env.HOME || '/nonexistent', 'fetch-instructions.md'), 'utf8');
  } catch { return ''; }
  const found = MEMBER.exec(text);
  return found ? `${found[1]}: ` : '';
}

function main(prompt) {
  const root = fs.realpathSync(process.cwd());
  const named = (prompt.match(/[\w./-]+\.\w+/g) || []).map((t) => path.join(root, t));
  let targets = named.filter((p) => isFile(p) && inside(root, p));
  if (targets.length === 0) targets = [path.join(root, 'README.md')].filter(isFile);
  if (targets.length === 0) {
    emit('error', "demo harness: name a file to fix, e.g. 'fix the typo in README.md'");
    return 0;
  }
  let changed = 0;
  for (const p of targets) {
    emit('tool_use', `Read ${path.basename(p)}`);
    const text = fs.readFileSync(p, 'utf8');
    let count = 0;
    const fixed = text.replace(WORD, (w) => { count += 1; return fix(w); });
    if (count) {
      fs.writeFileSync(p, fixed, 'utf8');
      emit('file_change', path.basename(p));
      changed += count;
    }
  }
  const names = targets.map((p) => path.basename(p)).join(', ');
  const who = member();
  emit('done', changed ? `${who}Fixed ${changed} typo(s) in ${names}.`
    : `${who}No typos I know of in ${names}.`);
  return 0;
}

process.exitCode = main(process.argv.slice(2).join(' '));
