#!/usr/bin/env node
// TCP-to-unix-socket forwarder for the kennel.
//
// Inside a --network none container only loopback exists. A CLI that takes
// only a base URL (http://127.0.0.1:PORT) reaches the host's model relay,
// which listens on a unix socket in a mounted folder, through this:
//
//   node /opt/kennel/forwarder.js --listen 127.0.0.1:4100 --socket /relay/relay.sock
//   node forwarder.js --listen 127.0.0.1:4100 --socket /relay/a.sock \
//                     --listen 127.0.0.1:4101 --socket /relay/b.sock
//
// Pairs are matched in order (the i-th --listen goes to the i-th --socket);
// a single --socket serves every --listen. --listen takes HOST:PORT or PORT
// (host 127.0.0.1); port 0 picks a free port. Once every listener is up it
// prints one line `ready` on stdout (details go to stderr). SIGTERM, SIGINT
// or SIGHUP close everything and exit 0. No dependencies beyond Node >= 18.
'use strict';

const net = require('node:net');

const USAGE =
  'usage: forwarder.js --listen [HOST:]PORT --socket PATH [--listen ... --socket ...] [--quiet]\n';

function fail(message) {
  process.stderr.write(`forwarder: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const listens = [];
  const sockets = [];
  let quiet = false;
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const next = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) fail(`${arg} needs a value\n${USAGE}`);
      return argv[++i];
    };
    switch (arg) {
      case '--listen':
      case '-l':
        listens.push(parseListen(next()));
        break;
      case '--socket':
      case '-s':
        sockets.push(next());
        break;
      case '--quiet':
      case '-q':
        quiet = true;
        break;
      case '--help':
      case '-h':
        process.stdout.write(USAGE);
        process.exit(0);
        break;
      default:
        fail(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
    }
  }
  if (listens.length === 0 || sockets.length === 0) fail(`need --listen and --socket\n${USAGE}`);
  if (sockets.length !== 1 && sockets.length !== listens.length) {
    fail(`${listens.length} --listen but ${sockets.length} --socket: give one socket, or one per listen`);
  }
  const pairs = listens.map((l, i) => ({ ...l, socket: sockets.length === 1 ? sockets[0] : sockets[i] }));
  return { pairs, quiet };
}

function parseListen(text) {
  let host = '127.0.0.1';
  let portText = text;
  const colon = text.lastIndexOf(':');
  if (colon >= 0) {
    host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
    portText = text.slice(colon + 1);
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) fail(`bad --listen ${JSON.stringify(text)}`);
  return { host, port };
}

function main() {
  const { pairs, quiet } = parseArgs(process.argv.slice(2));
  const log = quiet ? () => {} : (msg) => process.stderr.write(`forwarder: ${msg}\n`);
  const servers = [];
  const conns = new Set();
  let closing = false;

  function forward(client, socketPath) {
    // allowHalfOpen: a client that ends its request half (HTTP/1.0 style)
    // still gets the whole answer.
    const upstream = net.connect({ path: socketPath, allowHalfOpen: true });
    conns.add(client);
    conns.add(upstream);
    let done = false;
    const close = (err) => {
      if (err && !done) log(`${socketPath}: ${err.code || err.message}`);
      done = true;
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', () => {
      conns.delete(client);
      if (!upstream.writableEnded) upstream.end();
    });
    upstream.on('close', () => {
      conns.delete(upstream);
      if (!client.writableEnded) client.end();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  }

  function shutdown(signal) {
    if (closing) return;
    closing = true;
    log(`${signal}: closing`);
    for (const s of servers) s.close();
    for (const c of conns) c.destroy();
    // stdout may be a pipe: let it drain, then go.
    process.stdout.write('', () => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  }
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => shutdown(sig));
  process.stdout.on('error', () => {}); // a closed stdout must not kill the forwarder

  let pending = pairs.length;
  for (const pair of pairs) {
    const server = net.createServer({ allowHalfOpen: true }, (client) => forward(client, pair.socket));
    servers.push(server);
    server.on('error', (err) => {
      process.stderr.write(`forwarder: listen ${pair.host}:${pair.port}: ${err.code || err.message}\n`);
      process.exit(1);
    });
    server.listen({ host: pair.host, port: pair.port }, () => {
      const addr = server.address();
      log(`listening ${addr.address}:${addr.port} -> ${pair.socket}`);
      if (--pending === 0) process.stdout.write('ready\n');
    });
  }
}

main();
